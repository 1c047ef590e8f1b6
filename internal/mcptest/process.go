package mcptest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Process is a child process started by [Start] in its own process group.
type Process struct {
	Cmd *exec.Cmd

	mu     sync.Mutex
	output bytes.Buffer // stdout and stderr, unless the caller set them
	done   chan struct{}
	err    error
}

// Start starts cmd in a new process group and registers a cleanup that ends
// the whole group: SIGTERM, then SIGKILL after a grace period. A process group
// matters because node servers may spawn children and may linger (for example
// server-everything waits 60 s on an unanswered roots/list).
//
// If cmd.Stdout and cmd.Stderr are nil, both are captured and shown by
// [Process.Output] and in the test log when the test fails.
func Start(t testing.TB, cmd *exec.Cmd) *Process {
	t.Helper()
	p := &Process{Cmd: cmd, done: make(chan struct{})}
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if cmd.Stdout == nil {
		cmd.Stdout = lockedWriter{p}
	}
	if cmd.Stderr == nil {
		cmd.Stderr = lockedWriter{p}
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("mcptest: start %s: %v", cmd.Path, err)
	}
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Stop(3 * time.Second)
		if t.Failed() {
			t.Logf("mcptest: output of %v:\n%s", cmd.Args, p.Output())
		}
	})
	return p
}

type lockedWriter struct{ p *Process }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	return w.p.output.Write(b)
}

// Output returns what the process wrote so far, if Start captured it.
func (p *Process) Output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.output.String()
}

// Exited reports whether the process has ended, and its wait error.
func (p *Process) Exited() (bool, error) {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return true, p.err
	default:
		return false, nil
	}
}

// Stop ends the process group: SIGTERM, then SIGKILL if the leader has not
// exited within grace. It is safe to call more than once.
func (p *Process) Stop(grace time.Duration) {
	pgid := p.Cmd.Process.Pid
	select {
	case <-p.done:
		// The leader is gone; its children may not be.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.done
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("mcptest: find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// WaitForPort waits until something accepts TCP connections on
// 127.0.0.1:port, or the process exits, or timeout passes.
func WaitForPort(p *Process, port int, timeout time.Duration) error {
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	deadline := time.Now().Add(timeout)
	for {
		if exited, err := p.Exited(); exited {
			return fmt.Errorf("process exited before listening on %s: %v", addr, err)
		}
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("nothing listening on %s after %v: %w", addr, timeout, err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

// StartEverythingHTTP starts server-everything in streamable HTTP mode on a
// free loopback port and returns its endpoint URL (http://127.0.0.1:PORT/mcp).
// The server is stopped at test cleanup.
func StartEverythingHTTP(t testing.TB) string {
	t.Helper()
	return startEverything(t, "streamableHttp", "/mcp")
}

// startEverything starts server-everything with transport mode (its first
// argument) on a free loopback port (its PORT environment variable) and
// returns the URL of path there; a port taken between FreePort and the
// server's listen is retried.
func startEverything(t testing.TB, mode, path string) string {
	t.Helper()
	peers := Peers(t)
	var lastErr error
	for range 3 {
		port := FreePort(t)
		cmd := exec.Command(peers.Node, peers.Everything, mode)
		cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
		p := Start(t, cmd)
		err := WaitForPort(p, port, 15*time.Second)
		if err == nil {
			return fmt.Sprintf("http://127.0.0.1:%d%s", port, path)
		}
		p.Stop(time.Second)
		lastErr = fmt.Errorf("%w\n%s", err, p.Output())
	}
	t.Fatalf("mcptest: server-everything %s did not start: %v", mode, lastErr)
	return ""
}

// StartSDKServerHTTP builds cmd/sdkserver, starts it with --listen on a free
// loopback port plus extra arguments, and returns its endpoint URL.
func StartSDKServerHTTP(t testing.TB, args ...string) string {
	t.Helper()
	bin := BuildBinary(t, SDKServerPackage)
	var lastErr error
	for range 3 {
		port := FreePort(t)
		addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
		p := Start(t, exec.Command(bin, append([]string{"--listen", addr}, args...)...))
		err := WaitForPort(p, port, 15*time.Second)
		if err == nil {
			return "http://" + addr + "/mcp"
		}
		p.Stop(time.Second)
		lastErr = errors.Join(err, errors.New(p.Output()))
	}
	t.Fatalf("mcptest: sdkserver over HTTP did not start: %v", lastErr)
	return ""
}
