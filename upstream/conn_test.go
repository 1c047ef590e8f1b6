package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

var t0 = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)

type hline struct {
	dir  string
	msg  string
	meta map[string]any
}

// buildHTTPIndex indexes a tape of the HTTP dialect made of lines.
func buildHTTPIndex(t testing.TB, lines ...hline) *tape.Index {
	t.Helper()
	return buildIndex(t, map[string]any{"transport": "http"}, lines...)
}

// buildIndex indexes a tape of server "s" made of lines, each with the
// _meta members base and its own: dir is send, recv or a lifecycle
// method, one millisecond apart.
func buildIndex(t testing.TB, base map[string]any, lines ...hline) *tape.Index {
	t.Helper()
	var buf bytes.Buffer
	w := tape.NewWriter(&buf)
	for i, l := range lines {
		extra := map[string]any{}
		for k, v := range base {
			extra[k] = v
		}
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

// replayServer is the replay's Streamable HTTP edge serving a tape: the
// server end for the clients here.
type replayServer struct {
	h   *replay.HTTPHandler
	srv *httptest.Server
	url string

	mu   sync.Mutex
	divs []replay.Divergence
}

func newReplayServer(t *testing.T, x *tape.Index) *replayServer {
	t.Helper()
	return newReplayServerMode(t, x, replay.Strict)
}

func newReplayServerMode(t *testing.T, x *tape.Index, mode replay.Mode) *replayServer {
	t.Helper()
	e, err := replay.NewEngine(x, replay.EngineOptions{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	ts := &replayServer{}
	ts.h, err = replay.NewHTTPHandler(x, e.Options(), replay.HTTPOptions{
		OnDivergence: func(d replay.Divergence) { ts.mu.Lock(); ts.divs = append(ts.divs, d); ts.mu.Unlock() },
		NewSessionID: func() string { return "live-session" },
	})
	if err != nil {
		t.Fatal(err)
	}
	ts.srv = httptest.NewServer(ts.h)
	ts.url = ts.srv.URL + "/mcp"
	t.Cleanup(func() { ts.h.Close(); ts.srv.Close() })
	return ts
}

// Verify over HTTPConn against the replay handler serving the same tape:
// both ends of the Streamable HTTP edge, the GET stream included.
func TestVerifyOverHTTPReplay(t *testing.T) {
	x := sessionHTTPTape(t)
	ts := newReplayServer(t, x)
	conn := NewHTTPConn(ts.url, ts.srv.Client())
	rep, err := Verify(context.Background(), x, conn, VerifyOptions{Timeout: 5 * time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if conn.SessionID() != "live-session" {
		t.Errorf("session %q", conn.SessionID())
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if len(rep.Calls) != 2 || rep.Err() != nil {
		t.Fatalf("verify: %+v", rep)
	}
	if r := ts.h.Report(); r.Err() != nil || len(ts.divs) != 0 {
		t.Fatalf("replay: %v %v", r.Err(), ts.divs)
	}
	req, _ := http.NewRequest(http.MethodPost, ts.url, strings.NewReader(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", "live-session")
	resp, err := ts.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("after HTTPConn.Close the session should be gone: %s", resp.Status)
	}
}

// Once a StdioConn is closed, what the server writes is read and dropped:
// a server that keeps writing after verify stopped listening is not left
// blocked on a full pipe.
func TestStdioConnDrainsAfterClose(t *testing.T) {
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		for i := range 2000 {
			if _, err := fmt.Fprintf(pw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`+"\n", i); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- pw.Close()
	}()
	c := NewStdioConn(io.Discard, pr)
	if msg, err := c.Recv(context.Background()); err != nil || !strings.Contains(string(msg), `"n":0`) {
		t.Fatalf("first message %q, %v", msg, err)
	}
	c.Close()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("the server's writes failed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server is still blocked writing its stdout 5 s after the conn was closed")
	}
	if _, err := c.Recv(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after Close and the end of output: %v, want io.EOF", err)
	}
}

// HTTPConn names a 2026-07-28 request's method and target in headers, and
// sends none of them in older eras.
func TestHTTPConnModernHeaders(t *testing.T) {
	got := make(chan http.Header, 4)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got <- r.Header.Clone()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"jsonrpc":"2.0","id":1,"result":{}}`))
	}))
	defer srv.Close()
	conn := NewHTTPConn(srv.URL, srv.Client())
	defer conn.Close()
	for _, tt := range []struct {
		msg, method, name, version string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{}}}`, "tools/call", "echo", "2026-07-28"},
		{`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"uri":"file:///a"}}`, "resources/read", "file:///a", "2026-07-28"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "tools/list", "", "2026-07-28"},
	} {
		if err := conn.Send(context.Background(), []byte(tt.msg)); err != nil {
			t.Fatal(err)
		}
		hd := <-got
		if hd.Get("Mcp-Method") != tt.method || hd.Get("Mcp-Name") != tt.name || hd.Get("MCP-Protocol-Version") != tt.version {
			t.Errorf("%s: Mcp-Method %q Mcp-Name %q MCP-Protocol-Version %q, want %q %q %q", tt.method, hd.Get("Mcp-Method"), hd.Get("Mcp-Name"), hd.Get("MCP-Protocol-Version"), tt.method, tt.name, tt.version)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if _, err := conn.Recv(ctx); err != nil {
			t.Fatal(err)
		}
		cancel()
	}
	old := NewHTTPConn(srv.URL, srv.Client())
	defer old.Close()
	if err := old.Send(context.Background(), []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`)); err != nil {
		t.Fatal(err)
	}
	if hd := <-got; hd.Get("Mcp-Method") != "" || hd.Get("Mcp-Name") != "" {
		t.Errorf("a request of an older era carries Mcp-Method %q Mcp-Name %q, want none", hd.Get("Mcp-Method"), hd.Get("Mcp-Name"))
	}
}
