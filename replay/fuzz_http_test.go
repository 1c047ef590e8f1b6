package replay

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// FuzzHTTPHandler: whatever a client POSTs, with whatever session and
// protocol headers, the replay answers without a 5xx and without hanging,
// on a tape with sessions and on a stateless one.
func FuzzHTTPHandler(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`,
		`{"id"000`, ``, `[]`, `{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`,
	} {
		f.Add([]byte(s), "", "2025-11-25", false)
		f.Add([]byte(s), "live-session", "", true)
	}
	built := []*tape.Index{sessionHTTPTape(f), statelessHTTPTape(f)}
	f.Fuzz(func(t *testing.T, body []byte, session, version string, stateless bool) {
		x := built[0]
		if stateless {
			x = built[1]
		}
		e, err := NewEngine(x, EngineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		h := handlerFor(t, e, HTTPOptions{NewSessionID: func() string { return "live-session" }})
		defer h.Close()
		for range 2 { // the second meets the state the first left
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(string(body)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if session != "" && validHeader(session) {
				req.Header.Set("Mcp-Session-Id", session)
			}
			if version != "" && validHeader(version) {
				req.Header.Set("Mcp-Protocol-Version", version)
			}
			rec := httptest.NewRecorder()
			done := make(chan struct{})
			go func() { defer close(done); h.ServeHTTP(rec, req) }()
			select {
			case <-done:
			case <-time.After(5 * time.Second):
				t.Fatalf("POST %q (session %q, version %q) still unanswered after 5 s", body, session, version)
			}
			if rec.Code >= 500 {
				t.Fatalf("POST %q (session %q, version %q): %d %s", body, session, version, rec.Code, rec.Body.String())
			}
		}
	})
}

// validHeader reports whether net/http would send s as a header value.
func validHeader(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}
