package mcptest

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
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
// argument) on a port the system picks (PORT=0), learns the port from a
// preload script that prints it once the server listens, and returns the
// URL of path there: no free-port race.
func startEverything(t testing.TB, mode, path string) string {
	t.Helper()
	peers := Peers(t)
	cmd := exec.Command(peers.Node, "--require", listenHook(t), peers.Everything, mode)
	cmd.Env = append(os.Environ(), "PORT=0")
	p := Start(t, cmd)
	m, err := WaitForOutput(p, listenLine, 20*time.Second)
	if err != nil {
		t.Fatalf("mcptest: server-everything %s did not start: %v", mode, err)
	}
	return "http://" + m[1] + path
}

// listenLine is what listenHook prints when a node server listens.
var listenLine = regexp.MustCompile(`mcptest-listening (127\.0\.0\.1:\d+|\[::1?\]:\d+|0\.0\.0\.0:\d+)`)

// listenHookJS is a node preload script: when an HTTP server starts
// listening, it prints the address the system bound.
const listenHookJS = `const net = require("net");
const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  this.once("listening", () => {
    const a = this.address();
    if (a && typeof a === "object") {
      const host = a.family === "IPv6" ? (a.address === "::" ? "127.0.0.1" : "[" + a.address + "]") : (a.address === "0.0.0.0" ? "127.0.0.1" : a.address);
      process.stderr.write("mcptest-listening " + host + ":" + a.port + "\n");
    }
  });
  return listen.apply(this, args);
};
`

// listenHook writes listenHookJS into the test's temp directory.
func listenHook(t testing.TB) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "listen-hook.cjs")
	if err := os.WriteFile(f, []byte(listenHookJS), 0o600); err != nil {
		t.Fatalf("mcptest: %v", err)
	}
	return f
}

// WaitForOutput waits until the process's captured output matches re and
// returns the submatches, or fails when the process exits or timeout
// passes.
func WaitForOutput(p *Process, re *regexp.Regexp, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	for {
		if m := re.FindStringSubmatch(p.Output()); m != nil {
			return m, nil
		}
		if exited, err := p.Exited(); exited {
			return nil, fmt.Errorf("process exited (%v) before printing %s:\n%s", err, re, p.Output())
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no %s in its output after %v:\n%s", re, timeout, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// StartSDKServerHTTP builds cmd/sdkserver, starts it with --listen
// 127.0.0.1:0 plus extra arguments, and returns its endpoint URL, read from
// what it prints.
func StartSDKServerHTTP(t testing.TB, args ...string) string {
	t.Helper()
	bin := BuildBinary(t, SDKServerPackage)
	p := Start(t, exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...))
	m, err := WaitForOutput(p, sdkServerLine, 15*time.Second)
	if err != nil {
		t.Fatalf("mcptest: sdkserver over HTTP did not start: %v", err)
	}
	return m[1]
}

var sdkServerLine = regexp.MustCompile(`sdkserver: listening on (http://\S+/mcp)`)

// StartV2HTTPServer starts ts/v2httpserver.mjs (the v2 TypeScript SDK's
// server over Streamable HTTP, 2026-07-28: a tool whose argument goes in an
// Mcp-Param-* header, subscriptions/listen) on a port the system picks and
// returns its MCP endpoint's URL.
func StartV2HTTPServer(t testing.TB) string {
	t.Helper()
	peers := Peers(t)
	cmd := exec.Command(peers.Node, "--require", listenHook(t), filepath.Join(peers.Root, "internal", "mcptest", "ts", "v2httpserver.mjs"), "0")
	cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(peers.Root, ".peers"))
	p := Start(t, cmd)
	m, err := WaitForOutput(p, listenLine, 20*time.Second)
	if err != nil {
		t.Fatalf("mcptest: v2httpserver.mjs did not start: %v", err)
	}
	return "http://" + m[1] + "/mcp"
}
