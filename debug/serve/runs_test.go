package serve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/replay"
)

// events collects a server's events, so a test can wait for the n-th of a
// kind without another wait swallowing it.
type events struct {
	mu  sync.Mutex
	all []debug.Event
}

func collect(s *Server) *events {
	ev := &events{}
	go func() {
		for {
			e := s.Next()
			ev.mu.Lock()
			ev.all = append(ev.all, e)
			ev.mu.Unlock()
			if e.Kind == debug.Closed {
				return
			}
		}
	}()
	return ev
}

// wait returns the n-th event of kind k (from 1), waiting up to 5 s.
func (ev *events) wait(t *testing.T, k debug.EventKind, n int) debug.Event {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		ev.mu.Lock()
		seen := 0
		for _, e := range ev.all {
			if e.Kind == k {
				if seen++; seen == n {
					ev.mu.Unlock()
					return e
				}
			}
		}
		ev.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("no event %d number %d within 5 s", k, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// count returns how many events of kind k came so far.
func (ev *events) count(k debug.EventKind) int {
	ev.mu.Lock()
	defer ev.mu.Unlock()
	n := 0
	for _, e := range ev.all {
		if e.Kind == k {
			n++
		}
	}
	return n
}

// serverWith is newServer with options o.
func serverWith(t *testing.T, o Options) *Server {
	t.Helper()
	x := sessionTapeIndex(t)
	e, err := replay.NewEngine(x, replay.EngineOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewServer(x, e, ln, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// stdioRun attaches a stdio client, sends initialize with id, has the
// answer delivered and returns it; the client is closed.
func stdioRun(t *testing.T, s *Server, id string) string {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":`+id+`,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	nextEvent(t, s, debug.Progress)
	s.Deliver(0, []int{0, 1})
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	l, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		t.Fatalf("no answer to initialize: %v", err)
	}
	return l
}

// A debug session serves its client again and again: when a stdio client
// goes away its run ends (reported with its replay report) and the next
// client starts at the top of the tape.
func TestServerStdioRuns(t *testing.T) {
	s := serverWith(t, Options{})
	for run := 1; run <= 2; run++ {
		id := `"run` + string(rune('0'+run)) + `"`
		got := stdioRun(t, s, id)
		if !strings.Contains(got, `"id":`+id) || !strings.Contains(got, `"serverInfo"`) {
			t.Fatalf("run %d: the answer to initialize is %s", run, got)
		}
		ev := nextEvent(t, s, debug.RunEnded)
		if r := ev.Run; r == nil || r.Run != run || r.Transport != "stdio" || r.Matched != 1 || r.Unused != 1 || r.Divergences != 0 {
			t.Fatalf("run %d ended: %+v, want run %d over stdio, 1 matched, 1 unused (tools/list)", run, ev.Run, run)
		}
	}
	if runs := s.Runs(); len(runs) != 2 || runs[1].Ended != "the client disconnected" {
		t.Errorf("Runs() = %+v, want two ended runs", runs)
	}
}

// A port probe (connect, a newline, nothing else) claims nothing: an HTTP
// client is served after it, where a stdio claim would have refused it.
func TestServerProbeClaimsNothing(t *testing.T) {
	s := serverWith(t, Options{ProbeTimeout: 200 * time.Millisecond})
	probe, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(probe, "\n\r\n")
	silent, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	defer probe.Close()
	time.Sleep(300 * time.Millisecond) // past the probe timeout: both closed
	_ = silent.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := silent.Read(make([]byte, 1)); err == nil {
		t.Errorf("a connection that sent nothing is still open after the probe timeout")
	}
	c := httpPost(s.URL(), "", "", initLine)
	nextEvent(t, s, debug.Progress)
	s.Deliver(0, []int{0, 1})
	if got := waitAnswer(t, c); !strings.HasPrefix(got, "200 ") {
		t.Fatalf("HTTP client after the probes: %q, want 200", got)
	}
}

// Over HTTP a run ends when the client ends its session (DELETE), when it
// starts a new session though the tape's only session was served, and
// when it stays quiet after the tape's end; each next run starts from the
// top.
func TestServerHTTPRuns(t *testing.T) {
	s := serverWith(t, Options{RunIdle: 150 * time.Millisecond})
	ev := collect(s)
	initialize := func() (sid string) {
		t.Helper()
		before := ev.count(debug.Progress)
		c := httpPost(s.URL(), "", "", initLine)
		ev.wait(t, debug.Progress, before+1)
		s.Deliver(0, []int{0, 1})
		got := waitAnswer(t, c)
		f := strings.Fields(got)
		if len(f) < 3 || f[0] != "200" || !strings.Contains(got, `"serverInfo"`) {
			t.Fatalf("initialize: %q", got)
		}
		return f[1]
	}
	// Run 1 ends with DELETE.
	sid := initialize()
	req, _ := http.NewRequest(http.MethodDelete, s.URL(), nil)
	req.Header.Set("Mcp-Session-Id", sid)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if e := ev.wait(t, debug.RunEnded, 1); e.Run.Run != 1 || e.Run.Ended != "the client ended its session" {
		t.Fatalf("after DELETE: %+v", e.Run)
	}
	// Run 2 ends when a new initialize comes, which starts run 3.
	initialize()
	sid = initialize()
	if e := ev.wait(t, debug.RunEnded, 2); e.Run.Run != 2 || e.Run.Ended != "the client started a new session" {
		t.Fatalf("after a second initialize: %+v", e.Run)
	}
	if e := ev.wait(t, debug.Connected, 3); e.RunNo != 3 {
		t.Fatalf("the client after run 2 joined run %d, want 3", e.RunNo)
	}
	// Run 3: the whole tape, then quiet.
	before := ev.count(debug.Progress)
	c := httpPost(s.URL(), "", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
	ev.wait(t, debug.Progress, before+1)
	s.Deliver(0, []int{2, 3})
	if got := waitAnswer(t, c); !strings.Contains(got, `"tools":[]`) {
		t.Fatalf("tools/list: %q", got)
	}
	e := ev.wait(t, debug.RunEnded, 3)
	if e.Run.Run != 3 || e.Run.Ended != "the client went quiet after the tape's end" || e.Run.Matched != 2 || e.Run.Unused != 0 {
		t.Fatalf("after the tape's end: %+v", e.Run)
	}
}

// A GET the handler refuses (no session to stream) claims nothing: a stdio
// client attaches after it (it used to claim the session for HTTP, and the
// attach was turned away).
func TestServerRefusedGetClaimsNothing(t *testing.T) {
	s := serverWith(t, Options{})
	resp, err := http.Get(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode < 400 {
		t.Fatalf("GET without a session: %s, want it refused", resp.Status)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, initLine+"\n")
	if ev := nextEvent(t, s, debug.Connected); ev.Transport != "stdio" {
		t.Fatalf("connected over %q, want stdio", ev.Transport)
	}
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if b, _ := io.ReadAll(c); strings.Contains(string(b), "one kind of client") {
		t.Fatalf("the attached client was turned away: %q", b)
	}
}

// A tape of several recorded HTTP sessions (issue 24 item 4): a client run
// that opens one session and goes quiet ends its run, so the same client
// run again starts at the top and is matched against recorded session 1,
// not 2; a client that opens its next session promptly stays in its run,
// and is told which recorded session it is served ("client session 2 →
// recorded session 2 of 2").
func TestServerHTTPRunsMultiSession(t *testing.T) {
	s := textServer(t, twoSessions, "127.0.0.1:0", Options{RunIdle: 150 * time.Millisecond})
	ev := collect(s)
	// oneSession runs one client session: initialize, tools/call echo A,
	// and with del a DELETE (the go-sdk's client sends one, the
	// TypeScript SDK's does not).
	oneSession := func(del bool) {
		t.Helper()
		s.Deliver(0, []int{100})
		got := waitAnswer(t, httpPost(s.URL(), "", "", initLine))
		f := strings.Fields(got)
		if len(f) < 3 || f[0] != "200" || !strings.Contains(got, `"serverInfo"`) {
			t.Fatalf("initialize: %q", got)
		}
		c := httpPost(s.URL(), "", f[1], `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"A"}}}`)
		time.Sleep(20 * time.Millisecond)
		s.Deliver(0, []int{100})
		if got := waitAnswer(t, c); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"content":[]`) {
			t.Fatalf("tools/call echo A: %q", got)
		}
		if del {
			req, _ := http.NewRequest(http.MethodDelete, s.URL(), nil)
			req.Header.Set("Mcp-Session-Id", f[1])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
		}
	}
	for run := 1; run <= 2; run++ {
		oneSession(run == 2)
		if e := ev.wait(t, debug.Connected, run); e.RunNo != run || e.Session != 1 || e.Sessions != 2 {
			t.Fatalf("client run %d connected as run %d, session %d of %d; want run %d, session 1 of 2", run, e.RunNo, e.Session, e.Sessions, run)
		}
		e := ev.wait(t, debug.RunEnded, run)
		if e.Run.Run != run || e.Run.Ended != "the client went quiet after recorded session 1 of 2" || e.Run.Divergences != 0 || e.Run.Matched != 2 {
			t.Fatalf("client run %d ended: %+v; want run %d, quiet after recorded session 1 of 2, 2 matched, no divergence", run, e.Run, run)
		}
	}
	if n := ev.count(debug.Diverged); n != 0 {
		t.Fatalf("%d divergences; the second client run was not served from the top", n)
	}
	// Run 3 opens its two sessions one after the other, promptly.
	s.Deliver(0, []int{100})
	waitAnswer(t, httpPost(s.URL(), "", "", initLine))
	waitAnswer(t, httpPost(s.URL(), "", "", initLine))
	if e := ev.wait(t, debug.Connected, 4); e.RunNo != 3 || e.Session != 2 || e.Sessions != 2 {
		t.Fatalf("the client's second session: run %d, session %d of %d; want run 3, session 2 of 2", e.RunNo, e.Session, e.Sessions)
	}
}
