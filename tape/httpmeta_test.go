package tape

import (
	"bytes"
	"testing"
	"time"
)

// Both dialects read the same: the proxy's (stream, newSession) and the
// older fixture recorder's (sse).
func TestParseHTTPMeta(t *testing.T) {
	proxy := `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-11-23T03:31:48.707Z","event":"7","http":"POST","newSession":"abc","protocolVersion":"2025-11-25","session":"","status":200,"stream":3,"transport":"http"}}`
	m := ParseHTTPMeta([]byte(proxy))
	if !m.HTTP || m.Method != "POST" || m.NewSession != "abc" || m.Status != 200 || m.Stream != 3 || !m.SSE || m.Event != "7" || !m.HasEvent || m.Protocol != "2025-11-25" {
		t.Errorf("proxy dialect: %+v", m)
	}
	old := `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-11-23T03:31:48.707Z","http":"GET","sse":true,"status":200,"transport":"http"}}`
	if m := ParseHTTPMeta([]byte(old)); !m.SSE || m.Method != "GET" || m.Stream != 0 {
		t.Errorf("older dialect: %+v", m)
	}
	if m := ParseHTTPMeta([]byte(`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s"}}`)); m != (HTTPMeta{}) {
		t.Errorf("a stdio record: %+v", m)
	}
	own := `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"http":"nope"},"_tapedeck":{"dir":"recv","server":"s","http":"POST","transport":"http"}}`
	if m := ParseHTTPMeta([]byte(own)); m.Method != "POST" {
		t.Errorf("a message with its own _meta: %+v, want the tape's members", m)
	}
}

// Both dialects' exchange records read the same: the proxy's
// $http/exchange and the older $http/get and $http/delete.
func TestParseHTTPExchange(t *testing.T) {
	for _, c := range []struct {
		method, line string
		want         HTTPExchange
	}{
		{MethodHTTPExchange, `{"jsonrpc":"2.0","method":"$http/exchange","params":{"method":"GET","status":200,"stream":2,"lastEventId":"9"},"_meta":{"dir":"lifecycle","server":"s","transport":"http"}}`,
			HTTPExchange{Method: "GET", Status: 200, Stream: 2, SSE: true, LastEventID: "9"}},
		{MethodHTTPExchange, `{"jsonrpc":"2.0","method":"$http/exchange","params":{"method":"POST","status":400,"body":"bad"},"_meta":{"dir":"lifecycle","server":"s","transport":"http"}}`,
			HTTPExchange{Method: "POST", Status: 400, Body: "bad"}},
		{MethodHTTPGet, `{"jsonrpc":"2.0","method":"$http/get","_meta":{"dir":"lifecycle","server":"s","http":"GET","status":200,"transport":"http"}}`,
			HTTPExchange{Method: "GET", Status: 200, SSE: true}},
		{MethodHTTPGet, `{"jsonrpc":"2.0","method":"$http/get","_meta":{"dir":"lifecycle","server":"s","http":"GET","status":405,"transport":"http"}}`,
			HTTPExchange{Method: "GET", Status: 405}},
		{MethodHTTPDelete, `{"jsonrpc":"2.0","method":"$http/delete","_meta":{"dir":"lifecycle","server":"s","http":"DELETE","status":200,"transport":"http"}}`,
			HTTPExchange{Method: "DELETE", Status: 200}},
	} {
		got, ok := ParseHTTPExchange(c.method, []byte(c.line))
		if !ok || got != c.want {
			t.Errorf("%s: %+v, %v; want %+v", c.line, got, ok, c.want)
		}
	}
	if _, ok := ParseHTTPExchange(MethodStart, []byte(`{"jsonrpc":"2.0","method":"$transport/start","params":{"method":"GET"}}`)); ok {
		t.Error("$transport/start read as an HTTP exchange")
	}
}

// TestHTTPMetaWriter checks the HTTP dialect's writer against its reader and
// the slow path: AppendJSON's members are the line Writer writes with
// Fields, and ParseHTTPMeta reads back what was written.
func TestHTTPMetaWriter(t *testing.T) {
	cases := []HTTPMeta{
		{HTTP: true, Method: "POST", Session: "s-1", Protocol: "2025-06-18", MCPMethod: "tools/call", MCPName: "echo"},
		{HTTP: true, Method: "POST", Session: "s-1", Status: 200, NewSession: "s-2", Stream: 7, Event: "ev-1", HasEvent: true, SSE: true},
		{HTTP: true, Method: "GET", Status: 200, Stream: 3, Event: "", HasEvent: true, SSE: true},
		{HTTP: true, Method: "POST", Status: 400, InReplyTo: `"abc"`},
		{HTTP: true, Method: "POST", Exchange: 12},
		{HTTP: true, Method: "GET", Session: "a\"b\\c\u2028<&>\x01é", Status: 200, Stream: 1, Event: "<é>", HasEvent: true, SSE: true},
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"result":{"x":"<&>"}}`)
	ts := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	for i, m := range cases {
		var want bytes.Buffer
		if err := NewWriter(&want).Write(msg, Meta{Dir: DirRecv, Server: "srv", Time: ts, Extra: m.Fields()}); err != nil {
			t.Fatal(err)
		}
		got, ok := NewEncoder(DirRecv, "srv").AppendLineMeta(nil, msg, ts, m.AppendJSON(nil))
		if !ok {
			t.Fatalf("case %d: the fast path refused a plain message", i)
		}
		if string(got) != want.String() {
			t.Errorf("case %d:\ngot  %s\nwant %s", i, got, want.String())
		}
		if back := ParseHTTPMeta(got); back != m {
			t.Errorf("case %d: read back %+v, wrote %+v", i, back, m)
		}
	}
}
