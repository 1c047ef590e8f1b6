package replay

import (
	"github.com/tapedeck/tapedeck/internal/sse"

	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// hline is one line of a test tape recorded over HTTP: dir ("send", "recv"
// or a "$http/..." lifecycle method), JSON, and the extra _meta keys.
type hline struct {
	dir  string
	msg  string
	meta map[string]any
}

func buildHTTPIndex(t testing.TB, lines ...hline) *tape.Index {
	t.Helper()
	var buf bytes.Buffer
	w := tape.NewWriter(&buf)
	for i, l := range lines {
		extra := map[string]any{"transport": "http"}
		for k, v := range l.meta {
			extra[k] = v
		}
		m := tape.Meta{Server: "s", Time: t0.Add(time.Duration(i) * time.Millisecond), Extra: extra}
		var err error
		switch l.dir {
		case "send":
			m.Dir = tape.DirSend
			err = w.Write([]byte(l.msg), m)
		case "recv":
			m.Dir = tape.DirRecv
			err = w.Write([]byte(l.msg), m)
		default:
			m.Dir = tape.DirLifecycle
			err = w.WriteLifecycle(l.dir, nil, m)
		}
		if err != nil {
			t.Fatalf("write tape line %d: %v", i+1, err)
		}
	}
	x := tape.NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatalf("index tape: %v", err)
	}
	return x
}

func post202(sess string) map[string]any {
	return map[string]any{"http": "POST", "status": 202, "session": sess}
}
func postSSE(sess string) map[string]any {
	return map[string]any{"http": "POST", "status": 200, "session": sess, "sse": true}
}
func onGet(sess string) map[string]any {
	return map[string]any{"http": "GET", "status": 200, "session": sess, "sse": true}
}

// sessionHTTPTape is a 2025-era session: initialize answered on SSE, the
// standalone GET stream carrying a roots/list request and a log message,
// one tool call, DELETE.
func sessionHTTPTape(t testing.TB) *tape.Index {
	return buildHTTPIndex(t,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{}},"clientInfo":{"name":"rec","version":"1"}}}`, postSSE("rec-session")},
		hline{"recv", `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}`, postSSE("rec-session")},
		hline{"$http/get", "", onGet("rec-session")},
		hline{"send", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, post202("rec-session")},
		hline{"send", `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, postSSE("rec-session")},
		hline{"recv", `{"jsonrpc":"2.0","id":0,"method":"roots/list"}`, onGet("rec-session")},
		hline{"send", `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`, post202("rec-session")},
		hline{"recv", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"roots: 0"}}`, onGet("rec-session")},
		hline{"recv", `{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}`, postSSE("rec-session")},
		hline{"$http/delete", "", map[string]any{"http": "DELETE", "status": 200, "session": "rec-session"}},
	)
}

// statelessHTTPTape is a 2026-07-28 exchange: server/discover, then a
// request the server rejected with HTTP 400.
func statelessHTTPTape(t testing.TB) *tape.Index {
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	return buildHTTPIndex(t,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + meta + `}}`, map[string]any{"http": "POST", "status": 200}},
		hline{"recv", `{"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","supportedVersions":["2026-07-28"]}}`, map[string]any{"http": "POST", "status": 200, "sse": true}},
		hline{"send", `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, map[string]any{"http": "POST", "status": 400}},
		hline{"recv", `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"missing _meta"}}`, map[string]any{"http": "POST", "status": 400}},
		hline{"send", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{}}}`, map[string]any{"http": "POST", "status": 200}},
		hline{"recv", `{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[]}}`, map[string]any{"http": "POST", "status": 200, "sse": true}},
	)
}

type testServer struct {
	t   *testing.T
	h   *HTTPHandler
	srv *httptest.Server
	url string

	mu   sync.Mutex
	divs []Divergence
}

func newTestServer(t *testing.T, x *tape.Index, opts EngineOptions) *testServer {
	t.Helper()
	e, err := NewEngine(x, opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := &testServer{t: t}
	ts.h = handlerFor(t, e, HTTPOptions{
		OnDivergence: func(d Divergence) { ts.mu.Lock(); ts.divs = append(ts.divs, d); ts.mu.Unlock() },
		NewSessionID: func() string { return "live-session" },
		AllowOrigins: []string{"https://app.example"},
	})
	ts.srv = httptest.NewServer(ts.h)
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(func() { ts.h.Close(); ts.srv.Close() })
	return ts
}

// do sends a request and returns the response with its body read.
func (ts *testServer) do(method, body string, header ...string) (*http.Response, string) {
	ts.t.Helper()
	resp, b, err := ts.try(method, body, header...)
	if err != nil {
		ts.t.Fatal(err)
	}
	return resp, b
}

// doAsync is do for a goroutine other than the test's, where t.Fatal must
// not be called: a failure is reported with t.Error and gives an empty
// response (status 0).
func (ts *testServer) doAsync(method, body string, header ...string) (*http.Response, string) {
	resp, b, err := ts.try(method, body, header...)
	if err != nil {
		ts.t.Error(err)
		return &http.Response{}, ""
	}
	return resp, b
}

// try sends a request and returns the response with its body read.
func (ts *testServer) try(method, body string, header ...string) (*http.Response, string, error) {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, ts.url, r)
	if err != nil {
		return nil, "", err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// events returns the data of an SSE body's events.
func events(t *testing.T, body string) []string {
	t.Helper()
	var out []string
	if err := sse.Each(strings.NewReader(body), func(ev sse.Event) bool { out = append(out, string(ev.Data)); return true }); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestHTTPSession(t *testing.T) {
	ts := newTestServer(t, sessionHTTPTape(t), EngineOptions{})
	init := `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"2"}}}`

	if resp, body := ts.do(http.MethodGet, ""); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("GET before initialize: %s %q, want 400", resp.Status, body)
	}
	resp, body := ts.do(http.MethodPost, init)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "live-session" || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("initialize: %s, headers %v", resp.Status, resp.Header)
	}
	if ev := events(t, body); len(ev) != 1 || !strings.Contains(ev[0], `"id":"a"`) || !strings.Contains(ev[0], `"protocolVersion":"2025-06-18"`) {
		t.Fatalf("initialize answer events %q", ev)
	}
	for _, tt := range []struct {
		name   string
		header []string
		status int
	}{
		{"no session", nil, http.StatusBadRequest},
		{"unknown session", []string{"Mcp-Session-Id", "rec-session"}, http.StatusNotFound},
	} {
		if resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, tt.header...); resp.StatusCode != tt.status {
			t.Errorf("%s: %s %q, want %d", tt.name, resp.Status, body, tt.status)
		}
	}

	// The standalone stream, read as it comes.
	sid := []string{"Mcp-Session-Id", "live-session", "MCP-Protocol-Version", "2025-06-18"}
	getReq, _ := http.NewRequest(http.MethodGet, ts.url, nil)
	getReq.Header.Set("Mcp-Session-Id", "live-session")
	getResp, err := ts.srv.Client().Do(getReq)
	if err != nil || getResp.StatusCode != 200 {
		t.Fatalf("GET: %v %v", err, getResp)
	}
	defer getResp.Body.Close()
	got := make(chan string, 8)
	go sse.Each(getResp.Body, func(ev sse.Event) bool { got <- string(ev.Data); return true })
	next := func() string {
		select {
		case m := <-got:
			return m
		case <-time.After(5 * time.Second):
			t.Fatal("no message on the GET stream within 5 s")
			return ""
		}
	}
	if resp, _ := ts.do(http.MethodGet, "", sid...); resp.StatusCode != http.StatusConflict {
		t.Errorf("second GET stream: %s, want 409", resp.Status)
	}

	if resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid...); resp.StatusCode != http.StatusAccepted || body != "" {
		t.Fatalf("notification: %s %q, want 202", resp.Status, body)
	}
	// The recorded server asked for roots and answered the call after the
	// reply: the replay's answer waits for the live reply too.
	type answer struct {
		resp *http.Response
		body string
	}
	called := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`))
		for i := 0; i+1 < len(sid); i += 2 {
			req.Header.Set(sid[i], sid[i+1])
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := ts.srv.Client().Do(req)
		if err != nil {
			called <- answer{}
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		called <- answer{resp, string(b)}
	}()
	if m := next(); m != `{"jsonrpc":"2.0","id":0,"method":"roots/list"}` {
		t.Fatalf("GET stream: %s, want the recorded roots/list", m)
	}
	select {
	case a := <-called:
		t.Fatalf("tools/call answered before the client replied to roots/list: %v %q", a.resp, a.body)
	case <-time.After(100 * time.Millisecond):
	}
	if resp, _ := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`, sid...); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("reply to roots/list: %s, want 202", resp.Status)
	}
	if m := next(); !strings.Contains(m, `"data":"roots: 0"`) {
		t.Fatalf("GET stream: %s, want the log message recorded after the reply", m)
	}
	a := <-called
	if a.resp == nil {
		t.Fatal("tools/call: no answer")
	}
	if ev := events(t, a.body); a.resp.StatusCode != 200 || len(ev) != 1 || ev[0] != `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}` {
		t.Fatalf("tools/call: %s %q", a.resp.Status, a.body)
	}

	if resp, _ := ts.do(http.MethodDelete, ""); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("DELETE without a session: %s, want 400", resp.Status)
	}
	if resp, _ := ts.do(http.MethodDelete, "", sid...); resp.StatusCode != http.StatusOK {
		t.Errorf("DELETE: %s, want 200", resp.Status)
	}
	if resp, _ := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":8,"method":"tools/list"}`, sid...); resp.StatusCode != http.StatusNotFound {
		t.Errorf("request after DELETE: %s, want 404", resp.Status)
	}
	if r := ts.h.Report(); r.Err() != nil || r.Matched != 2 || len(ts.divs) != 0 {
		t.Fatalf("report %+v, divergences %v", r, ts.divs)
	}
}

func TestHTTPStateless(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	for _, m := range []string{http.MethodGet, http.MethodDelete} {
		if resp, _ := ts.do(m, ""); resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != "POST" {
			t.Errorf("%s on a stateless tape: %s, Allow %q; want 405 and POST", m, resp.Status, resp.Header.Get("Allow"))
		}
	}
	modern := []string{"MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "server/discover"}
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, modern...)
	if resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != "" || len(events(t, body)) != 1 {
		t.Fatalf("server/discover: %s, session %q, body %q", resp.Status, resp.Header.Get("Mcp-Session-Id"), body)
	}
	resp, body = ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "logging/setLevel")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" || body != `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"missing _meta"}}` {
		t.Fatalf("logging/setLevel: %s %q, want the recorded HTTP 400", resp.Status, body)
	}
	call := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{}}}`
	resp, body = ts.do(http.MethodPost, call, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "other")
	if resp.StatusCode != http.StatusBadRequest || gjson.Get(body, "error.code").Int() != CodeHeaderMismatch || gjson.Get(body, "id").Int() != 3 {
		t.Fatalf("Mcp-Name mismatch: %s %q, want 400 with %d", resp.Status, body, CodeHeaderMismatch)
	}
	resp, body = ts.do(http.MethodPost, call, "MCP-Protocol-Version", "2026-07-28", "Mcp-Method", "tools/call", "Mcp-Name", "echo")
	if resp.StatusCode != 200 || !strings.Contains(body, `"resultType":"complete"`) {
		t.Fatalf("tools/call: %s %q", resp.Status, body)
	}
	if r := ts.h.Report(); r.Err() != nil {
		t.Fatal(r.Err())
	}
}

// A tape recorded over stdio has no HTTP _meta: a lone answer is JSON, an
// answer preceded by notifications an SSE stream, in recorded order.
func TestHTTPJSONOrSSE(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`},
		line{recv, 3, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		line{recv, 4, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2}}`},
		line{recv, 5, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
	)
	ts := newTestServer(t, x, EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":"x","method":"tools/list"}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || body != `{"jsonrpc":"2.0","id":"x","result":{"tools":[]}}` {
		t.Fatalf("lone answer: %s %s %q, want JSON", resp.Status, resp.Header.Get("Content-Type"), body)
	}
	resp, body = ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":"y","method":"tools/call","params":{"name":"slow"}}`)
	ev := events(t, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(ev) != 3 || !strings.Contains(ev[0], `"progress":1`) || !strings.Contains(ev[1], `"progress":2`) || !strings.Contains(ev[2], `"id":"y"`) {
		t.Fatalf("answer after notifications: %s %q, want 3 SSE events in order", resp.Header.Get("Content-Type"), ev)
	}
}

func TestHTTPDivergence(t *testing.T) {
	ts := newTestServer(t, sessionHTTPTape(t), EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/list"}`)
	if resp.StatusCode != 200 || gjson.Get(body, "error.code").Int() != CodeDiverged || gjson.Get(body, "id").Int() != 5 || gjson.Get(body, "error.data.expectedMethod").String() != "initialize" {
		t.Fatalf("a request off the tape: %s %q, want the %d error", resp.Status, body, CodeDiverged)
	}
	if len(ts.divs) != 1 || ts.divs[0].Method != "tools/list" {
		t.Fatalf("OnDivergence saw %+v", ts.divs)
	}
	if r := ts.h.Report(); len(r.Divergences) != 1 || len(r.Unused) != 2 {
		t.Fatalf("report %+v", r)
	}
	if resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":`); resp.StatusCode != http.StatusBadRequest || gjson.Get(body, "error.code").Int() != CodeParseError {
		t.Fatalf("a body that is not JSON: %s %q, want 400 and a parse error", resp.Status, body)
	}
}

// A server/discover probe that the recorded server rejected with HTTP 400
// before reading its id is rejected again with "id":null.
func TestHTTPNullIDRejection(t *testing.T) {
	x := buildHTTPIndex(t,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, map[string]any{"http": "POST", "status": 400}},
		hline{"recv", `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}`, map[string]any{"http": "POST", "status": 400}},
	)
	ts := newTestServer(t, x, EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":9,"method":"server/discover","params":{}}`)
	if resp.StatusCode != http.StatusBadRequest || body != `{"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null}` {
		t.Fatalf("server/discover: %s %q, want the recorded 400 with id null", resp.Status, body)
	}
	if r := ts.h.Report(); r.Err() != nil {
		t.Fatal(r.Err())
	}
}

func TestHTTPOrigin(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	for _, tt := range []struct {
		origin string
		ok     bool
	}{
		{"http://localhost:3000", true},
		{"http://127.0.0.1", true},
		{"http://[::1]:8080", true},
		{"https://app.example", true}, // HTTPOptions.AllowOrigins
		{"http://evil.example", false},
		{"http://127.0.0.1.evil.example", false},
		{"null", false},
		{"file://", false},
	} {
		resp, _ := ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "Origin", tt.origin)
		if got := resp.StatusCode != http.StatusForbidden; got != tt.ok {
			t.Errorf("Origin %q: %s, want allowed %v", tt.origin, resp.Status, tt.ok)
		}
	}
	if resp, _ := ts.do(http.MethodPut, ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("PUT: %s, want 405", resp.Status)
	}
	resp, err := ts.srv.Client().Post(ts.srv.URL+"/other", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("another path: %s, want 404", resp.Status)
	}
}

// At a speed > 0 the answer waits for its recorded latency, delivered by
// the handler's timing goroutine.
func TestHTTPSpeed(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`},
		line{recv, 100, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		line{recv, 200, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	)
	ts := newTestServer(t, x, EngineOptions{Speed: 2})
	start := time.Now()
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"}}`)
	if took := time.Since(start); took < 90*time.Millisecond {
		t.Errorf("answer after %v, want the recorded 200 ms at speed 2 (100 ms)", took)
	}
	if ev := events(t, body); resp.Header.Get("Content-Type") != "text/event-stream" || len(ev) != 2 {
		t.Fatalf("answer: %s %q", resp.Header.Get("Content-Type"), body)
	}
}

// A request the tape holds no answer to gets CodeNoAnswer at once.
func TestHTTPUnanswered(t *testing.T) {
	x := buildIndex(t, line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"never"}}`})
	ts := newTestServer(t, x, EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"never"}}`)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"code":-32093`) || !strings.Contains(body, "tape line 1") {
		t.Fatalf("status %d, body %s", resp.StatusCode, body)
	}
	if rep := ts.h.Report(); len(rep.Unanswered) != 1 || rep.Err() != nil {
		t.Errorf("report: unanswered %+v, err %v", rep.Unanswered, rep.Err())
	}
}

// Close ends a request that waits for an answer: one the client cancelled
// while recording, which waits for the live cancellation.
func TestHTTPCloseEndsWaiting(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"never"}}`},
		line{send, 10, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`})
	ts := newTestServer(t, x, EngineOptions{})
	done := make(chan int)
	go func() {
		resp, _ := ts.doAsync(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"never"}}`)
		done <- resp.StatusCode
	}()
	time.Sleep(50 * time.Millisecond)
	ts.h.Close()
	select {
	case code := <-done:
		if code != http.StatusServiceUnavailable {
			t.Fatalf("status %d, want 503", code)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting request did not end within 5 s of Close")
	}
}

// Reorder lets racing requests arrive swapped; the one passed over is
// still expected, and without the window they diverge.
func TestReorder(t *testing.T) {
	tapeOf := func() *tape.Index {
		return buildIndex(t,
			line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fast"}}`},
			line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"n":"fast"}}`},
			line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`},
			line{recv, 3, `{"jsonrpc":"2.0","id":2,"result":{"n":"slow"}}`},
		)
	}
	slow, fast := `{"jsonrpc":"2.0","id":"s","method":"tools/call","params":{"name":"slow"}}`, `{"jsonrpc":"2.0","id":"f","method":"tools/call","params":{"name":"fast"}}`
	e, _ := NewEngine(tapeOf(), EngineOptions{Reorder: 1})
	out := feed(t, e, slow, fast)
	if got := texts(out); len(got) != 2 || got[0] != `{"jsonrpc":"2.0","id":"s","result":{"n":"slow"}}` || got[1] != `{"jsonrpc":"2.0","id":"f","result":{"n":"fast"}}` {
		t.Fatalf("with Reorder 1: %q", got)
	}
	if r := e.Report(); r.Err() != nil {
		t.Fatal(r.Err())
	}
	e, _ = NewEngine(tapeOf(), EngineOptions{})
	feed(t, e, slow, fast)
	if r := e.Report(); len(r.Divergences) != 1 || len(r.Unused) != 1 || r.Unused[0].Line != 3 {
		t.Fatalf("without Reorder: %+v, want slow diverged and left unused", r)
	}
}

// TestHTTPGatedHold is the debugger's use of the handler: answers that
// replay recorded messages wait for Release, a divergence waits for Resolve
// (reported as pending first), and each client message reports the
// engine's progress.
func TestHTTPGatedHold(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"tools":[]}}`},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`},
		line{recv, 3, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		line{recv, 4, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
	)
	e, err := NewEngine(x, EngineOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var divs []Divergence
	var progress [][2]int
	ts := &testServer{t: t}
	ts.h = handlerFor(t, e, HTTPOptions{
		Gated:        true,
		OnDivergence: func(d Divergence) { mu.Lock(); divs = append(divs, d); mu.Unlock() },
		OnProgress:   func(r, a int) { mu.Lock(); progress = append(progress, [2]int{r, a}); mu.Unlock() },
	})
	ts.srv = httptest.NewServer(ts.h)
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(func() { ts.h.Close(); ts.srv.Close() })

	type answer struct {
		resp *http.Response
		body string
	}
	post := func(body string) chan answer {
		c := make(chan answer, 1)
		go func() { r, b := ts.doAsync(http.MethodPost, body); c <- answer{r, b} }()
		return c
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); !cond(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
		}
	}
	held := func(c chan answer, what string) {
		t.Helper()
		select {
		case a := <-c:
			t.Fatalf("%s: answered %s %q while held", what, a.resp.Status, a.body)
		case <-time.After(100 * time.Millisecond):
		}
	}
	get := func(c chan answer) answer {
		t.Helper()
		select {
		case a := <-c:
			return a
		case <-time.After(5 * time.Second):
			t.Fatal("no answer within 5 s")
			return answer{}
		}
	}

	c := post(`{"jsonrpc":"2.0","id":"a","method":"tools/list"}`)
	waitFor("progress after tools/list", func() bool { mu.Lock(); defer mu.Unlock(); return len(progress) == 1 })
	if progress[0] != [2]int{0, 2} {
		t.Errorf("progress after tools/list: %v, want reached 0, awaiting 2", progress[0])
	}
	held(c, "tools/list before Release")
	ts.h.Release(1) // the response is #1: not yet
	held(c, "tools/list after Release(1)")
	ts.h.Release(2)
	if a := get(c); a.body != `{"jsonrpc":"2.0","id":"a","result":{"tools":[]}}` {
		t.Fatalf("tools/list after Release(2): %s %q", a.resp.Status, a.body)
	}

	// A divergence is held, then answered with the error (not gated).
	bye := `{"jsonrpc":"2.0","id":"b","method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}`
	c = post(bye)
	waitFor("the pending divergence", func() bool { mu.Lock(); defer mu.Unlock(); return len(divs) == 1 })
	if divs[0].Resolution != Pending || divs[0].Expected != 2 {
		t.Fatalf("divergence %+v, want pending, expecting #2", divs[0])
	}
	held(c, "the divergent call")
	// The error, the recorded call still expected: the same call again
	// diverges again.
	if err := ts.h.Resolve(divs[0].Session, divs[0].ID, SendErrorKeep); err != nil {
		t.Fatal(err)
	}
	if a := get(c); gjson.Get(a.body, "error.code").Int() != CodeDiverged || gjson.Get(a.body, "id").String() != "b" {
		t.Fatalf("after Resolve(SendError): %s %q, want the %d error", a.resp.Status, a.body, CodeDiverged)
	}
	if err := ts.h.Resolve(divs[0].Session, divs[0].ID, SendError); err == nil {
		t.Errorf("Resolve of a resolved divergence: no error")
	}

	// Again, answered with the recorded response: gated until Release.
	c = post(strings.Replace(bye, `"b"`, `"c"`, 1))
	waitFor("the second divergence", func() bool { mu.Lock(); defer mu.Unlock(); return len(divs) == 3 })
	if err := ts.h.Resolve(divs[2].Session, divs[2].ID, AnswerRecorded); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := progress[len(progress)-1]
	mu.Unlock()
	if last != [2]int{2, 5} {
		t.Errorf("progress after the recorded answer: %v, want reached 2, awaiting 5 (the end)", last)
	}
	held(c, "the recorded answer before Release")
	ts.h.Release(5)
	a := get(c)
	if ev := events(t, a.body); len(ev) != 2 || !strings.Contains(ev[0], `"progress":1`) || !strings.Contains(ev[1], `"id":"c"`) {
		t.Fatalf("recorded answer: %q, want the progress notification and the response", ev)
	}
}

// TestHTTPResolveNamesSession: two sessions diverge, each its engine's
// divergence 1; resolving the first one reported answers its own client,
// not the newest session's.
func TestHTTPResolveNamesSession(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	initOK := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
	x := buildIndex(t,
		line{life, 0, tape.MethodStart},
		line{send, 1, init}, line{recv, 2, initOK},
		line{send, 3, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"A"}}}`},
		line{recv, 4, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
		line{life, 1000, tape.MethodStart},
		line{send, 1001, init}, line{recv, 1002, initOK},
		line{send, 1003, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"B"}}}`},
		line{recv, 1004, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
	)
	e, err := NewEngine(x, EngineOptions{Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var divs []Divergence
	n := 0
	ts := &testServer{t: t}
	ts.h = handlerFor(t, e, HTTPOptions{
		OnDivergence: func(d Divergence) { mu.Lock(); divs = append(divs, d); mu.Unlock() },
		NewSessionID: func() string { n++; return fmt.Sprintf("sess-%d", n) },
	})
	ts.srv = httptest.NewServer(ts.h)
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(func() { ts.h.Close(); ts.srv.Close() })

	sids := make([]string, 2)
	for i := range sids {
		resp, body := ts.do(http.MethodPost, init)
		if sids[i] = resp.Header.Get("Mcp-Session-Id"); sids[i] == "" {
			t.Fatalf("initialize %d: no session id: %s %q", i+1, resp.Status, body)
		}
	}
	calls := make([]chan string, 2)
	for i, sid := range sids {
		calls[i] = make(chan string, 1)
		go func() {
			_, body := ts.doAsync(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"m":"wrong"}}}`, "Mcp-Session-Id", sid)
			calls[i] <- body
		}()
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			mu.Lock()
			got := len(divs)
			mu.Unlock()
			if got == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("divergence %d not reported", i+1)
			}
		}
	}
	mu.Lock()
	first := divs[0]
	mu.Unlock()
	if first.Session != sids[0] || first.ID != 1 || divs[1].Session != sids[1] || divs[1].ID != 1 {
		t.Fatalf("divergences %q#%d and %q#%d, want %q#1 and %q#1", first.Session, first.ID, divs[1].Session, divs[1].ID, sids[0], sids[1])
	}
	if err := ts.h.Resolve(first.Session, first.ID, SendError); err != nil {
		t.Fatal(err)
	}
	select {
	case body := <-calls[0]:
		if gjson.Get(body, "error.code").Int() != CodeDiverged {
			t.Errorf("the first session's call got %q, want the %d error", body, CodeDiverged)
		}
	case body := <-calls[1]:
		t.Fatalf("resolving the first session's divergence answered the second session: %q", body)
	case <-time.After(5 * time.Second):
		t.Fatal("no answer within 5 s")
	}
	if err := ts.h.Resolve("no-such-session", 1, SendError); err == nil {
		t.Error("Resolve in an unknown session: no error")
	}
	if err := ts.h.Resolve(sids[1], 1, SendError); err != nil {
		t.Fatal(err)
	}
	<-calls[1]
}

// TestHTTPAdmit: Admit sees only the requests the handler's checks
// accepted, and its error refuses a request with 409.
func TestHTTPAdmit(t *testing.T) {
	x := sessionHTTPTape(t)
	e, err := NewEngine(x, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var admitted []string
	refuse := false
	ts := &testServer{t: t}
	ts.h = handlerFor(t, e, HTTPOptions{Admit: func(r *http.Request) error {
		mu.Lock()
		defer mu.Unlock()
		admitted = append(admitted, r.Method+" "+r.URL.Path)
		if refuse {
			return fmt.Errorf("busy")
		}
		return nil
	}})
	ts.srv = httptest.NewServer(ts.h)
	t.Cleanup(func() { ts.h.Close(); ts.srv.Close() })

	ts.url = ts.srv.URL + "/elsewhere"
	if resp, _ := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("POST /elsewhere: %s, want 404", resp.Status)
	}
	ts.url = ts.srv.URL + "/mcp"
	if resp, _ := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`, "Origin", "https://evil.example"); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("POST from a foreign origin: %s, want 403", resp.Status)
	}
	mu.Lock()
	if len(admitted) != 0 {
		t.Errorf("Admit saw refused requests: %v", admitted)
	}
	refuse = true
	mu.Unlock()
	if resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"ping"}`); resp.StatusCode != http.StatusConflict || !strings.Contains(body, "busy") {
		t.Fatalf("POST refused by Admit: %s %q, want 409 busy", resp.Status, body)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(admitted) != 1 || admitted[0] != "POST /mcp" {
		t.Errorf("Admit saw %v, want [POST /mcp]", admitted)
	}
}
