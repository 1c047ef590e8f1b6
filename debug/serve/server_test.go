package serve

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// twoSessions is a tape of two recorded sessions of server s, each an
// initialize and a tools/call: over HTTP, two sessions may be open at once.
const twoSessions = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.001Z"}}
{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.002Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"A"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.003Z"}}
{"jsonrpc":"2.0","id":2,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.004Z"}}
{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:01.000Z"}}
{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:01.001Z"}}
{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:01.002Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"B"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:01.003Z"}}
{"jsonrpc":"2.0","id":2,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:01.004Z"}}
`

const initLine = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`

// textServer serves the tape text on listen with options o.
func textServer(t *testing.T, text, listen string, o Options) *Server {
	t.Helper()
	x := tape.NewIndex(bytes.NewReader([]byte(text)))
	if err := x.Extend(int64(len(text)), nil); err != nil {
		t.Fatal(err)
	}
	e, err := replay.NewEngine(x, replay.EngineOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", listen)
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

// httpPost posts body (with session id sid, if any) in the background and
// sends back "STATUS SESSION-ID BODY".
func httpPost(url, host, sid, body string) chan string {
	out := make(chan string, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			out <- "error " + err.Error()
			return
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			out <- "error " + err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		out <- fmt.Sprintf("%d %s %s", resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), b)
	}()
	return out
}

func waitAnswer(t *testing.T, c chan string) string {
	t.Helper()
	select {
	case v := <-c:
		return v
	case <-time.After(5 * time.Second):
		t.Fatal("no HTTP answer within 5 s")
		return ""
	}
}

// TestServerResolveNamesSession: two HTTP sessions diverge, each at
// its engine's divergence 1; the choice made for the first one shown goes
// to the first session's client, not to the newest session's.
func TestServerResolveNamesSession(t *testing.T) {
	s := textServer(t, twoSessions, "127.0.0.1:0", Options{})
	s.Deliver(0, []int{100})
	var sids [2]string
	for i := range sids {
		_, rest, _ := strings.Cut(waitAnswer(t, httpPost(s.URL(), "", "", initLine)), " ")
		sids[i], _, _ = strings.Cut(rest, " ")
	}
	var calls [2]chan string
	var divs [2]*debug.LiveDivergence
	for i, sid := range sids {
		calls[i] = httpPost(s.URL(), "", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"wrong"}}}`)
		divs[i] = nextEvent(t, s, debug.Diverged).Divergence
	}
	if divs[0].Session != sids[0] || divs[1].Session != sids[1] || divs[0].ID != 1 || divs[1].ID != 1 {
		t.Fatalf("divergences %q#%d, %q#%d; want %q#1, %q#1", divs[0].Session, divs[0].ID, divs[1].Session, divs[1].ID, sids[0], sids[1])
	}
	s.Resolve(divs[0], replay.SendError)
	select {
	case got := <-calls[0]:
		if !strings.Contains(got, "-32090") {
			t.Errorf("the first session's call got %q, want the -32090 error", got)
		}
	case got := <-calls[1]:
		t.Fatalf("the choice for the first session's divergence answered the second session: %s", got)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
	}
	s.Resolve(divs[1], replay.SendError)
	if got := waitAnswer(t, calls[1]); !strings.Contains(got, "-32090") {
		t.Errorf("the second session's call got %q, want the -32090 error", got)
	}
}

// TestServerRefusedHTTPClaimsNothing: requests the HTTP handler
// refuses (a wrong path, a foreign Host) neither connect a client nor lock
// the session to HTTP: a stdio client attaches afterwards.
func TestServerRefusedHTTPClaimsNothing(t *testing.T) {
	s := textServer(t, twoSessions, "127.0.0.1:0", Options{})
	if got := waitAnswer(t, httpPost("http://"+s.Addr()+"/wrong", "", "", initLine)); !strings.HasPrefix(got, "404 ") {
		t.Fatalf("POST to /wrong: %q, want 404", got)
	}
	if got := waitAnswer(t, httpPost(s.URL(), "evil.example:80", "", initLine)); !strings.HasPrefix(got, "403 ") {
		t.Fatalf("POST with a foreign Host: %q, want 403", got)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, initLine+"\n")
	// The first connection reported is this one: the refused POSTs
	// connected nothing.
	if ev := nextEvent(t, s, debug.Connected); ev.Transport != "stdio" {
		t.Fatalf("connected over %q, want stdio", ev.Transport)
	}
	// Now HTTP is refused, even a request the handler would accept.
	if got := waitAnswer(t, httpPost(s.URL(), "", "", initLine)); !strings.HasPrefix(got, "409 ") || !strings.Contains(got, "attached over stdio") {
		t.Fatalf("POST while a stdio client is attached: %q, want 409", got)
	}
}

// TestServerDropsDeadClientsOutputs: what was meant for a stdio
// client that went away (an answer not yet delivered, a divergence
// awaiting a choice) never reaches the next client, and the disconnect
// counts it.
func TestServerDropsDeadClientsOutputs(t *testing.T) {
	s := textServer(t, twoSessions, "127.0.0.1:0", Options{})
	c1, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c1, `{"jsonrpc":"2.0","id":"client1-init","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`+"\n")
	nextEvent(t, s, debug.Progress)
	io.WriteString(c1, `{"jsonrpc":"2.0","id":"client1-call","method":"tools/call","params":{"name":"nope"}}`+"\n")
	nextEvent(t, s, debug.Diverged)
	c1.Close() // client 1 dies before playback delivered its answer
	ev := nextEvent(t, s, debug.Disconnected)
	if ev.Dropped != 1 || ev.Abandoned != 1 {
		t.Errorf("disconnect dropped %d answers and %d divergences, want 1 and 1", ev.Dropped, ev.Abandoned)
	}

	c2, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	io.WriteString(c2, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	nextEvent(t, s, debug.Connected)
	s.Deliver(0, []int{100})
	c2.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
	if l, err := bufio.NewReader(c2).ReadString('\n'); err == nil {
		t.Errorf("client 2 received what was meant for client 1: %s", l)
	}
}

// bigAnswersTape records n tools/calls answered with 512 KiB each: more than a
// socket buffers for a client that does not read.
func bigAnswersTape(n int) string {
	var b strings.Builder
	big := strings.Repeat("x", 512<<10)
	b.WriteString(`{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:00.000Z"}}` + "\n")
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"img","arguments":{"i":%d}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.%03dZ"}}`+"\n", i, i, i)
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"%s"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.%03dZ"}}`+"\n", i, big, i)
	}
	return b.String()
}

// stuckClient attaches a client that sends n calls and never reads, and
// has the session deliver their 512 KiB answers, as the debugger does.
func stuckClient(t *testing.T, s *Server, n int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for i := 1; i <= n; i++ {
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"img","arguments":{"i":%d}}}`+"\n", i, i)
	}
	for {
		if ev := nextEvent(t, s, debug.Progress); ev.Reached == 2*n-1 {
			break
		}
	}
	go s.Deliver(0, []int{2 * n}) // as the debugger's tea.Cmd does
	return c
}

// TestServerCloseWithStuckClient: quitting the debugger returns at
// once while a write to an attached client that does not read is blocked.
func TestServerCloseWithStuckClient(t *testing.T) {
	s := textServer(t, bigAnswersTape(40), "127.0.0.1:0", Options{WriteTimeout: time.Minute})
	stuckClient(t, s, 40)
	time.Sleep(300 * time.Millisecond) // the write fills the socket's buffers and blocks
	done := make(chan struct{})
	go func() { s.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(3 * time.Second):
		t.Fatal("Close blocked 3 s behind a write to a client that does not read")
	}
}

// TestServerDropsClientNotReading: a client that leaves the
// session's answers unread for the write timeout is disconnected.
func TestServerDropsClientNotReading(t *testing.T) {
	s := textServer(t, bigAnswersTape(40), "127.0.0.1:0", Options{WriteTimeout: 200 * time.Millisecond})
	stuckClient(t, s, 40)
	if ev := nextEvent(t, s, debug.Failed); !strings.Contains(ev.Err.Error(), "read nothing for 200ms") {
		t.Errorf("failure %v, want one saying the client read nothing", ev.Err)
	}
	if ev := nextEvent(t, s, debug.Disconnected); ev.Dropped == 0 {
		t.Errorf("disconnect dropped no answers, want the ones not written")
	}
}

// TestServerUnspecifiedAddr: on 0.0.0.0 the session names its
// loopback address, which the Host check accepts; a host given in
// AllowHosts is accepted too.
func TestServerUnspecifiedAddr(t *testing.T) {
	s := textServer(t, twoSessions, "0.0.0.0:0", Options{AllowHosts: []string{"myhost"}})
	if !strings.HasPrefix(s.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q, want a loopback one", s.URL())
	}
	s.Deliver(0, []int{100})
	if got := waitAnswer(t, httpPost(s.URL(), "", "", initLine)); !strings.HasPrefix(got, "200 ") {
		t.Fatalf("POST to %s: %q, want 200", s.URL(), got)
	}
	_, port, _ := net.SplitHostPort(s.Addr())
	if got := waitAnswer(t, httpPost(s.URL(), "myhost:"+port, "", initLine)); !strings.HasPrefix(got, "200 ") {
		t.Fatalf("POST with Host myhost: %q, want 200", got)
	}
}

// sessionTapeIndex is a small stdio session: initialize, tools/list.
func sessionTapeIndex(t *testing.T) *tape.Index {
	t.Helper()
	var buf bytes.Buffer
	w := tape.NewWriter(&buf)
	t0 := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	for i, l := range []struct {
		dir tape.Dir
		msg string
	}{
		{tape.DirSend, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rec","version":"1"}}}`},
		{tape.DirRecv, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}`},
		{tape.DirSend, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`},
		{tape.DirRecv, `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}`},
	} {
		if err := w.Write([]byte(l.msg), tape.Meta{Dir: l.dir, Server: "s", Time: t0.Add(time.Duration(i) * time.Millisecond)}); err != nil {
			t.Fatal(err)
		}
	}
	x := tape.NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

func newServer(t *testing.T) *Server {
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
	s, err := NewServer(x, e, ln, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// nextEvent waits for the session's next event of kind k, skipping others.
func nextEvent(t *testing.T, s *Server, k debug.EventKind) debug.Event {
	t.Helper()
	c := make(chan debug.Event, 1)
	go func() {
		for {
			if ev := s.Next(); ev.Kind == k || ev.Kind == debug.Closed {
				c <- ev
				return
			}
		}
	}()
	select {
	case ev := <-c:
		if ev.Kind != k {
			t.Fatalf("session closed while waiting for event %d", k)
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no event %d within 5 s", k)
		return debug.Event{}
	}
}

// TestServerStdio: a client attached over stdio lines gets its
// answer only once delivered; an HTTP client is refused meanwhile.
func TestServerStdio(t *testing.T) {
	s := newServer(t)
	if ev := nextEvent(t, s, debug.Progress); ev.Reached != -1 || ev.Awaiting != 0 {
		t.Fatalf("initial progress %+v, want -1, 0", ev)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	if ev := nextEvent(t, s, debug.Connected); ev.Transport != "stdio" {
		t.Fatalf("connected over %q, want stdio", ev.Transport)
	}
	if ev := nextEvent(t, s, debug.Progress); ev.Reached != 0 || ev.Awaiting != 2 {
		t.Fatalf("progress %+v, want reached 0, awaiting 2", ev)
	}
	lines := connLines(c, 4)
	select {
	case l := <-lines:
		t.Fatalf("answer before delivery: %s", l)
	case <-time.After(100 * time.Millisecond):
	}
	resp, err := http.Post(s.URL(), "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Errorf("HTTP client while a stdio client is attached: %s, want 409", resp.Status)
	}
	s.Deliver(0, []int{0, 1})
	select {
	case l := <-lines:
		if !strings.Contains(l, `"id":"a"`) || !strings.Contains(l, `"serverInfo"`) {
			t.Fatalf("answer %s", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s of delivery")
	}
}

// TestServerHTTP: a Streamable HTTP client on the same address; a
// divergence waits for Resolve; a stdio client is refused meanwhile.
func TestServerHTTP(t *testing.T) {
	s := newServer(t)
	post := func(body string, sid string) chan string {
		out := make(chan string, 1)
		go func() {
			req, _ := http.NewRequest(http.MethodPost, s.URL(), strings.NewReader(body))
			req.Header.Set("Accept", "application/json, text/event-stream")
			if sid != "" {
				req.Header.Set("Mcp-Session-Id", sid)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				out <- "error: " + err.Error()
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			out <- resp.Header.Get("Mcp-Session-Id") + " " + string(b)
		}()
		return out
	}
	wait := func(c chan string) string {
		t.Helper()
		select {
		case v := <-c:
			return v
		case <-time.After(5 * time.Second):
			t.Fatal("no HTTP answer within 5 s")
			return ""
		}
	}
	init := post(`{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`, "")
	if ev := nextEvent(t, s, debug.Connected); ev.Transport != "http" {
		t.Fatalf("connected over %q, want http", ev.Transport)
	}
	if ev := nextEvent(t, s, debug.Progress); ev.Reached != 0 || ev.Awaiting != 2 {
		t.Fatalf("progress %+v, want reached 0, awaiting 2", ev)
	}
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(c, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n")
	refusal, _ := bufio.NewReader(c).ReadString('\n')
	c.Close()
	if !strings.Contains(refusal, "serves an HTTP client") {
		t.Errorf("stdio client while an HTTP client is connected: %q, want a refusal", refusal)
	}
	s.Deliver(0, []int{1})
	got := wait(init)
	sid, body, _ := strings.Cut(got, " ")
	if sid == "" || !strings.Contains(body, `"serverInfo"`) {
		t.Fatalf("initialize answer %q", got)
	}
	call := post(`{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"x"}}`, sid)
	ev := nextEvent(t, s, debug.Diverged)
	if ev.Divergence.Expected != 2 || !strings.Contains(ev.Divergence.Message, "did not match") {
		t.Fatalf("divergence %+v", ev.Divergence)
	}
	s.Resolve(ev.Divergence, replay.SendError)
	if got := wait(call); !strings.Contains(got, "-32090") {
		t.Fatalf("after Resolve(replay.SendError): %q, want the -32090 error", got)
	}
}

// TestServerTwoDivergences: two divergences in a row are resolved in
// the order they happened, and both requests get their answer.
func TestServerTwoDivergences(t *testing.T) {
	s := newServer(t)
	c, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lines := connLines(c, 8)
	var divs []*debug.LiveDivergence
	for _, id := range []string{"101", "102"} {
		if _, err := io.WriteString(c, `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"nope"}}`+"\n"); err != nil {
			t.Fatal(err)
		}
		ev := nextEvent(t, s, debug.Diverged)
		if ev.Divergence == nil {
			t.Fatalf("divergence event without a divergence")
		}
		divs = append(divs, ev.Divergence)
	}
	s.Resolve(divs[0], replay.SendError)
	s.Resolve(divs[1], replay.SendError)
	got := map[string]bool{}
	for len(got) < 2 {
		select {
		case l := <-lines:
			for _, id := range []string{"101", "102"} {
				if strings.Contains(l, `"id":`+id+`,"error":{"code":-32090`) {
					got[id] = true
				}
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("answered %v within 5 s, want both 101 and 102", got)
		}
	}
}

// TestServerDivergenceShowsClientBytes: the divergence reported carries
// the request exactly as the client sent it, over either transport: its
// key order and its _meta, which a re-encoding would lose.
func TestServerDivergenceShowsClientBytes(t *testing.T) {
	const sent = `{"params":{"arguments":{"z":1,"a":2},"name":"x","_meta":{"progressToken":7}},"method":"tools/call","_meta":{"trace":"t1"},"id":"b","jsonrpc":"2.0"}`
	t.Run("stdio", func(t *testing.T) {
		s := newServer(t)
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		io.WriteString(c, `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`+"\n")
		io.WriteString(c, sent+"\n")
		if got := nextEvent(t, s, debug.Diverged).Divergence.Raw; string(got) != sent {
			t.Errorf("the divergence shows\n%s\nwant the bytes sent\n%s", got, sent)
		}
	})
	t.Run("http", func(t *testing.T) {
		s := newServer(t)
		s.Deliver(0, []int{100})
		_, rest, _ := strings.Cut(waitAnswer(t, httpPost(s.URL(), "", "", initLine)), " ")
		sid, _, _ := strings.Cut(rest, " ")
		call := httpPost(s.URL(), "", sid, sent)
		d := nextEvent(t, s, debug.Diverged).Divergence
		if string(d.Raw) != sent {
			t.Errorf("the divergence shows\n%s\nwant the bytes sent\n%s", d.Raw, sent)
		}
		s.Resolve(d, replay.SendError)
		waitAnswer(t, call)
	})
}

// TestServerAnswerPastTheEnd: a one-call tape, a client sending other
// arguments, the recorded call skipped (s), then "answer as recorded" (a)
// where the client went past the tape's end: there is no recorded answer,
// so the client gets the divergence error instead of waiting for ever, over
// either transport, and the divergence says where it happened, never #-1.
func TestServerAnswerPastTheEnd(t *testing.T) {
	oneCall := strings.Join(strings.SplitAfter(twoSessions, "\n")[:5], "")
	const call = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"other"}}}`
	// resolve skips the recorded call, checks the divergence past the
	// tape's end and answers it as recorded.
	resolve := func(t *testing.T, s *Server) {
		t.Helper()
		d := nextEvent(t, s, debug.Diverged).Divergence
		if d.Expected != 3 || d.Where != "at #3" {
			t.Fatalf("first divergence at %d (%q), want the recorded call #3", d.Expected, d.Where)
		}
		s.Resolve(d, replay.SkipRecorded)
		d = nextEvent(t, s, debug.Diverged).Divergence
		if want := "after the tape's end (its last request is #3 tools/call)"; d.Expected != -1 || d.Where != want {
			t.Fatalf("after the skip: divergence at %d (%q), want -1 (%q)", d.Expected, d.Where, want)
		}
		s.Resolve(d, replay.AnswerRecorded)
	}
	t.Run("stdio", func(t *testing.T) {
		s := textServer(t, oneCall, "127.0.0.1:0", Options{})
		s.Deliver(0, []int{100})
		c, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		lines := connLines(c, 8)
		io.WriteString(c, initLine+"\n"+call+"\n")
		resolve(t, s)
		for {
			select {
			case l := <-lines:
				if strings.Contains(l, `"id":2,"error":{"code":-32090`) {
					return
				}
			case <-time.After(5 * time.Second):
				t.Fatal("the client's call had no answer within 5 s, want the -32090 error")
			}
		}
	})
	t.Run("http", func(t *testing.T) {
		s := textServer(t, oneCall, "127.0.0.1:0", Options{})
		s.Deliver(0, []int{100})
		_, rest, _ := strings.Cut(waitAnswer(t, httpPost(s.URL(), "", "", initLine)), " ")
		sid, _, _ := strings.Cut(rest, " ")
		answer := httpPost(s.URL(), "", sid, call)
		resolve(t, s)
		if got := waitAnswer(t, answer); !strings.Contains(got, `"id":2,"error":{"code":-32090`) {
			t.Errorf("the client's call got %q, want the -32090 error", got)
		}
	})
}

// connLines reads c's lines into a channel with room for n, until c ends.
func connLines(c net.Conn, n int) <-chan string {
	lines := make(chan string, n)
	go func() {
		br := bufio.NewReader(c)
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				return
			}
			lines <- l
		}
	}()
	return lines
}
