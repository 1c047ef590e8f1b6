package tui

import (
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// The OAuth handshake reads as rows: the 401 with its resource_metadata,
// the metadata document served, the 403 step-up with the scope it asks
// for, and the requests they refused marked challenged (not pending).
func TestAuthRows(t *testing.T) {
	x, err := tape.OpenIndex("../tape/testdata/oauth-stepup.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	c := newRowCache(x)
	const meta = "http://127.0.0.1:47123/.well-known/oauth-protected-resource/mcp"
	for _, w := range []struct {
		seq             int
		summary, status string
	}{
		{1, "ts-oauth-client 1.0.0 · 2025-11-25", "challenged"},
		{2, "401 challenge: resource_metadata=" + meta + " · error=invalid_token", ""},
		{3, "metadata /.well-known/oauth-protected-resource/mcp · resource http://127.0.0.1:47123/mcp · authorization server http://127.0.0.1:45741/ · scopes mcp:tools mcp:admin", ""},
		{10, "", "challenged"},
		{11, `403 step-up: scope="mcp:tools mcp:admin" · error=insufficient_scope · resource_metadata=` + meta, ""},
		{12, "", ""},
	} {
		r := c.get(w.seq)
		if w.summary != "" && r.summary != w.summary {
			t.Errorf("row %d (%s) summary:\ngot  %s\nwant %s", w.seq, r.entry.Method, r.summary, w.summary)
		}
		if r.status != w.status {
			t.Errorf("row %d (%s) status: got %q, want %q", w.seq, r.entry.Method, r.status, w.status)
		}
	}
}

// An authorization server exchange through the proxy (record
// --proxy-auth) reads as its endpoint, method and status, and where a
// redirect led.
func TestAuthServerSummary(t *testing.T) {
	for _, c := range []struct{ params, want string }{
		{`{"endpoint":"token","method":"POST","path":"/tapedeck-auth/1/token","status":200}`, "token POST 200 · /tapedeck-auth/1/token"},
		{`{"endpoint":"authorization","method":"GET","path":"/tapedeck-auth/1/authorize","status":302,"response":{"location":{"url":"http://127.0.0.1:9/callback","query":{"code":"[REDACTED] sha256:0123456789ab"}}}}`, "authorization GET 302 → http://127.0.0.1:9/callback"},
		{`{"endpoint":"metadata","method":"GET","path":"/.well-known/oauth-authorization-server/tapedeck-auth/1","status":502,"error":"connection refused"}`, "metadata GET 502 · connection refused"},
	} {
		raw := []byte(`{"jsonrpc":"2.0","method":"` + tape.MethodHTTPAuth + `","params":` + c.params + `}`)
		if got := lifecycleSummary(raw, tape.MethodHTTPAuth); got != c.want {
			t.Errorf("summary:\ngot  %s\nwant %s", got, c.want)
		}
	}
}
