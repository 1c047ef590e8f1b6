package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/debug/serve"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// TestDebugRefusesRemoteListen: like replay, debug serves only loopback
// addresses unless --allow-remote.
func TestDebugRefusesRemoteListen(t *testing.T) {
	path := writeFile(t, "s.jsonl", session)
	_, errOut, code := runCLI(t, "debug", path, "--server", "everything", "--listen", "0.0.0.0:0")
	if code != 1 || !strings.Contains(errOut, `--listen "0.0.0.0:0" is not a loopback address`) || !strings.Contains(errOut, "--allow-remote") {
		t.Fatalf("exit %d, stderr %q; want 1 and the loopback refusal", code, errOut)
	}
}

// TestAttachRefused: attach exits 1 with the session's message when the
// session refuses it (another client is attached), instead of 0.
func TestAttachRefused(t *testing.T) {
	x, err := tape.OpenIndex(writeFile(t, "s.jsonl", session))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	e, err := replay.NewEngine(x, replay.EngineOptions{Server: "everything", Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.NewServer(x, e, ln, serve.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	first, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	io.WriteString(first, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n")
	// Next blocks until an event: wait for Connected beside it, so that a
	// client that never connects fails the test instead of hanging it.
	// (It ends with Closed when the server closes.)
	connected := make(chan debug.EventKind, 1)
	go func() {
		k := s.Next().Kind
		for k != debug.Connected && k != debug.Closed {
			k = s.Next().Kind
		}
		connected <- k
	}()
	select {
	case k := <-connected:
		if k != debug.Connected {
			t.Fatal("the server closed before the first client connected")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first client did not connect within 5 s")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	err = run(ctx, []string{"attach", s.Addr()}, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), &out, &errb)
	code := exitCode(err, &errb)
	if code != 1 || !strings.Contains(errb.String(), "refused the client: a client is already attached") {
		t.Fatalf("exit %d, stderr %q, stdout %q; want 1 and the refusal", code, errb.String(), out.String())
	}
}

// TestAttachCutOff: when the session closes the connection while the
// client is still sending (the debugger quit, or restarted the run),
// attach exits 1 and says so; after the client closed its input, the
// session's close is the normal end (exit 0).
func TestAttachCutOff(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Read one line, then hang up.
			buf := make([]byte, 1)
			for {
				if _, err := c.Read(buf); err != nil || buf[0] == '\n' {
					break
				}
			}
			c.Close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The client keeps its input open: cut off.
	pr, pw := io.Pipe()
	defer pw.Close()
	go io.WriteString(pw, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n")
	var out, errb bytes.Buffer
	err = run(ctx, []string{"attach", ln.Addr().String()}, pr, &out, &errb)
	if code := exitCode(err, &errb); code != 1 || !strings.Contains(errb.String(), "closed the connection while the client was still sending") {
		t.Errorf("cut off: exit %d, stderr %q; want 1 and why", code, errb.String())
	}
	// The client sends its line and closes its input: a normal end.
	errb.Reset()
	err = run(ctx, []string{"attach", ln.Addr().String()}, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), &out, &errb)
	if code := exitCode(err, &errb); code != 0 {
		t.Errorf("after the client's end: exit %d, stderr %q; want 0", code, errb.String())
	}
}

// debug's summary on exit: each run's verdict, and exit 1 when one
// departed from the tape.
func TestDebugSummary(t *testing.T) {
	var b bytes.Buffer
	ok := debug.RunReport{Run: 1, Transport: "stdio", Ended: "the client disconnected", Requests: 4, Matched: 4}
	x := demoIndex(t)
	if err := debugSummary(&b, []debug.RunReport{ok}, x); err != nil || !strings.Contains(b.String(), "run 1 (stdio; the client disconnected): followed the tape; 4 of 4 requests matched") {
		t.Errorf("one good run: %v\n%s", err, b.String())
	}
	b.Reset()
	bad := debug.RunReport{Run: 2, Transport: "http", Ended: "restarted", Requests: 3, Matched: 2, Divergences: 1, Unused: 1,
		Report: replay.Report{Divergences: []replay.Divergence{
			{Expected: 5, Reason: replay.ReasonMismatch, Message: "replay mismatch for tools/call"},
			{Expected: -1, Reason: replay.ReasonBeyondEnd, Message: "replay mismatch: came after the last recorded request"},
		}}}
	err := debugSummary(&b, []debug.RunReport{ok, bad}, x)
	if code := exitCode(err, &b); code != 1 || !strings.Contains(b.String(), "run 2 (http; restarted): 1 divergence") || !strings.Contains(b.String(), "diverged at #5: replay mismatch") || !strings.Contains(b.String(), "1 client run of 2 departed") {
		t.Errorf("a diverged run: exit %d\n%s", code, b.String())
	}
	// Past the tape's end no recorded request was expected: the summary
	// names the tape's last request, never "#-1".
	last := -1
	for i := range x.Len() {
		if e := x.Entry(i); e.Kind == tape.KindRequest && e.Dir == tape.DirSend {
			last = i
		}
	}
	want := fmt.Sprintf("diverged after the tape's end (its last request is #%d %s): replay mismatch", last, x.Entry(last).Method)
	if strings.Contains(b.String(), "#-1") || !strings.Contains(b.String(), want) {
		t.Errorf("a divergence past the tape's end: want %q and no #-1:\n%s", want, b.String())
	}
	b.Reset()
	if err := debugSummary(&b, nil, x); err != nil || !strings.Contains(b.String(), "no client connected") {
		t.Errorf("no run: %v %q", err, b.String())
	}
}
