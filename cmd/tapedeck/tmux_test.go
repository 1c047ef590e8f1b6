package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/internal/proc"
	"github.com/tapedeck/tapedeck/tape"
)

// tmuxTerm is a real terminal: a detached tmux session on a private server
// socket, killed when the test ends.
type tmuxTerm struct {
	t      *testing.T
	socket string
}

var tmuxSeq atomic.Int64

// startTmux runs argv in a 120×40 tmux window.
func startTmux(t *testing.T, argv ...string) *tmuxTerm {
	t.Helper()
	return startTmuxSize(t, 120, 40, argv...)
}

// startTmuxSize runs argv in a w×h tmux window.
func startTmuxSize(t *testing.T, w, h int, argv ...string) *tmuxTerm {
	t.Helper()
	if _, err := exec.LookPath("tmux"); err != nil {
		t.Fatalf("tmux not found: the terminal end-to-end tests need it (apt-get install tmux; .ci/run installs it)")
	}
	tt := &tmuxTerm{t: t, socket: fmt.Sprintf("tapedeck-test-%d-%d", os.Getpid(), tmuxSeq.Add(1))}
	args := append([]string{"new-session", "-d", "-x", strconv.Itoa(w), "-y", strconv.Itoa(h), "-e", "TERM=xterm-256color", "--"}, argv...)
	tt.run(args...)
	t.Cleanup(func() { _ = exec.Command("tmux", "-L", tt.socket, "kill-server").Run() })
	return tt
}

func (tt *tmuxTerm) run(args ...string) string {
	tt.t.Helper()
	out, err := exec.Command("tmux", append([]string{"-L", tt.socket}, args...)...).CombinedOutput()
	if err != nil {
		tt.t.Fatalf("tmux %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// keys sends tmux key names ("l", "Enter", "Space") or literal text.
func (tt *tmuxTerm) keys(ks ...string) {
	tt.t.Helper()
	tt.run(append([]string{"send-keys", "-t", "0"}, ks...)...)
}

// typeText sends text literally, then Enter.
func (tt *tmuxTerm) typeText(s string) {
	tt.t.Helper()
	tt.run("send-keys", "-t", "0", "-l", s)
	tt.run("send-keys", "-t", "0", "Enter")
}

func (tt *tmuxTerm) screen() string {
	tt.t.Helper()
	return tt.run("capture-pane", "-p", "-t", "0")
}

// peek returns the screen for a message, or why there is none (the
// program ended), without failing the test.
func (tt *tmuxTerm) peek() string {
	out, err := exec.Command("tmux", "-L", tt.socket, "capture-pane", "-p", "-t", "0").CombinedOutput()
	if err != nil {
		return fmt.Sprintf("(no screen: %v: %s)", err, out)
	}
	return string(out)
}

// waitFor waits until the screen shows every want, and returns it.
func (tt *tmuxTerm) waitFor(timeout time.Duration, want ...string) string {
	tt.t.Helper()
	var s string
	waitFor(tt.t, timeout, func() error {
		s = tt.screen()
		for _, w := range want {
			if !strings.Contains(s, w) {
				return fmt.Errorf("the screen lacks %q:\n%s", w, s)
			}
		}
		return nil
	}, fmt.Sprintf("the screen to show %q", want))
	return s
}

// debugAddr waits for "tapedeck debug --listen 127.0.0.1:0" to show the
// address the system bound and a debugger waiting for its client.
func (tt *tmuxTerm) debugAddr() string {
	tt.t.Helper()
	s := tt.waitFor(5*time.Second, "client: waiting for a client")
	m := debugAddrRE.FindStringSubmatch(s)
	if m == nil {
		tt.t.Fatalf("the debugger does not show its address:\n%s", s)
	}
	return m[1]
}

var debugAddrRE = regexp.MustCompile(`attach (127\.0\.0\.1:\d+)`)

// waitExit waits for the program (and so the session) to end.
func (tt *tmuxTerm) waitExit(timeout time.Duration) {
	tt.t.Helper()
	waitFor(tt.t, timeout, func() error {
		if exec.Command("tmux", "-L", tt.socket, "has-session").Run() == nil {
			return fmt.Errorf("still running:\n%s", tt.peek())
		}
		return nil
	}, "the program to exit")
}

// waitRow waits until timeline row seq shows mark.
func waitRow(t *testing.T, tt *tmuxTerm, seq int, mark string) {
	t.Helper()
	waitFor(t, 2*time.Second, func() error {
		if s := tt.screen(); !strings.Contains(rowLine(s, seq), mark) {
			return fmt.Errorf("the screen:\n%s", s)
		}
		return nil
	}, fmt.Sprintf("row %d to show %q", seq, mark))
}

// rowLine returns the screen line of timeline row seq.
func rowLine(screen string, seq int) string {
	for _, l := range strings.Split(screen, "\n") {
		f := strings.Fields(strings.TrimLeft(l, "●◆✗▶› "))
		if len(f) > 0 && f[0] == fmt.Sprint(seq) {
			return l
		}
	}
	return ""
}

func TestTmuxOpenDemoStepBreakFilter(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	tt := startTmux(t, bin, "open")
	// The whole tape at open, the failures counted, the cursor on the
	// first one with its error on the row (not on the client's
	// server/discover probe, which server-everything rejected: version
	// negotiation); } jumps to the next.
	s := tt.waitFor(5*time.Second, "79 messages", "whole tape", "2 errors, 2 tool errors (} next)")
	x := demoIndex(t)
	first := x.NextFailure(0, 1)
	if l := rowLine(s, first); !strings.Contains(l, "›") || !strings.Contains(l, "tool-error") || !strings.Contains(l, "MCP error -32602") {
		t.Errorf("the cursor is not on the first failure #%d, a failed tool call, with its error: %q\n%s", first, l, s)
	}
	tt.keys("}")
	second := x.NextFailure(first+1, 1)
	waitRow(t, tt, second, "›")
	if l := rowLine(tt.screen(), second); !strings.Contains(l, " error ") {
		t.Errorf("row %d, a JSON-RPC error, does not say error: %q", second, l)
	}
	tt.keys("g")
	if l := rowLine(tt.waitFor(2*time.Second, "server/discover"), 2); !strings.Contains(l, "negotiation") {
		t.Errorf("row 2, the rejected probe's answer, does not say negotiation: %q", l)
	}

	// Step three messages: the position moves and ▶ marks the next one.
	tt.keys("l", "l", "l")
	s = tt.waitFor(2*time.Second, "3/79")
	if l := rowLine(s, 3); !strings.Contains(l, "▶") {
		t.Errorf("row 3 is not marked as the next message: %q", l)
	}
	tt.keys("h")
	tt.waitFor(2*time.Second, "2/79")

	// A breakpoint on the echo tool, then play to it.
	tt.keys(":")
	tt.typeText("break tool=echo")
	tt.waitFor(2*time.Second, "breakpoint 1: tool=echo")
	tt.keys("Space")
	s = tt.waitFor(5*time.Second, "breakpoint 1 (tool=echo) before #15", "15/79", "paused")
	if l := rowLine(s, 15); !strings.Contains(l, "◆") || !strings.Contains(l, "echo") {
		t.Errorf("row 15 is not marked as the breakpoint stop: %q", l)
	}
	if !strings.Contains(s, `"name": "echo"`) {
		t.Errorf("the detail pane does not show the echo call:\n%s", s)
	}

	// The pairing view and the partner key.
	tt.keys("2")
	tt.waitFor(2*time.Second, "request #15  ⇄  response #16")
	tt.keys("x")
	waitRow(t, tt, 16, "›")

	// Filter errors, show only the matches.
	tt.keys("/")
	// 2 JSON-RPC errors and 2 failed tool calls (isError), which used to
	// pass for ok; not the rejected server/discover probe
	tt.typeText("status:error")
	tt.waitFor(3*time.Second, `filter "status:error": 4 matches`)
	tt.keys("f")
	s = tt.waitFor(2*time.Second, "no-such-tool")
	if rowLine(s, 1) != "" || rowLine(s, 3) != "" {
		t.Errorf("only-matches view still shows rows that are not errors:\n%s", s)
	}

	// Speed and help.
	tt.keys("+", "+")
	tt.waitFor(2*time.Second, "speed 4×")
	tt.keys("?")
	tt.waitFor(2*time.Second, "any key closes", "step forward")
	tt.keys("?") // any key closes help (not Escape: ESC then q reads as alt+q)
	tt.waitFor(2*time.Second, "? help")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// The first key the README teaches: space, right after opening, plays the
// tape (it stayed at "playing 0/79" while the clock waited decades).
func TestTmuxOpenSpacePlaysAtOnce(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	tt := startTmux(t, bin, "open")
	tt.waitFor(5*time.Second, "79 messages", "whole tape")
	tt.keys("Space")
	tt.waitFor(5*time.Second, "79/79", "end of the tape")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// demoIndex indexes the embedded demo tape.
func demoIndex(t *testing.T) *tape.Index {
	t.Helper()
	x := tape.NewIndex(bytes.NewReader(assets.DemoTape))
	if err := x.Extend(int64(len(assets.DemoTape)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func TestTmuxOpenRecordedTapeAndGoto(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	path := filepath.Join(t.TempDir(), "session.jsonl")
	if err := os.WriteFile(path, assets.DemoTape, 0o600); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, "open", path)
	tt.waitFor(5*time.Second, "session.jsonl", "79 messages")
	tt.keys(":")
	tt.typeText("goto 1.2s")
	x := tape.NewIndex(bytes.NewReader(assets.DemoTape))
	if err := x.Extend(int64(len(assets.DemoTape)), nil); err != nil {
		t.Fatal(err)
	}
	want := 0
	for want < x.Len() && x.Entry(want).Time.Sub(x.Entry(0).Time) < 1200*time.Millisecond {
		want++
	}
	tt.waitFor(2*time.Second, fmt.Sprintf("%d/79", want))
	waitRow(t, tt, want, "▶")
	tt.keys(":")
	tt.typeText("break when params.arguments.ms > 300")
	tt.waitFor(2*time.Second, "breakpoint 1: when params.arguments.ms > 300")
	tt.keys(":")
	tt.typeText("goto 0")
	tt.keys(":")
	tt.typeText("speed instant")
	tt.keys("Space")
	tt.waitFor(3*time.Second, "breakpoint 1 (when params.arguments.ms > 300)")
	tt.keys("Tab", "G") // the detail pane: scroll to the arguments
	tt.waitFor(2*time.Second, `"ms": 400`)
	tt.keys("Tab")
	tt.keys("3")
	tt.waitFor(2*time.Second, "79 messages (4 lifecycle, 0 invalid)", "tools/call")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

func TestTmuxFollow(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	path := filepath.Join(t.TempDir(), "live.jsonl")
	lines := bytes.SplitAfter(assets.DemoTape, []byte("\n"))
	if err := os.WriteFile(path, bytes.Join(lines[:5], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, "open", "--follow", path)
	tt.waitFor(5*time.Second, "5 messages", "following")
	tt.keys("G")

	// Append lines as a recorder would: each must appear within 200 ms (plus
	// the capture's own latency, measured in the same loop).
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var worst time.Duration
	for i := 5; i < 12; i++ {
		start := time.Now()
		if _, err := f.Write(lines[i]); err != nil {
			t.Fatal(err)
		}
		tt.waitFor(2*time.Second, fmt.Sprintf("%d messages", i+1))
		worst = max(worst, time.Since(start))
	}
	t.Logf("slowest appearance of an appended message: %v", worst)
	if worst > 400*time.Millisecond {
		t.Errorf("an appended message took %v to appear, want well under 400 ms (200 ms budget + capture)", worst)
	}
	s := tt.screen()
	if l := rowLine(s, 11); !strings.Contains(l, "›") {
		t.Errorf("the cursor did not follow the end to row 11: %q\n%s", l, s)
	}
	// A half-written line waits for its end.
	half := lines[12][:len(lines[12])/2]
	if _, err := f.Write(half); err != nil {
		t.Fatal(err)
	}
	holdsFor(t, 300*time.Millisecond, func() error {
		if s := tt.screen(); !strings.Contains(s, "12 messages") {
			return fmt.Errorf("the screen:\n%s", s)
		}
		return nil
	}, "the half-written line not counted (12 messages)")
	if _, err := f.Write(lines[12][len(half):]); err != nil {
		t.Fatal(err)
	}
	tt.waitFor(2*time.Second, "13 messages")

	// Replace the file with a shorter one: it is reloaded.
	tmp := path + ".new"
	if err := os.WriteFile(tmp, bytes.Join(lines[:3], nil), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	tt.waitFor(3*time.Second, "3 messages", "reloaded")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// TestTmuxDebugLiveDivergence records a real session (the Go SDK client
// against the SDK test server), then serves it under "tapedeck debug" to the
// same client attached through "tapedeck attach", with a different echo
// message: the debugger stops on the divergence with the changed path, the
// user answers with the recorded response, and a breakpoint holds the
// answer to the next call until the user continues.
func TestTmuxDebugLiveDivergence(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	steps := "--steps=init,tools,echo,answer"
	out, err := exec.Command(client, "--tape", rec, steps, "--", server).CombinedOutput()
	if err != nil {
		t.Fatalf("recording with sdkclient: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), `echo: "Echo: hi"`) {
		t.Fatalf("the recording run did not echo hi:\n%s", out)
	}

	tt := startTmux(t, bin, "debug", rec, "--listen", "127.0.0.1:0")
	addr := tt.debugAddr()
	tt.keys(":")
	tt.typeText("break tool=answer")
	tt.waitFor(2*time.Second, "breakpoint 1: tool=answer")

	// Read while the client runs: a guarded buffer, not a bytes.Buffer
	// os/exec writes from its own goroutine.
	transcript := proc.NewTailBuffer(1 << 20)
	cmd := exec.Command(client, "--message", "bye", steps, "--timeout", "30s", "--", bin, "attach", addr)
	cmd.Stdout, cmd.Stderr = transcript, transcript
	p := mcptest.Start(t, cmd)

	s := tt.waitFor(10*time.Second, "client: DIVERGED at #5", "changed: params.arguments.message")
	if l := rowLine(s, 5); !strings.Contains(l, "✗") || !strings.Contains(l, "DIVERGED") {
		t.Errorf("row 5 is not marked as diverged: %q", l)
	}
	if !strings.Contains(s, `"message": "hi"`) || !strings.Contains(s, `"message": "bye"`) {
		t.Errorf("the diff does not show expected and actual side by side:\n%s", s)
	}
	tt.keys("a")
	// Playback follows the client: when the client sends the answer call,
	// playback stops before it, and its answer is held.
	tt.waitFor(5*time.Second, "hits 1", "7/10", "client: held at breakpoint 1 before #7")
	waitRow(t, tt, 7, "◆")
	holdsFor(t, 300*time.Millisecond, lacks(transcript, "answer:"), "the client's answer held by the breakpoint")
	tt.keys("Space")
	waitClient(t, tt, p, 10*time.Second, p.Output)
	got := transcript.String()
	for _, want := range []string{`echo: "Echo: hi"`, `answer: "the answer is 42"`} {
		if !strings.Contains(got, want) {
			t.Errorf("client transcript lacks %s (the recorded answers):\n%s", want, got)
		}
	}
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// TestTmuxDebugHTTPClient records a session of the Go SDK client with the
// SDK test server over Streamable HTTP, then serves it under "tapedeck
// debug" to the same client over Streamable HTTP (sdkclient --url) twice:
// once diverging on the echo message, resolved with e (the client gets the
// -32090 error and goes on with the recorded answers), once leaving out the
// echo call, resolved with s (the recorded echo is skipped and the client's
// next call matches).
func TestTmuxDebugHTTPClient(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	url := mcptest.StartSDKServerHTTP(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	steps := "--steps=init,tools,echo,answer"
	out, err := exec.Command(client, "--tape", rec, steps, "--url", url).CombinedOutput()
	if err != nil {
		t.Fatalf("recording with sdkclient over HTTP: %v\n%s", err, out)
	}
	x, err := tape.OpenIndex(rec)
	if err != nil {
		t.Fatal(err)
	}
	n := x.Len()
	echo, answer := -1, -1
	for i := range n {
		if e := x.Entry(i); e.Kind == tape.KindRequest && e.Method == "tools/call" {
			if echo < 0 {
				echo = i
			} else {
				answer = i
			}
		}
	}
	x.Close()
	if echo < 0 || answer < 0 {
		t.Fatalf("the recording has no echo and answer calls:\n%s", out)
	}

	// debug starts the debugger on rec at a free address and waits for it.
	debug := func(t *testing.T) (*tmuxTerm, string) {
		tt := startTmux(t, bin, "debug", rec, "--listen", "127.0.0.1:0")
		addr := tt.debugAddr()
		tt.waitFor(5*time.Second, "http://"+addr+"/mcp")
		return tt, "http://" + addr + "/mcp"
	}
	// finish waits for the client to exit and returns its transcript.
	finish := func(t *testing.T, tt *tmuxTerm, p *mcptest.Process) string {
		t.Helper()
		waitClient(t, tt, p, 15*time.Second, p.Output)
		return p.Output()
	}

	t.Run("e sends the divergence error", func(t *testing.T) {
		tt, endpoint := debug(t)
		// The client stops after echo: the error leaves the recorded echo
		// expected, so a further call would diverge again.
		p := mcptest.Start(t, exec.Command(client, "--codes", "--message", "bye", "--steps=init,tools,echo", "--timeout", "30s", "--url", endpoint))
		s := tt.waitFor(10*time.Second, fmt.Sprintf("client: DIVERGED at #%d", echo), "changed: params.arguments.message")
		if l := rowLine(s, echo); !strings.Contains(l, "✗") {
			t.Errorf("row %d is not marked as diverged: %q", echo, l)
		}
		if !strings.Contains(s, `"message": "hi"`) || !strings.Contains(s, `"message": "bye"`) {
			t.Errorf("the diff does not show expected and actual side by side:\n%s", s)
		}
		tt.keys("!")
		got := finish(t, tt, p)
		if !strings.Contains(got, "echo: echo: rpc error -32090: ") || !strings.Contains(got, "replay mismatch") {
			t.Errorf("the client did not print the -32090 divergence error:\n%s", got)
		}
		// The tape still waits for the recorded echo; the client's DELETE
		// disconnected it.
		tt.waitFor(5*time.Second, fmt.Sprintf("%d/%d", echo, n), "client: disconnected")
		tt.keys("q")
		tt.waitExit(5 * time.Second)
	})

	t.Run("s skips the recorded request", func(t *testing.T) {
		tt, endpoint := debug(t)
		p := mcptest.Start(t, exec.Command(client, "--steps=init,tools,answer", "--timeout", "30s", "--url", endpoint))
		tt.waitFor(10*time.Second, fmt.Sprintf("client: DIVERGED at #%d", echo), "changed: params.arguments.message, params.name")
		tt.keys("s")
		got := finish(t, tt, p)
		if !strings.Contains(got, `answer: "the answer is 42"`) || strings.Contains(got, "error") {
			t.Errorf("after skipping the recorded echo the client did not get the recorded answer:\n%s", got)
		}
		tt.waitFor(5*time.Second, fmt.Sprintf("%d/%d", n, n), "client: disconnected")
		tt.keys("q")
		tt.waitExit(5 * time.Second)
	})
}

// TestTmuxDebugRunsTwice is the failing-session loop: a session recorded
// through tapedeck record (the go-sdk client and server over stdio) is
// served by one tapedeck debug to the same client twice, first attached
// over stdio, then over Streamable HTTP, after a port probe that sends a
// newline. A breakpoint on the answer tool holds both runs; each run
// starts at the top of the tape; quitting prints the runs and exits 0.
func TestTmuxDebugRunsTwice(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	steps := "--steps=init,tools,echo,answer"
	if out, err := exec.Command(client, steps, "--", bin, "record", "-o", rec, "--", server).CombinedOutput(); err != nil {
		t.Fatalf("recording through tapedeck record: %v\n%s", err, out)
	}
	summary := filepath.Join(dir, "summary.txt")
	tt := startTmux(t, "sh", "-c", fmt.Sprintf("%s debug %s --listen 127.0.0.1:0 --break tool=answer 2>%s; echo exit=$? >>%s; sleep 30", bin, rec, summary, summary))
	addr := tt.debugAddr()

	// A port probe: a newline, then gone. It must claim nothing.
	if c, err := net.Dial("tcp", addr); err == nil {
		io.WriteString(c, "\n")
		c.Close()
	}

	run := func(n int, argv ...string) {
		t.Helper()
		transcript := proc.NewTailBuffer(1 << 20)
		cmd := exec.Command(client, append([]string{steps, "--timeout", "30s"}, argv...)...)
		cmd.Stdout, cmd.Stderr = transcript, transcript
		p := mcptest.Start(t, cmd)
		tt.waitFor(10*time.Second, "run "+strconv.Itoa(n), "held at breakpoint 1")
		holdsFor(t, 200*time.Millisecond, lacks(transcript, "answer:"), fmt.Sprintf("run %d: the client's answer held by the breakpoint", n))
		tt.keys("Space")
		waitClient(t, tt, p, 10*time.Second, transcript.String)
		if got := transcript.String(); !strings.Contains(got, `answer: "the answer is 42"`) || !strings.Contains(got, `echo: "Echo: hi"`) {
			t.Errorf("run %d: the client's transcript lacks the recorded answers:\n%s", n, got)
		}
		tt.waitFor(10*time.Second, fmt.Sprintf("before: %d ✓ 0 ✗", n))
	}
	run(1, "--", bin, "attach", addr)
	run(2, "--url", "http://"+addr+"/mcp")

	tt.keys("q")
	var s string
	waitFor(t, 10*time.Second, func() error {
		data, _ := os.ReadFile(summary)
		if s = string(data); !strings.Contains(s, "exit=") {
			return fmt.Errorf("debug has not exited after q:\n%s", tt.peek())
		}
		return nil
	}, "debug to exit after q")
	if !strings.Contains(s, "exit=0") || !strings.Contains(s, "2 client runs") ||
		!strings.Contains(s, "run 1 (stdio") || !strings.Contains(s, "run 2 (http") || strings.Count(s, "followed the tape") != 2 {
		t.Errorf("debug's summary and exit status:\n%s", s)
	}
}

// TestTmuxDebugIntercept runs the debugger between the go-sdk client and
// the go-sdk server (tapedeck debug --break ... -- SERVER): the echo call
// is held, edited in $EDITOR (a script that changes its argument) and
// forwarded, and the client gets the server's answer to the edited call;
// while the answer call is held, r sends the recorded echo request again
// and its new answer shows beside the recorded one; the tape records what
// the debugger did.
func TestTmuxDebugIntercept(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	editor := filepath.Join(dir, "edit.sh")
	if err := os.WriteFile(editor, []byte("#!/bin/sh\nsed -i 's/\"message\": \"hi\"/\"message\": \"edited\"/' \"$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	tapePath := filepath.Join(dir, "intercepted.jsonl")
	// Rules apply in the intercept too: the answer's result is changed.
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte("rules:\n  - name: answer-41\n    match: {phase: response, tool: answer}\n    action: modify\n    set: {/result/content/0/text: the answer is 41}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, "env", "EDITOR="+editor, bin, "debug", "--break", "tool=echo", "--break", "tool=answer",
		"--rules", rulesPath, "--listen", "127.0.0.1:0", "-o", tapePath, "--", server)
	s := tt.waitFor(5*time.Second, "intercepting: breakpoints hold")
	m := debugAddrRE.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("the debugger does not show its address:\n%s", s)
	}
	transcript := proc.NewTailBuffer(1 << 20)
	cmd := exec.Command(client, "--steps=init,tools,echo,answer", "--timeout", "30s", "--", bin, "attach", m[1])
	cmd.Stdout, cmd.Stderr = transcript, transcript
	p := mcptest.Start(t, cmd)

	s = tt.waitFor(10*time.Second, "HELD send request tools/call echo", `"message": "hi"`)
	tt.keys("e")
	tt.waitFor(10*time.Second, "EDITED: a sends this")
	tt.keys("a") // as in mitmproxy, the edit goes when accepted
	tt.waitFor(10*time.Second, "HELD send request tools/call answer")
	if !strings.Contains(transcript.String(), `echo: "Echo: edited"`) {
		t.Errorf("the client did not get the answer to the edited call:\n%s", transcript.String())
	}
	// r on the recorded echo request: its seq on the tape so far.
	echoSeq := gotoEchoRequest(t, tt, tapePath)
	tt.keys("r")
	// The answer to the re-sent request lands on the tape, not at the client.
	waitRow(t, tt, echoSeq+3, "Echo: edited")
	tt.keys("a") // the answer call goes on
	s = tt.waitFor(10*time.Second, "recorded answer", "answer now", "Echo: edited")
	waitClient(t, tt, p, 10*time.Second, func() string { return p.Output() })
	if !strings.Contains(transcript.String(), `answer: "the answer is 41"`) {
		t.Errorf("the answer call did not reach the client with the rule's change:\n%s", transcript.String())
	}
	tt.keys("q")
	tt.waitExit(5 * time.Second)
	got := injections(t, tapePath)
	if fmt.Sprint(got["debugger"]) != "[send:modify+original send:resend+injected recv:resend+dropped]" {
		t.Errorf("the tape's account of the debugger: %v", got["debugger"])
	}
	if fmt.Sprint(got["answer-41"]) != "[recv:modify+original]" {
		t.Errorf("the tape's account of the rule: %v", got["answer-41"])
	}
}

// TestTmuxDebugInterceptHTTP: the TypeScript SDK's client over Streamable
// HTTP through "tapedeck debug --upstream" to server-everything: the echo
// call is held and forwarded; while get-sum is held, r sends the echo
// request again in the client's session and its answer shows beside the
// recorded one; get-sum is then answered with an error from the debugger,
// which the client gets; the tape says what the debugger did.
func TestTmuxDebugInterceptHTTP(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	upstream := mcptest.StartEverythingHTTP(t)
	tapePath := filepath.Join(t.TempDir(), "http.jsonl")
	tt := startTmux(t, bin, "debug", "--break", "tool=echo", "--break", "tool=get-sum", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
	s := tt.waitFor(5*time.Second, "intercepting: breakpoints hold")
	m := regexp.MustCompile(`intercepting (http://127\.0\.0\.1:\d+/\S*)`).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("the debugger does not show its URL:\n%s", s)
	}
	peers := mcptest.Peers(t)
	script := filepath.Join(mcptest.RepoRoot(t), "internal", "mcptest", "ts", "client.mjs")
	transcript := proc.NewTailBuffer(1 << 20)
	cmd := exec.Command(peers.Node, script, "--url", m[1])
	cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(mcptest.RepoRoot(t), ".peers"))
	cmd.Stdout, cmd.Stderr = transcript, transcript
	p := mcptest.Start(t, cmd)
	tt.waitFor(15*time.Second, "HELD send request tools/call echo")
	tt.keys("a")
	tt.waitFor(10*time.Second, "HELD send request tools/call get-sum")
	gotoEchoRequest(t, tt, tapePath)
	tt.keys("r")
	// The re-sent request's answer lands on the tape, marked as the debugger's.
	waitFor(t, 10*time.Second, func() error {
		if got := fmt.Sprint(injections(t, tapePath)["debugger"]); got != "[send:resend+injected recv:resend+dropped]" {
			return fmt.Errorf("the debugger's injections %s\n%s", got, tt.peek())
		}
		return nil
	}, "the re-sent request's answer on the tape")
	tt.keys("!")
	tt.waitFor(10*time.Second, "recorded answer", "answer now", "Echo: hi")
	waitClient(t, tt, p, 15*time.Second, transcript.String)
	if !strings.Contains(transcript.String(), "echo: Echo: hi") || !strings.Contains(transcript.String(), "answered with an error in the tapedeck debugger") {
		t.Errorf("the client's transcript:\n%s", transcript.String())
	}
	tt.keys("q")
	tt.waitExit(5 * time.Second)
	got := injections(t, tapePath)
	if fmt.Sprint(got["debugger"]) != "[send:resend+injected recv:resend+dropped send:error+dropped recv:error+injected]" {
		t.Errorf("the tape's account of the debugger: %v", got)
	}
}

// TestTmuxDebugFallback: "tapedeck debug --fallback TAPE -- SERVER" serves
// a tape of init, tools and echo to the go-sdk client, which also calls
// answer: the tape lacks it, the live go-sdk server (started on demand and
// opened with the client's initialize) answers, the debugger says so, and
// the exchange is appended to the tape as a new episode.
func TestTmuxDebugFallback(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	if out, err := exec.Command(client, "--tape", rec, "--steps=init,tools,echo", "--", server).CombinedOutput(); err != nil {
		t.Fatalf("recording with sdkclient: %v\n%s", err, out)
	}
	tt := startTmux(t, bin, "debug", "--fallback", rec, "--listen", "127.0.0.1:0", "--", server)
	addr := tt.debugAddr()
	tt.keys("Space") // play: the recorded answers go out as the client reaches them
	out, err := exec.Command(client, "--steps=init,tools,echo,answer", "--timeout", "30s", "--", bin, "attach", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("the client through the fallback: %v\n%s\n%s", err, out, tt.screen())
	}
	for _, want := range []string{`echo: "Echo: hi"`, `answer: "the answer is 42"`} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the client's transcript lacks %s:\n%s", want, out)
		}
	}
	// The run followed the tape where it could: what the live server
	// answered is not a departure.
	tt.waitFor(5*time.Second, "before: 1 ✓ 0 ✗")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
	data, _ := os.ReadFile(rec)
	if !strings.Contains(string(data), `"episode":"new"`) || !strings.Contains(string(data), "the answer is 42") {
		t.Errorf("the new episode is not on the tape:\n%s", data)
	}
}

// TestTmuxDebugTapeRules: "tapedeck debug TAPE --rules" faults the
// recorded answers for an attached stdio client (the go-sdk client): a
// rule changes the answer tool's recorded result, the client gets the
// change, and the debugger says what the rule did.
func TestTmuxDebugTapeRules(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	steps := "--steps=init,tools,echo,answer"
	if out, err := exec.Command(client, "--tape", rec, steps, "--", server).CombinedOutput(); err != nil {
		t.Fatalf("recording with sdkclient: %v\n%s", err, out)
	}
	rulesPath := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(rulesPath, []byte("rules:\n  - name: answer-41\n    match: {phase: response, tool: answer}\n    action: modify\n    set: {/result/content/0/text: the answer is 41}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, "debug", rec, "--rules", rulesPath, "--listen", "127.0.0.1:0")
	addr := tt.debugAddr()
	tt.keys("Space")
	out, err := exec.Command(client, steps, "--timeout", "30s", "--", bin, "attach", addr).CombinedOutput()
	if err != nil {
		t.Fatalf("the client: %v\n%s\n%s", err, out, tt.screen())
	}
	if !strings.Contains(string(out), `answer: "the answer is 41"`) || !strings.Contains(string(out), `echo: "Echo: hi"`) {
		t.Errorf("the client's transcript:\n%s", out)
	}
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// gotoEchoRequest puts the debugger's cursor on the first echo request
// the tape at path holds, and returns its seq.
func gotoEchoRequest(t *testing.T, tt *tmuxTerm, path string) int {
	t.Helper()
	seq := -1
	if data, err := os.ReadFile(path); err == nil {
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if strings.Contains(line, `"name":"echo"`) && strings.Contains(line, `"dir":"send"`) {
				seq = i
				break
			}
		}
	}
	if seq < 0 {
		t.Fatalf("no echo request on the tape")
	}
	tt.keys(":")
	tt.typeText(fmt.Sprintf("goto %d", seq))
	waitRow(t, tt, seq, "›") // the cursor is there
	return seq
}

// waitClient waits for a client process to finish.
func waitClient(t *testing.T, tt *tmuxTerm, p *mcptest.Process, timeout time.Duration, output func() string) {
	t.Helper()
	waitFor(t, timeout, func() error {
		if done, _ := p.Exited(); !done {
			return fmt.Errorf("still running; its output:\n%s\nthe screen:\n%s", output(), tt.peek())
		}
		return nil
	}, "the client to finish")
}

// TestTmuxDebugPastTheEnd: a tape of one call, served under the debugger
// to the Go SDK client sending other arguments. s skips the recorded call,
// so the client's call is past the tape's end: the screen says so (never
// "#-1"), and a, with no recorded answer to send, sends the divergence
// error: the client gets its -32090 and finishes instead of hanging.
func TestTmuxDebugPastTheEnd(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rec := filepath.Join(dir, "rec.jsonl")
	steps := "--steps=init,echo"
	out, err := exec.Command(client, "--tape", rec, steps, "--", server).CombinedOutput()
	if err != nil || !strings.Contains(string(out), `echo: "Echo: hi"`) {
		t.Fatalf("recording with sdkclient: %v\n%s", err, out)
	}
	echo := -1
	data, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.Contains(line, `"name":"echo"`) && strings.Contains(line, `"dir":"send"`) {
			echo = i
		}
	}
	if echo < 0 {
		t.Fatalf("no echo request on the tape:\n%s", data)
	}

	tt := startTmux(t, bin, "debug", rec, "--listen", "127.0.0.1:0")
	addr := tt.debugAddr()
	transcript := proc.NewTailBuffer(1 << 20)
	cmd := exec.Command(client, "--message", "bye", "--codes", steps, "--timeout", "30s", "--", bin, "attach", addr)
	cmd.Stdout, cmd.Stderr = transcript, transcript
	p := mcptest.Start(t, cmd)

	tt.waitFor(10*time.Second, fmt.Sprintf("client: DIVERGED at #%d", echo), "changed: params.arguments.message")
	tt.keys("s")
	s := tt.waitFor(5*time.Second, "client: DIVERGED after the tape's end", "expected (recorded): none")
	if strings.Contains(s, "#-1") {
		t.Errorf("the screen shows #-1:\n%s", s)
	}
	if !strings.Contains(s, fmt.Sprintf("its last request is #%d tools/call", echo)) {
		t.Errorf("the screen does not name the tape's last request, #%d:\n%s", echo, s)
	}
	tt.keys("a")
	waitClient(t, tt, p, 10*time.Second, transcript.String)
	if got := transcript.String(); !strings.Contains(got, "echo: echo: rpc error -32090") {
		t.Errorf("the client's echo got no divergence error:\n%s", got)
	}
	if s := tt.waitFor(5*time.Second, "client: disconnected", "run 1 ended"); strings.Contains(s, "#-1") {
		t.Errorf("the screen shows #-1:\n%s", s)
	}
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}

// TestTmuxDebugHTTPRunsMultiSession (issue 24 item 4): a tape of three
// recorded HTTP sessions (the go-sdk client run three times against the
// go-sdk server) is served by one tapedeck debug to the same client run
// twice: each client run starts at the top of the tape (the second used
// to be served the second recorded session, still as run 1), the status
// names the recorded session, and both runs follow the tape.
func TestTmuxDebugHTTPRunsMultiSession(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	url := mcptest.StartSDKServerHTTP(t)
	dir := t.TempDir()
	steps := "--steps=init,tools,echo"
	var all []byte
	for i := range 3 {
		one := filepath.Join(dir, fmt.Sprintf("rec%d.jsonl", i))
		if out, err := exec.Command(client, "--tape", one, steps, "--url", url).CombinedOutput(); err != nil {
			t.Fatalf("recording session %d with sdkclient over HTTP: %v\n%s", i+1, err, out)
		}
		b, err := os.ReadFile(one)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	rec := filepath.Join(dir, "rec.jsonl")
	if err := os.WriteFile(rec, all, 0o600); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(dir, "summary.txt")
	tt := startTmuxSize(t, 160, 45, "sh", "-c", fmt.Sprintf("%s debug %s --listen 127.0.0.1:0 2>%s; echo exit=$? >>%s; sleep 30", bin, rec, summary, summary))
	endpoint := "http://" + tt.debugAddr() + "/mcp"
	for run := 1; run <= 2; run++ {
		p := mcptest.Start(t, exec.Command(client, steps, "--timeout", "30s", "--url", endpoint))
		tt.waitFor(10*time.Second, fmt.Sprintf("run %d · recorded session 1/3", run))
		waitClient(t, tt, p, 15*time.Second, p.Output)
		if got := p.Output(); !strings.Contains(got, `echo: "Echo: hi"`) {
			t.Errorf("client run %d: the transcript lacks the recorded echo:\n%s", run, got)
		}
		tt.waitFor(10*time.Second, fmt.Sprintf("before: %d ✓ 0 ✗", run))
	}
	tt.keys("q")
	deadline := time.Now().Add(10 * time.Second)
	for {
		data, _ := os.ReadFile(summary)
		if s := string(data); strings.Contains(s, "exit=") {
			if !strings.Contains(s, "exit=0") || !strings.Contains(s, "2 client runs") || strings.Count(s, "followed the tape") != 2 ||
				strings.Count(s, "quiet after recorded session 1 of 3") != 2 {
				t.Errorf("debug's summary and exit status:\n%s", s)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("debug did not exit after q:\n%s", tt.screen())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
