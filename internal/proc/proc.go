// Package proc launches a stdio server: the one way tapedeck starts a
// process it talks to over pipes (the recording shim, verify, the replay's
// fall-through). The server runs in a process group of its own, so the
// signals reach its children too; on Linux the kernel kills it if its
// parent dies (Pdeathsig), so no server is orphaned. Its stdin is closed
// once, its stderr goes to a writer and the end of it is kept, and Stop
// ends it: stdin closed, SIGTERM after a grace period, SIGKILL after
// another.
package proc

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Spec says what to start and how.
type Spec struct {
	Command string
	Args    []string
	Dir     string   // working directory; empty means the caller's
	Env     []string // environment; nil means the caller's

	// Stderr receives the server's stderr (copied by os/exec). Nil, with
	// Tail 0: the server's stderr is a pipe whose read end is
	// Process.Stderr, for the caller to read.
	Stderr io.Writer
	// Tail, if above 0, keeps the last Tail bytes of the server's stderr
	// (Process.StderrTail), besides Stderr.
	Tail int
	// FastPipes gives the server blocking pipes of 1 MiB on Linux: a
	// blocked read wakes as soon as data arrives, without the runtime's
	// poller (the recording shim's latency). Closing such a pipe does not
	// interrupt a read in progress. Otherwise the pipes are os.Pipe's.
	FastPipes bool
}

// Process is a started server.
type Process struct {
	Cmd *exec.Cmd
	// Stdin is the write end of the server's stdin (close it with
	// CloseStdin); Stdout the read end of its stdout; Stderr the read end
	// of its stderr when Spec.Stderr was nil and Spec.Tail 0, else nil.
	Stdin, Stdout, Stderr *os.File

	tail    *TailBuffer
	closeIn sync.Once
	exited  chan struct{}
	waitErr error
}

// ErrPipes wraps Start's error when the pipes could not be made (before the
// server was tried).
var ErrPipes = errors.New("pipes for the server")

// Start starts the server on pipes, in its own process group. The error of
// a server that could not start is os/exec's (it names the command).
func Start(s Spec) (*Process, error) {
	mk := os.Pipe
	if s.FastPipes {
		mk = pipe
	}
	var files []*os.File
	pair := func() (r, w *os.File, err error) {
		r, w, err = mk()
		files = append(files, r, w)
		return r, w, err
	}
	closeAll := func() {
		for _, f := range files {
			if f != nil {
				f.Close()
			}
		}
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Dir, cmd.Env = s.Dir, s.Env
	cmd.SysProcAttr = sysProcAttr()
	// A grandchild that keeps a copied stderr open does not hold Wait.
	cmd.WaitDelay = 2 * time.Second
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	// Pipes of our own, not StdinPipe and StdoutPipe: Wait closes those as
	// soon as the process exits, losing what it wrote last, and turning a
	// write to a server that exited into "file already closed".
	inR, inW, err1 := pair()
	outR, outW, err2 := pair()
	var errR, errW *os.File
	var err3 error
	switch {
	case s.Tail > 0:
		p.tail = NewTailBuffer(s.Tail)
		cmd.Stderr = p.tail
		if s.Stderr != nil {
			cmd.Stderr = io.MultiWriter(s.Stderr, p.tail)
		}
	case s.Stderr != nil:
		cmd.Stderr = s.Stderr
	default:
		errR, errW, err3 = pair()
		cmd.Stderr = errW
	}
	if err := errors.Join(err1, err2, err3); err != nil {
		closeAll()
		return nil, fmt.Errorf("%w: %w", ErrPipes, err)
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	if err := cmd.Start(); err != nil {
		closeAll()
		return nil, err
	}
	// The server holds its ends now.
	inR.Close()
	outW.Close()
	if errW != nil {
		errW.Close()
	}
	p.Stdin, p.Stdout, p.Stderr = inW, outR, errR
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Pid is the server's process id, which is its process group's too.
func (p *Process) Pid() int { return p.Cmd.Process.Pid }

// CloseStdin closes the server's stdin, once.
func (p *Process) CloseStdin() { p.closeIn.Do(func() { p.Stdin.Close() }) }

// Signal signals the server's process group, or the server alone when the
// group is gone.
func (p *Process) Signal(sig syscall.Signal) {
	if err := syscall.Kill(-p.Pid(), sig); err != nil {
		_ = p.Cmd.Process.Signal(sig)
	}
}

// Exited is closed once the server has exited and was waited for.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// WaitErr is os/exec's error from waiting for the server (an
// *exec.ExitError for a non-zero status); valid once Exited is closed.
func (p *Process) WaitErr() error {
	<-p.exited
	return p.waitErr
}

// State is how the server ended; nil until Exited is closed.
func (p *Process) State() *os.ProcessState {
	select {
	case <-p.exited:
		return p.Cmd.ProcessState
	default:
		return nil
	}
}

// ExitedWithin reports whether the server exits within d.
func (p *Process) ExitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// Stop ends the server: its stdin closed, SIGTERM to its group if it is
// still running after grace, SIGKILL after kill more; it returns once the
// server was waited for, and closes the pipes' ends Start gave.
func (p *Process) Stop(grace, kill time.Duration) {
	p.CloseStdin()
	if !p.ExitedWithin(grace) {
		p.Signal(syscall.SIGTERM)
		if !p.ExitedWithin(kill) {
			p.Signal(syscall.SIGKILL)
			<-p.exited
		}
	}
	p.Stdout.Close()
	if p.Stderr != nil {
		p.Stderr.Close()
	}
}

// StderrTail returns up to n of the last lines of the server's stderr
// (Spec.Tail), without a line the size bound cut at its start.
func (p *Process) StderrTail(n int) []string {
	if p.tail == nil {
		return nil
	}
	return p.tail.LastLines(n)
}

// TailBuffer is an io.Writer that keeps the last max bytes written to it,
// safe for the goroutine os/exec copies a process's stderr with and a
// reader at once.
type TailBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

// NewTailBuffer returns a TailBuffer that keeps max bytes.
func NewTailBuffer(max int) *TailBuffer { return &TailBuffer{max: max} }

func (t *TailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		// Drop the front now and then, not on every write.
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.truncated = true
	}
	return len(b), nil
}

// String returns what is kept.
func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// LastLines returns up to n of the last complete or final lines kept,
// without a line the size limit cut at its start.
func (t *TailBuffer) LastLines(n int) []string {
	t.mu.Lock()
	b, truncated := t.buf, t.truncated
	if len(b) > t.max {
		b, truncated = b[len(b)-t.max:], true
	}
	text := string(b)
	t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if truncated && len(lines) > 0 {
		lines = lines[1:] // cut at its start
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
