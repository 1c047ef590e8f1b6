package intercept

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/debug"
)

// syncBuffer is a tape in memory.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// An attached client's request is held, forwarded on the verdict to the
// server (cat, which says it back), recorded, and Close ends the service.
func TestServeStdioHoldsAndRecords(t *testing.T) {
	s := breaking(t, "tools/call")
	var tp syncBuffer
	addr, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0", Command: "cat", Tape: &tp, Server: "cat", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next(t, s, debug.InterceptInfo) // a client attached
	if _, err := c.Write([]byte(call + "\n")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"send", "recv"} { // cat says the request back: held again
		ev := next(t, s, debug.InterceptHeld)
		if string(ev.Dir) != dir || string(ev.Raw) != call {
			t.Fatalf("held %s %s, want %s %s", ev.Dir, ev.Raw, dir, call)
		}
		s.Settle(ev.ID, debug.Verdict{Action: debug.Forward})
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != call {
		t.Fatalf("the client read %q (%v), want %s", line, err, call)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := tp.String()
	if strings.Count(got, `"method":"tools/call"`) != 2 || !strings.Contains(got, "$transport/start") {
		t.Errorf("the tape holds\n%s\nwant the start record and the call both ways", got)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("the listener still accepts after Close")
	}
}

func TestServeNeedsOneServer(t *testing.T) {
	s := New()
	defer s.Close()
	if _, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "found neither") {
		t.Errorf("Serve without a server: %v", err)
	}
}

// debug --upstream --proxy-auth: Options.ProxyAuth reaches the recording
// proxy, whose protected resource metadata then names the proxy as the
// authorization server (without it, the real one, as the upstream said).
func TestServeProxyAuth(t *testing.T) {
	const as = "https://auth.example.com/tenant"
	var up *httptest.Server
	up = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"resource":"`+up.URL+`/mcp","authorization_servers":["`+as+`"]}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	for _, tc := range []struct {
		proxyAuth bool
		want      func(addr string) string
	}{
		{true, func(addr string) string { return "http://" + addr + "/tapedeck-auth/1" }},
		{false, func(string) string { return as }},
	} {
		s := New()
		var tp syncBuffer
		addr, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0", Upstream: u, ProxyAuth: tc.proxyAuth, Tape: &tp, Server: "up", Version: "test"})
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.Get("http://" + addr + "/.well-known/oauth-protected-resource/mcp")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if got := gjson.GetBytes(body, "authorization_servers.0").String(); got != tc.want(addr) {
			t.Errorf("ProxyAuth %v: authorization_servers.0 %q, want %q (metadata %s)", tc.proxyAuth, got, tc.want(addr), body)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	s := New()
	defer s.Close()
	if _, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0", Command: "cat", ProxyAuth: true}); err == nil || !strings.Contains(err.Error(), "ProxyAuth goes with an upstream URL") {
		t.Errorf("ProxyAuth with a command: %v, want it refused", err)
	}
}
