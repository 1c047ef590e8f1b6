package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/tapedeck/tapedeck/internal/proc"
	"github.com/tapedeck/tapedeck/rules"
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
	// Rules, if set, may change, drop, delay or answer messages on their
	// way (fault injection); the tape records what they did.
	Rules *rules.Set
	// Logf, if not nil, receives the lines of rules' log actions.
	Logf func(string)
	// Intercept, if set, may hold messages for a person's decision (see
	// Interceptor).
	Intercept Interceptor
	// Shadow, if set, sends a copy of the client's messages to a second
	// server, recorded as a shadow lane and never forwarded (shadow.go).
	// Not with Rules or Intercept.
	Shadow *ShadowOptions

	runMu sync.Mutex
	run   *injector // while Run runs: what Send writes with
	// Version is written in $transport/start (tapedeck's version).
	Version string

	// Signals are forwarded to the server's process group as they arrive.
	Signals <-chan os.Signal
	// Grace and KillAfter time the shutdown; zero means the defaults.
	Grace, KillAfter time.Duration
	// Now stamps the messages; nil means time.Now.
	Now func() time.Time
	// Warn, if not nil, is told of the first failure to write the tape (a
	// full disk), once: the relaying goes on, and the tape says later what
	// was lost.
	Warn func(error)
	// ReapOrphans makes the process adopt the server's orphaned
	// descendants (a grandchild that left the process group with setsid)
	// and kill them when the server has gone, on Linux. It concerns every
	// child of the process: set it only where the shim is the process's
	// one job (tapedeck record does).
	ReapOrphans bool

	stuckWrite time.Duration // tests: stuckWrite, shorter
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
//
// The steps: start the server (its pipes, its process group, the
// $transport/start record), relay the three streams, wait for the server
// to exit while escalating the shutdown, drain its output, and write the
// $transport/close record.
func (s *Stdio) Run(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) (ExitStatus, error) {
	if s.Tape == nil {
		return ExitStatus{Code: -1}, errors.New("record: Stdio.Tape is nil")
	}
	r := s.newRun()
	r.rec.dest.res = newReserver(s.Tape)
	defer r.rec.dest.res.release()
	if err := r.newShadow(); err != nil {
		return ExitStatus{Code: -1}, err
	}
	if st, err := r.start(stdin, stdout); err != nil {
		return st, err
	}
	r.shadow.begin()
	r.relay(stdin, stdout, stderr)
	r.wait(ctx, s.Signals)
	r.drain()
	r.waitHeld()
	if r.s.ReapOrphans {
		r.orphans = proc.KillOrphans()
	}
	r.shadow.close()
	r.close()
	return r.status, r.rec.Err()
}

// stdioRun is one Run of a Stdio shim, step by step.
type stdioRun struct {
	s           *Stdio
	rec         *recorder
	sk          *sink // lifecycle records
	grace, kill time.Duration
	startParams map[string]any
	proc        *proc.Process // the server, its pipes' ends
	inW         *os.File      // the server's stdin
	outR, errR  *os.File      // its stdout and stderr
	inputDone   chan struct{} // the client closed stdin
	// Under rules: inputEnded is closed when stdin was seen to end while a
	// delay rule held a message (the relay not done yet); ending when the
	// session ends (the grace period over, cancelled, the client or the
	// server gone), which cuts every delay short.
	inputEnded <-chan struct{}
	ending     chan struct{}
	endOnce    sync.Once
	holding    atomic.Int32  // messages a delay rule holds (ruleRelay.holding)
	clientGone chan struct{} // the client's stdout broke
	outputs    sync.WaitGroup
	exited     <-chan struct{} // the server was waited for
	client     *watchedWriter  // the client's stdout, watched
	orphans    int             // descendants left behind, killed (ReapOrphans)
	reason     string          // why the shim stopped the server, if it did
	abandoned  bool            // the server's output was still open after it exited
	status     ExitStatus
	// reading counts the output relays blocked reading the server's pipes:
	// once the server has gone, only a grandchild can hold them open.
	reading atomic.Int32
	stuck   time.Duration // stuckWrite, or a test's shorter bound
	shadow  *shadow       // nil: no shadow
}

func (s *Stdio) newRun() *stdioRun {
	server := s.Server
	if server == "" {
		server = DefaultServerName(s.Command, s.Args)
	}
	rec := newRecorder(s.Tape, server, s.Redact, s.Now)
	rec.dest.warn = s.Warn
	r := &stdioRun{s: s, rec: rec, sk: rec.direct(), grace: s.Grace, kill: s.KillAfter, client: &watchedWriter{},
		inputDone: make(chan struct{}), clientGone: make(chan struct{}), ending: make(chan struct{}),
		stuck: s.stuckWrite}
	if r.grace <= 0 {
		r.grace = DefaultGrace
	}
	if r.kill <= 0 {
		r.kill = DefaultKillAfter
	}
	if r.stuck <= 0 {
		r.stuck = stuckWrite
	}
	cwd := s.Dir
	if cwd == "" {
		cwd, _ = os.Getwd()
	}
	// Command lines carry secrets too (--api-key ...): value rules apply.
	args := make([]string, len(s.Args))
	for i, a := range s.Args {
		args[i] = string(rec.redactText([]byte(a)))
	}
	r.startParams = map[string]any{
		"transport": "stdio", "command": s.Command, "args": args, "cwd": cwd,
		"version": s.Version,
	}
	return r
}

// start starts the server in a process group of its own, on pipes, and
// writes $transport/start. A server that cannot start is recorded with
// $transport/start and $transport/close naming the error.
func (r *stdioRun) start(stdin io.Reader, stdout io.Writer) (ExitStatus, error) {
	if r.s.ReapOrphans {
		_ = proc.BecomeSubreaper() // best effort: without it, a setsid grandchild outlives the shim
	}
	proc.GrowPipe(stdin)
	proc.GrowPipe(stdout)
	p, err := proc.Start(proc.Spec{Command: r.s.Command, Args: r.s.Args, Dir: r.s.Dir, Env: r.s.Env, FastPipes: true})
	if errors.Is(err, proc.ErrPipes) {
		return ExitStatus{Code: -1}, fmt.Errorf("record: %w", err)
	}
	if err != nil {
		startErr := fmt.Errorf("record: start server %s: %w", r.s.Command, err)
		r.startParams["error"] = err.Error()
		werr := errors.Join(r.sk.lifecycle(tape.MethodStart, r.startParams, nil),
			r.sk.lifecycle(tape.MethodClose, map[string]any{"error": err.Error()}, nil))
		return ExitStatus{Code: 127}, errors.Join(startErr, werr)
	}
	r.proc, r.inW, r.outR, r.errR, r.exited = p, p.Stdin, p.Stdout, p.Stderr, p.Exited()
	r.startParams["pid"] = p.Pid()
	r.rec.note(r.sk.lifecycle(tape.MethodStart, r.startParams, nil))
	return ExitStatus{}, nil
}

func (r *stdioRun) closeServerStdin() { r.proc.CloseStdin() }

// relay copies the client's stdin to the server and the server's stdout
// and stderr back, each line on the tape before it is forwarded.
func (r *stdioRun) relay(stdin io.Reader, stdout, stderr io.Writer) {
	if r.s.Rules != nil || r.s.Intercept != nil {
		r.relayRules(stdin, stdout, stderr)
		return
	}
	note := r.rec.note
	sendSink, sendBatch := r.rec.stream(tape.DirSend)
	recvSink, recvBatch := r.rec.stream(tape.DirRecv)
	errBatch := &lineBatch{dest: r.rec.dest}
	errSink := &sink{rc: r.rec, w: tape.NewWriter(errBatch)}
	go func() {
		_ = relayLines(stdin, r.inW, func(line []byte) {
			note(sendSink.line(line, tape.DirSend))
			r.shadow.offer(shadowItem{msg: line})
		},
			func() { sendSink.endChunk(); note(sendBatch.flush()) }, r.oversize(tape.DirSend))
		r.closeServerStdin()
		close(r.inputDone)
	}()
	r.outputs.Add(2)
	go func() {
		defer r.outputs.Done()
		w := r.client
		w.w, w.broken = stdout, func() { close(r.clientGone) }
		_ = relayLines(r.watchRead(r.outR), w, func(line []byte) { note(recvSink.line(line, tape.DirRecv)) },
			func() { recvSink.endChunk(); note(recvBatch.flush()) }, r.oversize(tape.DirRecv))
	}()
	go func() {
		defer r.outputs.Done()
		_ = relayLines(r.watchRead(r.errR), stderr, func(line []byte) { note(errSink.stderr(line)) },
			func() { note(errBatch.flush()) }, r.oversize("stderr"))
	}()
}

// relayRules is relay under a rules file: each message goes through the
// rules before it is recorded and forwarded (see rules.go).
func (r *stdioRun) relayRules(stdin io.Reader, stdout, stderr io.Writer) {
	note := r.rec.note
	conn := r.s.Rules.Conn() // nil without rules: it lets everything by
	logf := r.s.Logf
	if logf == nil {
		logf = func(string) {}
	}
	w := r.client
	w.w, w.broken = stdout, func() { close(r.clientGone) }
	toServer, toClient := &lockedWriter{w: r.inW}, &lockedWriter{w: w}
	var cutOnce sync.Once
	cut := func() {
		cutOnce.Do(func() {
			logf("rules: disconnecting client and server")
			r.closeServerStdin()
			toClient.mu.Lock()
			toClient.w = io.Discard
			toClient.mu.Unlock()
			if c, ok := stdout.(io.Closer); ok {
				_ = c.Close()
			}
		})
	}
	sendSink, sendBatch := r.rec.stream(tape.DirSend)
	recvSink, recvBatch := r.rec.stream(tape.DirRecv)
	// A delay rule holds its message no longer than the session (see
	// wait): the client's input is read ahead meanwhile, to see it end.
	in := newAheadReader(stdin)
	r.inputEnded = in.eof
	send := &ruleRelay{conn: conn, dir: tape.DirSend, server: r.rec.server, sink: sendSink, batch: sendBatch,
		out: toServer, back: toClient, reply: r.rec.direct(), note: note, logf: logf, cut: cut, hold: holdUntil(r.ending, in), holding: &r.holding}
	recv := &ruleRelay{conn: conn, dir: tape.DirRecv, server: r.rec.server, sink: recvSink, batch: recvBatch,
		out: toClient, back: toServer, reply: r.rec.direct(), note: note, logf: logf, cut: cut, hold: holdUntil(r.ending, nil), holding: &r.holding}
	send.icpt, recv.icpt = r.s.Intercept, r.s.Intercept
	inj := &injector{rec: r.rec, toServer: toServer, toClient: toClient}
	r.s.runMu.Lock()
	r.s.run = inj
	r.s.runMu.Unlock()
	go func() {
		_ = relayOwnLines(in, toServer, send.line, send.flush, r.oversize(tape.DirSend))
		send.flush()
		r.closeServerStdin()
		close(r.inputDone)
	}()
	r.outputs.Add(2)
	go func() {
		defer r.outputs.Done()
		_ = relayOwnLines(r.watchRead(r.outR), toClient, recv.line, recv.flush, r.oversize(tape.DirRecv))
		recv.flush()
	}()
	errBatch := &lineBatch{dest: r.rec.dest}
	errSink := &sink{rc: r.rec, w: tape.NewWriter(errBatch)}
	go func() {
		defer r.outputs.Done()
		_ = relayLines(r.watchRead(r.errR), stderr, func(line []byte) { note(errSink.stderr(line)) },
			func() { note(errBatch.flush()) }, r.oversize("stderr"))
	}()
}

// oversize returns what records a line of direction from that was too long
// to hold back: its size and first bytes (value rules applied).
func (r *stdioRun) oversize(from tape.Dir) func(size int64, prefix []byte, ended bool) {
	return func(size int64, prefix []byte, ended bool) {
		r.rec.note(r.sk.lifecycle(tape.MethodOversize, map[string]any{
			"from": string(from), "size": size, "prefix": string(r.rec.redactText(prefix)), "ended": ended,
		}, nil))
	}
}

// wait forwards signals until the server exits. Once there is a reason to
// stop (the client closed stdin or its stdout broke, or ctx ended), the
// server's stdin is closed, and the shutdown escalates by timers: SIGTERM
// after the grace period, SIGKILL after KillAfter more.
func (r *stdioRun) wait(ctx context.Context, signals <-chan os.Signal) {
	var term, kill <-chan time.Time
	end := func() { r.endOnce.Do(func() { close(r.ending) }) }
	defer end()
	stop := func(why string) {
		if r.reason != "" {
			return
		}
		r.reason = why
		r.closeServerStdin()
		term = time.After(r.grace)
	}
	done := ctx.Done()
	in, gone := (<-chan struct{})(r.inputDone), (<-chan struct{})(r.clientGone)
	ended := r.inputEnded
	for {
		select {
		case <-r.exited:
			end()
			r.closeServerStdin()
			return
		case <-ended:
			// stdin ended while a rule holds a message: the grace period
			// starts, the server's stdin stays open for the message.
			ended = nil
			if r.reason == "" {
				r.reason = "stdin closed"
				term = time.After(r.grace)
			}
		case sig := <-signals:
			if ss, ok := sig.(syscall.Signal); ok {
				r.signalGroup(ss)
			}
		case <-in:
			in = nil
			stop("stdin closed")
		case <-gone:
			gone = nil
			end()
			stop("client stdout closed")
		case <-done:
			done = nil
			end()
			stop("cancelled")
		case <-term:
			term = nil
			end()
			r.signalGroup(syscall.SIGTERM)
			kill = time.After(r.kill)
		case <-kill:
			kill = nil
			r.signalGroup(syscall.SIGKILL)
		}
	}
}

// signalGroup signals the server's process group, or the server alone when
// the group is gone.
func (r *stdioRun) signalGroup(sig syscall.Signal) { r.proc.Signal(sig) }

// watchRead counts the time a relay spends blocked reading the server's
// pipe f in r.reading.
func (r *stdioRun) watchRead(f *os.File) io.Reader { return &watchedReader{f: f, n: &r.reading} }

type watchedReader struct {
	f *os.File
	n *atomic.Int32
}

func (w *watchedReader) Read(b []byte) (int, error) {
	w.n.Add(1)
	defer w.n.Add(-1)
	return w.f.Read(b)
}

// drain waits for the server's output to end. The server is gone; its
// output pipes close unless a grandchild holds them, which then goes the
// way of the server. Meanwhile the relay may still be recording and
// delivering what the server wrote to a client that reads slowly: that is
// waited for as long as the relay makes progress (stuckWrite without any
// means the client stopped reading; what it never got is then counted in
// the close record). Only a relay blocked reading a pipe that a grandchild
// outside the process group holds open, with nothing left to deliver, is
// given up on at once: abandoned.
func (r *stdioRun) drain() {
	drained := make(chan struct{})
	go func() { r.outputs.Wait(); close(drained) }()
	killed := false
	var last int64 = -1
	var stuckSince time.Time
	for {
		select {
		case <-drained:
			closeAll(r.outR, r.errR)
			return
		case <-time.After(drainTimeout):
		}
		writing, written := r.client.progress()
		blocked := !writing && r.reading.Load() > 0
		switch {
		case blocked && !killed:
			// Everything read so far is delivered, and a pipe is still
			// open: kill whatever of the group holds it.
			killed = true
			r.signalGroup(syscall.SIGKILL)
		case blocked:
			r.abandoned = true
			return
		case written != last:
			last, stuckSince = written, time.Time{}
			continue // the client is reading: let it have the rest
		case stuckSince.IsZero():
			// A write without progress, or a relay between reading and
			// writing (recording what it read).
			stuckSince = time.Now()
			continue
		case time.Since(stuckSince) < r.stuck:
			continue
		default:
			r.abandoned = true // the client stopped reading
			return
		}
	}
}

// waitHeld gives the messages a delay rule still held when the session
// ended a moment to be recorded as dropped, before the close record.
func (r *stdioRun) waitHeld() {
	for deadline := time.Now().Add(time.Second); r.holding.Load() > 0 && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
}

// stuckWrite is how long a write to the client may make no progress before
// the shim, its server gone, stops waiting for the client to read.
const stuckWrite = 30 * time.Second

// close writes $transport/close: the exit status, why the shim stopped
// the server, and what went wrong.
func (r *stdioRun) close() {
	r.status = exitStatus(r.proc.State())
	params := map[string]any{"code": r.status.Code}
	if r.abandoned {
		params["abandoned"] = "the server's output was still open after it exited, or the client stopped reading it"
	}
	if r.orphans > 0 {
		params["orphans_killed"] = r.orphans
	}
	if n, lines := r.client.undeliveredBytes(); n > 0 {
		// The tape holds these messages, but the client was not seen to
		// take them (a line cut short counts as not delivered; a write cut
		// short may have passed part of its last piece unseen).
		params["undelivered"] = n
		params["undelivered_lines"] = lines
	}
	if r.status.Signal != 0 {
		params["signal"] = unix.SignalName(r.status.Signal)
	}
	if r.reason != "" {
		params["reason"] = r.reason
	} else {
		params["reason"] = "server exited"
	}
	var ee *exec.ExitError
	if werr := r.proc.WaitErr(); werr != nil && !errors.As(werr, &ee) {
		params["error"] = werr.Error()
	}
	r.rec.note(r.sk.lifecycle(tape.MethodClose, params, nil))
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

// watchedWriter is the client's stdout as the relay sees it: it calls
// broken once, on the first write error, after which (that write included)
// it takes writes without writing them and counts them as undelivered; it
// tells drain whether a write is in progress and how much was written,
// piece by piece, so a slow client's progress shows within a long write.
// What a write in progress has not yet written counts as undelivered too:
// it is what the client lacks if the shim gives up on it.
type watchedWriter struct {
	w      io.Writer
	broken func()

	mu          sync.Mutex
	writing     bool
	written     int64
	failed      bool
	undelivered int64
	lines       int64  // lines in undelivered (one cut short counts)
	pending     []byte // what the write in progress has not written yet
}

// writePiece is how much of a write goes to the client at a time: a
// quarter of the 1 MiB pipe the shim asks for, so that the chunk of a
// client with 64 requests of 1 KiB in flight goes in one write(2).
const writePiece = 256 << 10

func (w *watchedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	if w.failed {
		w.undelivered += int64(len(b))
		w.lines += int64(bytes.Count(b, newline))
		w.mu.Unlock()
		return len(b), nil
	}
	w.writing, w.pending = true, b
	w.mu.Unlock()
	var err error
	for rest := b; len(rest) > 0 && err == nil; {
		var n int
		n, err = w.w.Write(rest[:min(len(rest), writePiece)])
		rest = rest[n:]
		w.mu.Lock()
		w.written += int64(n)
		w.pending = rest
		w.mu.Unlock()
	}
	w.mu.Lock()
	first := err != nil && !w.failed
	if err != nil {
		w.failed = true
		w.undelivered += int64(len(w.pending))
		w.lines += int64(bytes.Count(w.pending, newline))
	}
	w.writing, w.pending = false, nil
	w.mu.Unlock()
	if first {
		w.broken()
	}
	// The error is swallowed: the relay goes on reading (so the server
	// never blocks on a full pipe) and recording, and what it would have
	// written is counted as undelivered.
	return len(b), nil
}

var newline = []byte{'\n'}

func (w *watchedWriter) progress() (writing bool, written int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.writing, w.written
}

// undeliveredBytes is what the client did not get: after a write error,
// and what a write still in progress has not written.
func (w *watchedWriter) undeliveredBytes() (n, lines int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.undelivered + int64(len(w.pending)), w.lines + int64(bytes.Count(w.pending, newline))
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

// injector writes messages of the shim's own into the session (Send).
type injector struct {
	rec                *recorder
	toServer, toClient io.Writer
}

// ErrNotRunning is Send's error outside Run.
var ErrNotRunning = errors.New("record: the shim is not relaying a session")

// Send writes msg into the running session, to the server (tape.DirSend)
// or to the client (tape.DirRecv), recording it first with inj in
// _meta.injected: the debugger re-sends a request this way. It needs Rules
// or Intercept set (the relay that takes messages of its own).
func (s *Stdio) Send(dir tape.Dir, msg []byte, inj []rules.Injection) error {
	s.runMu.Lock()
	in := s.run
	s.runMu.Unlock()
	if in == nil {
		return ErrNotRunning
	}
	w := in.toServer
	if dir == tape.DirRecv {
		w = in.toClient
	}
	if err := in.rec.direct().message(msg, dir, withInjections(nil, inj)); err != nil {
		in.rec.note(err)
	}
	_, err := w.Write(append(bytes.Clone(msg), '\n'))
	return err
}
