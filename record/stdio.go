package record

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tapedeck/tapedeck/tape"
)

// Default shutdown timings of a Stdio shim.
const (
	DefaultGrace     = 2 * time.Second
	DefaultKillAfter = 2 * time.Second
	// drainTimeout bounds the wait for the server's output pipes to close
	// once it has exited (a grandchild may hold them open).
	drainTimeout = 500 * time.Millisecond
)

// Stdio records a stdio MCP session: it runs the server Command, relays the
// client's stdin to it and its stdout back, byte for byte, and writes every
// message to Tape before forwarding it. It passes the server's stderr
// through, recording each line as $transport/stderr, and records stdout
// lines that are not JSON-RPC as $transport/invalid.
//
// Shutdown: when the client closes stdin (or ctx is done, or the client's
// stdout breaks), the server's stdin is closed; if the server is still
// running after Grace it gets SIGTERM, and after KillAfter more, SIGKILL.
// The server runs in its own process group, which is what the signals
// reach; on Linux it is also killed if the shim itself dies.
type Stdio struct {
	Command string
	Args    []string
	Dir     string   // working directory; empty means the shim's
	Env     []string // environment; nil means the shim's

	// Tape receives the tape's lines: every write is one or more whole
	// lines, made before the messages they hold are forwarded.
	Tape io.Writer
	// Server names the server in the tape; empty means
	// DefaultServerName(Command, Args).
	Server string
	// Redact, if set, redacts the tape's copy of each message.
	Redact *tape.Redactor
	// Version is written in $transport/start (tapedeck's version).
	Version string

	// Signals are forwarded to the server's process group as they arrive.
	Signals <-chan os.Signal
	// Grace and KillAfter time the shutdown; zero means the defaults.
	Grace, KillAfter time.Duration
	// Now stamps the messages; nil means time.Now.
	Now func() time.Time
}

// ExitStatus is how the server ended.
type ExitStatus struct {
	// Code is the exit code, or 128 plus the signal number when a signal
	// ended the server (the shell's convention), or -1 if it never ran.
	Code int
	// Signal is the signal that ended the server, or 0.
	Signal syscall.Signal
}

func (e ExitStatus) String() string {
	if e.Signal != 0 {
		return fmt.Sprintf("killed by %s", unix.SignalName(e.Signal))
	}
	return fmt.Sprintf("exit status %d", e.Code)
}

// Run starts the server and relays the session until the server exits and
// its output is drained. It returns the server's exit status; the error is
// about the recording (the server could not start, the tape could not be
// written), not about the server's status. A read of stdin in progress when
// the server exits is abandoned (an io.Reader cannot be interrupted).
func (s *Stdio) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (ExitStatus, error) {
	if s.Tape == nil {
		return ExitStatus{Code: -1}, errors.New("record: Stdio.Tape is nil")
	}
	dest := &tapeDest{w: s.Tape}
	server := s.Server
	if server == "" {
		server = DefaultServerName(s.Command, s.Args)
	}
	sk := newSink(tape.NewWriter(dest), server, s.Redact, s.Now)
	// Each relay batches the lines of a chunk into one tape write.
	sendBatch, recvBatch, errBatch := &lineBatch{dest: dest}, &lineBatch{dest: dest}, &lineBatch{dest: dest}
	sendSink := relaySink(sendBatch, tape.DirSend, server, s.Redact, s.Now)
	recvSink := relaySink(recvBatch, tape.DirRecv, server, s.Redact, s.Now)
	errSink := newSink(tape.NewWriter(errBatch), server, s.Redact, s.Now)
	grace, killAfter := s.Grace, s.KillAfter
	if grace <= 0 {
		grace = DefaultGrace
	}
	if killAfter <= 0 {
		killAfter = DefaultKillAfter
	}
	cwd := s.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	// Command lines carry secrets too (--api-key ...): value rules apply.
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = string(sk.redactText([]byte(a)))
	}
	startParams := map[string]any{
		"transport": "stdio", "command": s.Command, "args": args, "cwd": cwd,
		"version": s.Version,
	}

	growPipe(stdin)
	growPipe(stdout)
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.SysProcAttr = sysProcAttr()
	inR, inW, err1 := pipe()
	outR, outW, err2 := pipe()
	errR, errW, err3 := pipe()
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		return ExitStatus{Code: -1}, fmt.Errorf("record: pipes for the server: %w", err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	if err := cmd.Start(); err != nil {
		closeAll(inR, inW, outR, outW, errR, errW)
		startErr := fmt.Errorf("record: start server %s: %w", s.Command, err)
		startParams["error"] = err.Error()
		werr := errors.Join(sk.lifecycle(tape.MethodStart, startParams, nil),
			sk.lifecycle(tape.MethodClose, map[string]any{"error": err.Error()}, nil))
		return ExitStatus{Code: 127}, errors.Join(startErr, werr)
	}
	closeAll(inR, outW, errW) // the server holds its ends now
	pgid := cmd.Process.Pid
	startParams["pid"] = cmd.Process.Pid

	var (
		tapeErrMu sync.Mutex
		tapeErr   error
	)
	note := func(err error) {
		if err != nil {
			tapeErrMu.Lock()
			if tapeErr == nil {
				tapeErr = fmt.Errorf("record: write tape: %w", err)
			}
			tapeErrMu.Unlock()
		}
	}
	note(sk.lifecycle(tape.MethodStart, startParams, nil))

	var closeIn sync.Once
	closeServerStdin := func() { closeIn.Do(func() { inW.Close() }) }
	inputDone := make(chan struct{})  // the client closed stdin
	clientGone := make(chan struct{}) // the client's stdout broke
	var outputs sync.WaitGroup
	go func() {
		_ = relayLines(stdin, inW, func(line []byte) { note(sendSink.message(line, tape.DirSend, nil)) },
			func() { note(sendBatch.flush()) })
		closeServerStdin()
		close(inputDone)
	}()
	outputs.Add(2)
	go func() {
		defer outputs.Done()
		w := &watchedWriter{w: stdout, broken: func() { close(clientGone) }}
		_ = relayLines(outR, w, func(line []byte) { note(recvSink.message(line, tape.DirRecv, nil)) },
			func() { note(recvBatch.flush()) })
	}()
	go func() {
		defer outputs.Done()
		_ = relayLines(errR, stderr, func(line []byte) { note(errSink.stderr(line)) },
			func() { note(errBatch.flush()) })
	}()
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()

	// Shutdown escalates by timers once a reason to stop appears.
	var term, kill <-chan time.Time
	closeParamsAbandoned := false
	reason := ""
	stop := func(why string) {
		if reason != "" {
			return
		}
		reason = why
		closeServerStdin()
		term = time.After(grace)
	}
	signalGroup := func(sig syscall.Signal) {
		if err := syscall.Kill(-pgid, sig); err != nil {
			_ = cmd.Process.Signal(sig)
		}
	}
	done := ctx.Done()
	in, gone := (<-chan struct{})(inputDone), (<-chan struct{})(clientGone)
wait:
	for {
		select {
		case <-exited:
			break wait
		case sig := <-s.Signals:
			if ss, ok := sig.(syscall.Signal); ok {
				signalGroup(ss)
			}
		case <-in:
			in = nil
			stop("stdin closed")
		case <-gone:
			gone = nil
			stop("client stdout closed")
		case <-done:
			done = nil
			stop("cancelled")
		case <-term:
			term = nil
			signalGroup(syscall.SIGTERM)
			kill = time.After(killAfter)
		case <-kill:
			kill = nil
			signalGroup(syscall.SIGKILL)
		}
	}
	closeServerStdin()

	// The server is gone; its output pipes close unless a grandchild holds
	// them, which then goes the way of the server. One that left the
	// process group is given up on: its relays are abandoned.
	drained := make(chan struct{})
	go func() { outputs.Wait(); close(drained) }()
	select {
	case <-drained:
		closeAll(outR, errR)
	case <-time.After(drainTimeout):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-drained:
			closeAll(outR, errR)
		case <-time.After(drainTimeout):
			closeParamsAbandoned = true
		}
	}

	st := exitStatus(cmd.ProcessState)
	closeParams := map[string]any{"code": st.Code}
	if closeParamsAbandoned {
		closeParams["abandoned"] = "the server's output was still open after it exited"
	}
	if st.Signal != 0 {
		closeParams["signal"] = unix.SignalName(st.Signal)
	}
	if reason != "" {
		closeParams["reason"] = reason
	} else {
		closeParams["reason"] = "server exited"
	}
	var ee *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &ee) {
		closeParams["error"] = waitErr.Error()
	}
	note(sk.lifecycle(tape.MethodClose, closeParams, nil))
	tapeErrMu.Lock()
	defer tapeErrMu.Unlock()
	return st, tapeErr
}

func exitStatus(ps *os.ProcessState) ExitStatus {
	if ps == nil {
		return ExitStatus{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return ExitStatus{Code: 128 + int(ws.Signal()), Signal: ws.Signal()}
	}
	return ExitStatus{Code: ps.ExitCode()}
}

// watchedWriter calls broken once, on its first write error.
type watchedWriter struct {
	w      io.Writer
	broken func()
	failed bool
}

func (w *watchedWriter) Write(b []byte) (int, error) {
	n, err := w.w.Write(b)
	if err != nil && !w.failed {
		w.failed = true
		w.broken()
	}
	return n, err
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}

// isClosed reports an error from reading a pipe the shim closed itself.
func isClosed(err error) bool {
	return errors.Is(err, os.ErrClosed)
}
