package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// The legacy handler and LegacyConn against each other (a unit test of the
// two pieces; cmd/tapedeck's TestLegacySSERoundTrip records and replays
// real peers): verify passes, a second client starts from the top, and
// what is not the legacy protocol gets a status that says so.
func TestLegacyHandler(t *testing.T) {
	x := buildIndex(t, nil,
		hline{tape.MethodHTTPEndpoint, "", nil},
		hline{"send", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`, nil},
		hline{"recv", `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2024-11-05","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}}}`, nil},
		hline{"send", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, nil},
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`, nil},
		hline{"recv", `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"echoing"}}`, nil},
		hline{"recv", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`, nil},
	)
	post, ok := replay.IsLegacySSE(x, "s")
	if !ok || post != "/message" {
		t.Fatalf("IsLegacySSE = %q, %v", post, ok)
	}
	h, err := replay.NewLegacyHandler(x, replay.EngineOptions{}, replay.LegacyOptions{PostPath: post})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.Close()
	for run := 1; run <= 2; run++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		conn, err := DialLegacy(ctx, srv.URL+"/sse", nil)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		rep, err := Verify(ctx, x, conn, VerifyOptions{Timeout: 5 * time.Second}, nil)
		conn.Close()
		cancel()
		if err != nil || rep.Err() != nil || len(rep.Calls) != 2 {
			t.Fatalf("run %d: %v, %v, %+v", run, err, rep.Err(), rep.Calls)
		}
	}
	if rep := h.Report(); len(rep.Divergences) != 0 || len(rep.Unused) != 0 || rep.Requests != 4 {
		t.Errorf("report after two runs: %+v", rep)
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{http.MethodPost, "/mcp", http.StatusNotFound},
		{http.MethodPost, "/message?sessionId=nope", http.StatusNotFound},
		{http.MethodPost, "/sse", http.StatusMethodNotAllowed},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s %s: %d, want %d", c.method, c.path, resp.StatusCode, c.status)
		}
	}
	// DNS rebinding: a page's request under its own host name is refused.
	hostReq, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
	hostReq.Host = "evil.example"
	hostResp, err := http.DefaultClient.Do(hostReq)
	if err != nil {
		t.Fatal(err)
	}
	hostResp.Body.Close()
	if hostResp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Host: %d, want 403", hostResp.StatusCode)
	}
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/sse", nil)
	req.Header.Set("Origin", "https://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("a foreign Origin: %d, want 403", resp.StatusCode)
	}
}
