package proc

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The server's stdin and stdout are pipes; its stderr goes to the writer
// and its end is kept; CloseStdin may be called again.
func TestStartPipesAndStderrTail(t *testing.T) {
	var errOut bytes.Buffer
	p, err := Start(Spec{Command: "sh", Args: []string{"-c", "echo one >&2; echo two >&2; cat"}, Stderr: &errOut, Tail: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop(time.Second, time.Second)
	if _, err := p.Stdin.Write([]byte("ping\n")); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("read %q, %v: expected the server to echo ping", line, err)
	}
	p.CloseStdin()
	p.CloseStdin()
	if !p.ExitedWithin(5 * time.Second) {
		t.Fatal("cat did not exit within 5s of its stdin closing")
	}
	if err := p.WaitErr(); err != nil || p.State() == nil || p.State().ExitCode() != 0 {
		t.Fatalf("wait: %v, state %v: expected exit status 0", err, p.State())
	}
	if got := strings.Join(p.StderrTail(5), "|"); got != "one|two" {
		t.Errorf("StderrTail(5) = %q, expected one|two", got)
	}
	if errOut.String() != "one\ntwo\n" {
		t.Errorf("Spec.Stderr got %q, expected both lines", errOut.String())
	}
}

// Without Spec.Stderr the caller reads the server's stderr from a pipe.
func TestStartStderrPipe(t *testing.T) {
	for _, fast := range []bool{false, true} {
		p, err := Start(Spec{Command: "sh", Args: []string{"-c", "echo oops >&2"}, FastPipes: fast})
		if err != nil {
			t.Fatal(err)
		}
		if p.Stderr == nil {
			t.Fatalf("fast=%v: Process.Stderr is nil, expected the pipe's read end", fast)
		}
		b, err := io.ReadAll(p.Stderr)
		if err != nil || string(b) != "oops\n" {
			t.Errorf("fast=%v: stderr %q, %v: expected oops", fast, b, err)
		}
		p.Stop(time.Second, time.Second)
	}
}

// A server that ignores its stdin closing and SIGTERM is killed after the
// two periods, and the signals reach its whole process group.
func TestStopEscalatesToTheGroup(t *testing.T) {
	p, err := Start(Spec{Command: "sh", Args: []string{"-c", `trap 'echo term >&2' TERM; sleep 30 & echo $!; while :; do sleep 0.05; done`}, Tail: 1 << 10})
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(p.Stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatalf("expected the background sleep's pid, read %q", line)
	}
	start := time.Now()
	p.Stop(200*time.Millisecond, 300*time.Millisecond)
	took := time.Since(start)
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("Stop took %v: expected the grace (200ms) and the kill period (300ms), then SIGKILL", took)
	}
	ws, _ := p.State().Sys().(syscall.WaitStatus)
	if !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the server ended with %v, expected SIGKILL", p.State())
	}
	if !strings.Contains(strings.Join(p.StderrTail(10), "\n"), "term") {
		t.Errorf("the server's trap did not see SIGTERM; stderr: %q", p.StderrTail(10))
	}
	// The grandchild got the group's signal: gone, or a zombie its new
	// parent has not reaped yet.
	deadline := time.Now().Add(5 * time.Second)
	for !gone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the server's child %d outlived Stop: the signals did not reach the process group", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) != nil
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] == 'Z'
}

// A command that cannot start is os/exec's error, naming it.
func TestStartError(t *testing.T) {
	_, err := Start(Spec{Command: "/nonexistent/tapedeck-no-such-server"})
	if err == nil || !strings.Contains(err.Error(), "tapedeck-no-such-server") {
		t.Fatalf("Start of a missing command: %v, expected an error naming it", err)
	}
}

// TailBuffer keeps at most twice its size in memory and returns the last
// whole lines, never one cut at its start.
func TestTailBuffer(t *testing.T) {
	b := NewTailBuffer(100)
	for i := range 1000 {
		fmt.Fprintf(b, "line %d\n", i)
		if len(b.buf) > 200 {
			t.Fatalf("after %d lines the buffer holds %d bytes, want at most 200", i+1, len(b.buf))
		}
	}
	got := b.LastLines(3)
	if strings.Join(got, "|") != "line 997|line 998|line 999" {
		t.Errorf("LastLines(3) = %q", got)
	}
	all := b.LastLines(1000)
	if len(all) == 0 || len(all) > 100/8+1 || !strings.HasPrefix(all[0], "line ") || len(all[0]) != len("line 999") {
		t.Errorf("LastLines(1000) = %q: want only whole lines from the last 100 bytes", all)
	}
	if got := NewTailBuffer(10).LastLines(5); got != nil {
		t.Errorf("empty: %q", got)
	}
}
