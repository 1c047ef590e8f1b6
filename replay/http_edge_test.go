package replay

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// openSSE sends a request and returns the response, its body unread, and
// a function that cancels the request (drops the connection).
func (ts *testServer) openSSE(method, body string, header ...string) (*http.Response, *sse.Reader, context.CancelFunc) {
	ts.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var rd *strings.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	var req *http.Request
	var err error
	if rd != nil {
		req, err = http.NewRequestWithContext(ctx, method, ts.url, rd)
	} else {
		req, err = http.NewRequestWithContext(ctx, method, ts.url, nil)
	}
	if err != nil {
		ts.t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		cancel()
		ts.t.Fatal(err)
	}
	ts.t.Cleanup(func() { cancel(); resp.Body.Close() })
	return resp, sse.NewReader(resp.Body), cancel
}

// next reads one event or fails the test.
func next(t *testing.T, r *sse.Reader) sse.Event {
	t.Helper()
	ev, err := r.Next()
	if err != nil {
		t.Fatalf("read SSE event: %v (got %q)", err, ev.Raw)
	}
	return ev
}

// slowCallTape is a stdio session whose tools/call sends three progress
// notifications 100 ms apart before its answer.
func slowCallTape(t *testing.T) *tape.Index {
	return buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`},
		line{send, 2, `{"jsonrpc":"2.0","method":"notifications/initialized"}`},
		line{send, 10, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`},
		line{recv, 110, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`},
		line{recv, 210, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2}}`},
		line{recv, 310, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":3}}`},
		line{recv, 410, `{"jsonrpc":"2.0","id":2,"result":{"content":[]}}`},
	)
}

const init1125 = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`

// A stream dropped after its first message is resumed with Last-Event-ID:
// the rest arrives exactly once, in order, on the GET.
func TestHTTPResume(t *testing.T) {
	ts := newTestServer(t, slowCallTape(t), EngineOptions{Speed: 2})
	if resp, body := ts.do(http.MethodPost, init1125); resp.StatusCode != 200 {
		t.Fatalf("initialize: %s %q", resp.Status, body)
	}
	sid := []string{"Mcp-Session-Id", "live-session", "MCP-Protocol-Version", "2025-11-25"}
	ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid...)

	resp, events, drop := ts.openSSE(http.MethodPost, `{"jsonrpc":"2.0","id":"c","method":"tools/call","params":{"name":"slow"}}`, sid...)
	if resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("answer %s, want an SSE stream", resp.Header.Get("Content-Type"))
	}
	prime := next(t, events)
	if !prime.HasID || len(prime.Data) != 0 {
		t.Fatalf("first event %q, want the priming event (an id, empty data) for a 2025-11-25 client", prime.Raw)
	}
	first := next(t, events)
	if !strings.Contains(string(first.Data), `"progress":1`) || first.ID == "" || first.ID == prime.ID {
		t.Fatalf("second event %q, want progress 1 with an id of its own", first.Raw)
	}
	drop() // the connection breaks after progress 1

	resp, events, _ = ts.openSSE(http.MethodGet, "", append(sid, "Last-Event-ID", first.ID)...)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("resume: %s", resp.Status)
	}
	var got []string
	for {
		ev, err := events.Next()
		if err != nil {
			break
		}
		if len(ev.Data) == 0 {
			t.Errorf("priming event %q in the middle of a resumed stream", ev.Raw)
		}
		got = append(got, string(ev.Data))
	}
	want := []string{
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":2}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":3}}`,
		`{"jsonrpc":"2.0","id":"c","result":{"content":[]}}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("resumed stream:\n%s\nwant exactly:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if n := ts.h.Dropped(); n != 0 {
		t.Errorf("Dropped %d after the resumed stream ended, want 0", n)
	}

	for _, tt := range []struct{ id, want string }{
		{"nonsense", "malformed Last-Event-ID"},
		{"7_0", "stream 7 is not held"},
		{first.ID[:strings.Index(first.ID, "_")] + "_99", "has sent only"},
	} {
		if resp, body := ts.do(http.MethodGet, "", append(sid, "Last-Event-ID", tt.id)...); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tt.want) {
			t.Errorf("Last-Event-ID %q: %s %q, want 400 with %q", tt.id, resp.Status, body, tt.want)
		}
	}
	if r := ts.h.Report(); r.Err() != nil {
		t.Fatal(r.Err())
	}
}

// A client of an older version gets no priming event; the GET stream of a
// 2025-11-25 client starts with one.
func TestHTTPPriming(t *testing.T) {
	for _, tt := range []struct {
		version string
		prime   bool
	}{{"2025-11-25", true}, {"2025-06-18", false}} {
		ts := newTestServer(t, slowCallTape(t), EngineOptions{})
		ts.do(http.MethodPost, strings.Replace(init1125, "2025-11-25", tt.version, 1))
		sid := []string{"Mcp-Session-Id", "live-session", "MCP-Protocol-Version", tt.version}
		resp, events, drop := ts.openSSE(http.MethodGet, "", sid...)
		if resp.StatusCode != 200 {
			t.Fatalf("%s: GET %s", tt.version, resp.Status)
		}
		if tt.prime {
			if ev := next(t, events); ev.ID != "0_0" || len(ev.Data) != 0 {
				t.Errorf("%s: first GET event %q, want the priming event with id 0_0", tt.version, ev.Raw)
			}
		}
		ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, sid...)
		// The call's answer and notifications travel on its own stream; the
		// GET stream stays empty, so end it and check nothing came.
		ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"slow"}}`, sid...)
		drop()
		if ev, err := events.Next(); err == nil {
			t.Errorf("%s: unexpected GET event %q", tt.version, ev.Raw)
		}
	}
}

// A notification recorded after its request's answer, with no stream open
// (no GET stream in this era), is held and goes first on the next answer.
func TestHTTPHeldForNextStream(t *testing.T) {
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`},
		line{recv, 1, `{"jsonrpc":"2.0","id":1,"result":{"n":"a"}}`},
		line{recv, 2, `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"after a"}}`},
		line{send, 3, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`},
		line{recv, 4, `{"jsonrpc":"2.0","id":2,"result":{"n":"b"}}`},
	)
	ts := newTestServer(t, x, EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}}`)
	if resp.Header.Get("Content-Type") != "application/json" || body != `{"jsonrpc":"2.0","id":1,"result":{"n":"a"}}` {
		t.Fatalf("first answer: %s %q", resp.Header.Get("Content-Type"), body)
	}
	if n := ts.h.Dropped(); n != 1 {
		t.Errorf("Dropped %d while the notification waits for a stream, want 1", n)
	}
	resp, body = ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"}}`)
	ev := events(t, body)
	if resp.Header.Get("Content-Type") != "text/event-stream" || len(ev) != 2 || !strings.Contains(ev[0], "after a") || ev[1] != `{"jsonrpc":"2.0","id":2,"result":{"n":"b"}}` {
		t.Fatalf("second answer: %s %q, want the held notification then the answer", resp.Header.Get("Content-Type"), ev)
	}
	if n := ts.h.Dropped(); n != 0 {
		t.Errorf("Dropped %d after delivery, want 0", n)
	}
}

// twoSessionTape recorded two connections of one server, each with its
// own initialize and call.
func twoSessionTape(t *testing.T) *tape.Index {
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	initResp := `{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"s","version":"1"}}}`
	return buildIndex(t,
		line{life, 0, tape.MethodStart},
		line{send, 1, init},
		line{recv, 2, initResp},
		line{send, 3, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"first"}}`},
		line{recv, 4, `{"jsonrpc":"2.0","id":2,"result":{"n":1}}`},
		line{life, 5, tape.MethodClose},
		line{life, 10, tape.MethodStart},
		line{send, 11, init},
		line{recv, 12, initResp},
		line{send, 13, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"second"}}`},
		line{recv, 14, `{"jsonrpc":"2.0","id":2,"result":{"n":2}}`},
		line{life, 15, tape.MethodClose},
	)
}

// Each recorded session is served once, by its own engine, even while
// both are open; a third initialize is refused with 409 and counted.
func TestHTTPSeveralSessions(t *testing.T) {
	x := twoSessionTape(t)
	e, err := NewEngine(x, EngineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	h := handlerFor(t, e, HTTPOptions{NewSessionID: func() string { n++; return "s" + string(rune('0'+n)) }})
	ts := &testServer{t: t, h: h}
	ts.srv = newHTTPTestServer(t, h)
	ts.url = ts.srv.URL + "/mcp"

	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`
	for _, want := range []string{"s1", "s2"} {
		if resp, body := ts.do(http.MethodPost, init); resp.StatusCode != 200 || resp.Header.Get("Mcp-Session-Id") != want {
			t.Fatalf("initialize: %s session %q %q, want %s", resp.Status, resp.Header.Get("Mcp-Session-Id"), body, want)
		}
	}
	// The second session's call first: each session follows its own
	// recorded session.
	for _, c := range []struct{ sid, name, want string }{{"s2", "second", `"n":2`}, {"s1", "first", `"n":1`}} {
		resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"`+c.name+`"}}`, "Mcp-Session-Id", c.sid)
		if resp.StatusCode != 200 || !strings.Contains(body, c.want) {
			t.Fatalf("session %s call %s: %s %q", c.sid, c.name, resp.Status, body)
		}
	}
	resp, body := ts.do(http.MethodPost, init)
	if resp.StatusCode != http.StatusConflict || gjson.Get(body, "error.code").Int() != CodeDiverged || !strings.Contains(body, "the tape recorded 2 sessions") || gjson.Get(body, "id").Int() != 0 {
		t.Fatalf("third initialize: %s %q, want 409 and the %d error naming 2 recorded sessions", resp.Status, body, CodeDiverged)
	}
	r := h.Report()
	if r.Requests != 4 || r.Matched != 4 || len(r.Unused) != 0 || len(r.Divergences) != 1 || r.Divergences[0].Method != "initialize" {
		t.Fatalf("report %+v, want 4 matched and the refused initialize", r)
	}
}

// A recorded session no client opened leaves its requests unused.
func TestHTTPSessionNotOpened(t *testing.T) {
	ts := newTestServer(t, twoSessionTape(t), EngineOptions{})
	ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"1"}}}`)
	ts.do(http.MethodPost, `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"first"}}`, "Mcp-Session-Id", "live-session")
	r := ts.h.Report()
	if len(r.Unused) != 2 || r.Unused[0].Method != "initialize" || r.Unused[1].Line != 10 || r.Err() == nil {
		t.Fatalf("report %+v, want the second session's initialize and call unused", r)
	}
}

func TestHTTPHostCheck(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	ts.h.guard.AllowHosts = []string{"replay.internal"}
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"localhost:8808", true},
		{"127.0.0.1", true},
		{"[::1]:80", true},
		{"replay.internal:8808", true},
		{"evil.example", false},
		{"attacker.example:8808", false},
		{"127.0.0.1.nip.io", false},
	} {
		req, _ := http.NewRequest(http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
		req.Host = tt.host
		resp, err := ts.srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.StatusCode != http.StatusForbidden; got != tt.ok {
			t.Errorf("Host %q: %s, want allowed %v", tt.host, resp.Status, tt.ok)
		}
	}
	ts.h.guard.AllowHosts = []string{"*"}
	req, _ := http.NewRequest(http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Host = "anything.example"
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusForbidden {
		t.Errorf("AllowHosts * refused Host %q", req.Host)
	}
}

func TestHTTPBodyLimit(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	ts.h.opts.MaxBody = 200
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"pad":"` + strings.Repeat("x", 300) + `"}}}`
	resp, body := ts.do(http.MethodPost, big)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || gjson.Get(body, "error.code").Int() != CodeInvalidRequest || !strings.Contains(body, "larger than 200 bytes") {
		t.Fatalf("body over the limit: %s %q, want 413 with a JSON-RPC error", resp.Status, body)
	}
	if resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); resp.StatusCode != http.StatusAccepted {
		t.Fatalf("body under the limit: %s %q", resp.Status, body)
	}
	if DefaultMaxBody < 16<<20 {
		t.Errorf("DefaultMaxBody %d: want a generous default for messages carrying files", DefaultMaxBody)
	}
}

func TestHTTPProtocolVersion(t *testing.T) {
	ts := newTestServer(t, sessionHTTPTape(t), EngineOptions{})
	resp, body := ts.do(http.MethodPost, `{"jsonrpc":"2.0","method":"notifications/initialized"}`, "MCP-Protocol-Version", "2099-01-01")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `unsupported MCP-Protocol-Version \"2099-01-01\"`) || !strings.Contains(body, "2025-11-25") {
		t.Fatalf("unknown version: %s %q, want 400 naming the supported versions", resp.Status, body)
	}
	for _, v := range ProtocolVersions() {
		if resp, body := ts.do(http.MethodGet, "", "MCP-Protocol-Version", v); resp.StatusCode == http.StatusBadRequest && strings.Contains(body, "unsupported") {
			t.Errorf("version %s refused: %q", v, body)
		}
	}
}

// newHTTPTestServer serves h on loopback until the test ends (closing an
// HTTPHandler first).
func newHTTPTestServer(t *testing.T, h http.Handler) *httptest.Server {
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		if rh, ok := h.(*HTTPHandler); ok {
			rh.Close()
		}
		srv.Close()
	})
	return srv
}

// Concurrent clients over HTTP with more distinct calls than the engine's
// caches hold (params keys, recorded answers, wire info), each repeated:
// every answer is the recorded one for its call, under -race.
func TestHTTPCachesUnderLoad(t *testing.T) {
	const distinct = memoSize + memoSize/2
	path := filepath.Join(t.TempDir(), "many.tape.jsonl")
	writeSyntheticTape(t, path, 2*distinct, 16, true)
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	ts := newTestServer(t, x, EngineOptions{Mode: Loose})
	pad := strings.Repeat("x", 16)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 4 {
		wg.Go(func() {
			for i := range distinct / 2 {
				k := (w*distinct/4 + i*7) % distinct // overlapping, repeating keys
				body := benchRequest(w*distinct+i+1, k, pad)
				resp, err := ts.srv.Client().Post(ts.url, "application/json", bytes.NewReader(body))
				if err != nil {
					errs <- err
					return
				}
				got, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if want := fmt.Sprintf(`"text":"answer %d"`, k); !bytes.Contains(got, []byte(want)) || gjson.GetBytes(got, "id").Int() != int64(w*distinct+i+1) {
					errs <- fmt.Errorf("call k=%d: %s, want %s with its own id", k, got, want)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(ts.h.first.keys.memo) > memoSize || len(ts.h.first.scanned.answers) > memoSize || len(ts.h.lone.wire) > memoSize {
		t.Fatalf("caches grew past %d: memo %d, answers %d, wire %d", memoSize, len(ts.h.first.keys.memo), len(ts.h.first.scanned.answers), len(ts.h.lone.wire))
	}
}

// An empty POST is a JSON-RPC invalid request (400), not a 202.
func TestHTTPEmptyBody(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	for _, body := range []string{"", "  ", "[]"} {
		resp, got := ts.do(http.MethodPost, body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(got, `"code":-32600`) {
			t.Errorf("POST %q: %s %s, want 400 with -32600", body, resp.Status, got)
		}
	}
}

// A batch over MaxBatch is refused at once, holding no lock other clients
// wait for (10^5 pings took 26 s under the lock).
func TestHTTPBatchLimit(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{})
	var b strings.Builder
	b.WriteString("[")
	for i := range DefaultMaxBatch + 1 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
	}
	b.WriteString("]")
	resp, body := ts.do(http.MethodPost, b.String())
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "over the limit of 1000") {
		t.Errorf("a batch of %d: %s %.200s", DefaultMaxBatch+1, resp.Status, body)
	}
}

// A batch at the limit is answered whole, member by member.
func TestHTTPBatchAnswered(t *testing.T) {
	ts := newTestServer(t, statelessHTTPTape(t), EngineOptions{Mode: Loose})
	var b strings.Builder
	b.WriteString("[")
	for i := range DefaultMaxBatch {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `{"jsonrpc":"2.0","id":%d,"method":"ping"}`, i)
	}
	b.WriteString("]")
	resp, body := ts.do(http.MethodPost, b.String())
	if resp.StatusCode != http.StatusOK || strings.Count(body, `"result":{}`) != DefaultMaxBatch {
		t.Errorf("a batch of %d pings: %s, %d results", DefaultMaxBatch, resp.Status, strings.Count(body, `"result":{}`))
	}
}

// A batch the recorded server rejected whole, with one id-null error (HTTP
// 400), gets that one answer again: no member's id spliced in, no
// invented answers for the others, and the POST does not wait for them.
func TestHTTPBatchRejectedWhole(t *testing.T) {
	x := buildHTTPIndex(t,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, map[string]any{"http": "POST", "status": 400, "batch": 7}},
		hline{"send", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]any{"http": "POST", "status": 400, "batch": 7}},
		hline{"recv", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches are not supported"}}`, map[string]any{"http": "POST", "status": 400}},
	)
	ts := newTestServer(t, x, EngineOptions{Mode: Keyed})
	resp, body := ts.do(http.MethodPost, `[{"jsonrpc":"2.0","id":"a","method":"tools/list"},{"jsonrpc":"2.0","id":"b","method":"ping"}]`)
	want := `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batches are not supported"}}`
	if resp.StatusCode != http.StatusBadRequest || strings.TrimSpace(body) != want {
		t.Errorf("the batch: %s %s\nwant 400 %s", resp.Status, body, want)
	}
	if r := ts.h.Report(); len(r.Unanswered) != 0 || r.Err() != nil {
		t.Errorf("report: unanswered %v, err %v; want none", r.Unanswered, r.Err())
	}
}
