package tape

import "testing"

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
