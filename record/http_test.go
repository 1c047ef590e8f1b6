package record_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// startProxy runs a recording proxy in-process in front of upstream and
// returns the URL a client should use and the tape's path.
func startProxy(t *testing.T, upstream string, configure func(*record.Proxy)) (string, string) {
	t.Helper()
	up, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "http.jsonl")
	f, _, err := tape.Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	p := &record.Proxy{Upstream: up, Tape: f, Server: "upstream"}
	if configure != nil {
		configure(p)
	}
	srv := httptest.NewServer(p)
	if err := p.Start(srv.Listener.Addr().String(), "test"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
		if err := p.Close("test over"); err != nil {
			t.Error(err)
		}
		f.Close()
	})
	return srv.URL + up.Path, path
}

// TestProxyEverything records the go-sdk client with server-everything in
// streamable HTTP mode, in both protocol eras of the client.
func TestProxyEverything(t *testing.T) {
	upstream := mcptest.StartEverythingHTTP(t)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"default", []string{"--roots"}, []string{"send server/discover", "send initialize", "recv roots/list", "recv notifications/progress", "recv notifications/message"}},
		{"2025-06-18", []string{"--protocol", "2025-06-18"}, []string{"send initialize", "recv notifications/progress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxied, path := startProxy(t, upstream, nil)
			direct := runClient(t, append(tc.args, "--url", upstream)...)
			through := runClient(t, append(tc.args, "--url", proxied)...)
			if direct != through {
				t.Errorf("transcript through the proxy differs.\nthrough the proxy:\n%s\ndirect:\n%s", through, direct)
			}
			m := tapeSummary(t, path)
			wantMethods(t, m, append(tc.want, "send tools/call", "send notifications/initialized", "lifecycle $http/exchange")...)
			data, _ := os.ReadFile(path)
			for _, want := range []string{`"transport":"http"`, `"status":200`, `"newSession":"`, `"stream":`, `"status":202`} {
				if !bytes.Contains(data, []byte(want)) {
					t.Errorf("tape lacks %s", want)
				}
			}
		})
	}
}

// TestProxySDKServer records the go-sdk pair over HTTP in the 2026-07-28
// era (no sessions, Mcp-Method headers) and the 2025-06-18 era, through the
// tapedeck binary, stopped by SIGINT like a user would.
func TestProxySDKServer(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	upstream := mcptest.StartSDKServerHTTP(t)
	for _, proto := range []string{"", "2025-06-18"} {
		t.Run("protocol="+proto, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sdk-http.jsonl")
			cmd := exec.Command(shim, "record", "--upstream", upstream, "-o", path)
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			p := mcptest.Start(t, cmd)
			line, err := bufio.NewReader(stdout).ReadString('\n')
			if err != nil {
				t.Fatalf("no proxy URL on stdout: %v\n%s", err, stderr.String())
			}
			proxied := strings.TrimSpace(line)
			args := []string{"--roots"}
			if proto != "" {
				args = append(args, "--protocol", proto)
			}
			direct := runClient(t, append(args, "--url", upstream)...)
			through := runClient(t, append(args, "--url", proxied)...)
			if direct != through {
				t.Errorf("transcript through the proxy differs.\nthrough the proxy:\n%s\ndirect:\n%s", through, direct)
			}
			if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(10 * time.Second)
			for {
				if exited, err := p.Exited(); exited {
					if err != nil {
						t.Fatalf("tapedeck record exited with %v\n%s", err, stderr.String())
					}
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("tapedeck record did not stop on SIGINT")
				}
				time.Sleep(20 * time.Millisecond)
			}
			m := tapeSummary(t, path)
			// A stateful go-sdk HTTP server declines 2026-07-28 (only
			// stateless ones speak it, see TestProxyStateless): the default
			// client probes server/discover, then initializes.
			if proto == "" {
				wantMethods(t, m, "send server/discover")
			}
			wantMethods(t, m, "send initialize", "recv roots/list", "send tools/call", "lifecycle $transport/close")
		})
	}
}

// TestProxyOriginAndCredentials checks the Origin check and that credential
// headers reach the server but never the tape.
func TestProxyOriginAndCredentials(t *testing.T) {
	var seen http.Header
	var paths []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = r.Header.Clone()
		paths = append(paths, r.URL.Path)
		w.Header().Set("Set-Cookie", "session=cookie-secret-42")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	post := func(url, host, origin string) *http.Response {
		req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Authorization", "Bearer auth-secret-17")
		req.Header.Set("X-Api-Key", "key-secret-99")
		req.Header.Set("Content-Type", "application/json")
		if host != "" {
			req.Host = host
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	// Loopback origins and none (not a browser) go to the server as sent.
	for _, origin := range []string{"", "http://localhost:3000"} {
		if got := post(proxied, "", origin).StatusCode; got != 200 {
			t.Errorf("Origin %q: status %d, want the server's 200", origin, got)
		}
		if seen.Get("Origin") != origin {
			t.Errorf("Origin %q reached the server as %q", origin, seen.Get("Origin"))
		}
	}
	// The proxy's own listener is guarded by Host (a DNS-rebinding page
	// reaches it under its own name), and serves the MCP endpoint only.
	n := len(paths)
	if got := post(proxied, "evil.example", "").StatusCode; got != http.StatusForbidden {
		t.Errorf("Host evil.example: status %d, want 403", got)
	}
	if got := post(strings.Replace(proxied, "/mcp", "/admin/anything", 1), "", "").StatusCode; got != http.StatusNotFound {
		t.Errorf("a path besides the MCP endpoint: status %d, want 404", got)
	}
	if len(paths) != n {
		t.Errorf("refused requests reached the server: %v", paths[n:])
	}
	if seen.Get("Authorization") != "Bearer auth-secret-17" || seen.Get("X-Api-Key") != "key-secret-99" {
		t.Errorf("credentials did not reach the server: %v", seen)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"auth-secret-17", "key-secret-99", "cookie-secret-42"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("tape holds %q:\n%s", secret, data)
		}
	}
	if !bytes.Contains(data, []byte(`"method":"$http/rejected"`)) || !bytes.Contains(data, []byte(`"host":"evil.example"`)) {
		t.Errorf("tape lacks the rejected request:\n%s", data)
	}
}

// TestProxyForeignOrigin: a web page's simple POST (text/plain, so no CORS
// preflight) must not reach the upstream with the credentials the proxy adds
// (the upstream URL's user info and query): a foreign Origin gets 403 and a
// $http/rejected record, and nothing reaches the server; an allowed Origin
// and a request without one (a non-browser client) pass.
func TestProxyForeignOrigin(t *testing.T) {
	var mu sync.Mutex
	var got []string // "Origin|user|query" of each request the upstream saw
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, _, _ := r.BasicAuth()
		mu.Lock()
		got = append(got, r.Header.Get("Origin")+"|"+user+"|"+r.URL.RawQuery)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	upstream := "http://ann:pw-secret-1@" + u.Host + "/mcp?api_key=QSECRET1"
	post := func(proxied, origin string) int {
		req, _ := http.NewRequest("POST", proxied, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"delete_everything"}}`))
		req.Header.Set("Content-Type", "text/plain")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	seen := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(got)
	}

	proxied, path := startProxy(t, upstream, nil)
	for _, origin := range []string{"http://evil.example", "null", "https://127.0.0.1.evil.example"} {
		if status := post(proxied, origin); status != http.StatusForbidden {
			t.Errorf("Origin %q: status %d, want 403", origin, status)
		}
	}
	if s := seen(); len(s) != 0 {
		t.Fatalf("foreign origins reached the upstream: %q", s)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"method":"$http/rejected"`)) || !bytes.Contains(data, []byte(`"origin":"http://evil.example"`)) {
		t.Errorf("tape lacks the rejected request:\n%s", data)
	}
	if bytes.Contains(data, []byte("delete_everything")) {
		t.Errorf("tape records the refused request's body as a message:\n%s", data)
	}
	// No Origin (a non-browser client) and a loopback one pass, with the
	// upstream's credentials.
	for _, origin := range []string{"", "http://localhost:5173"} {
		if status := post(proxied, origin); status != 200 {
			t.Errorf("Origin %q: status %d, want 200", origin, status)
		}
	}
	if s, want := seen(), []string{"|ann|api_key=QSECRET1", "http://localhost:5173|ann|api_key=QSECRET1"}; !slices.Equal(s, want) {
		t.Errorf("upstream saw %q, want %q", s, want)
	}

	// AllowOrigins names exceptions, passed on as sent; "*" lets every
	// Origin through, so that the server's own check decides.
	proxied, _ = startProxy(t, upstream, func(p *record.Proxy) { p.AllowOrigins = []string{"https://app.example"} })
	if status := post(proxied, "https://app.example"); status != 200 {
		t.Errorf("allowed Origin: status %d, want 200", status)
	}
	if status := post(proxied, "http://evil.example"); status != http.StatusForbidden {
		t.Errorf("Origin http://evil.example with another allowed: status %d, want 403", status)
	}
	proxied, _ = startProxy(t, upstream, func(p *record.Proxy) { p.AllowOrigins = []string{"*"} })
	if status := post(proxied, "http://evil.example"); status != 200 {
		t.Errorf("Origin http://evil.example with '*' allowed: status %d, want 200", status)
	}
	if s := seen(); len(s) != 4 || s[2] != "https://app.example|ann|api_key=QSECRET1" || s[3] != "http://evil.example|ann|api_key=QSECRET1" {
		t.Errorf("upstream saw %q, want the allowed origins passed on", s)
	}
}

// TestProxyUpstreamURLSecrets: secrets in the upstream URL (user info,
// signed query parameters) reach the server but never the tape.
func TestProxyUpstreamURLSecrets(t *testing.T) {
	var user, pass, query string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		user, pass, _ = r.BasicAuth()
		query = r.URL.RawQuery
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	upstream := "http://ann:pw-secret-1@" + u.Host + "/mcp?api_key=QSECRET1&sig=QSECRET2&access-token=QSECRET3&se=2026-12-01"
	proxied, path := startProxy(t, upstream, nil)
	resp, err := http.Post(proxied, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if user != "ann" || pass != "pw-secret-1" {
		t.Errorf("upstream saw basic auth %q:%q, want the URL's user info", user, pass)
	}
	if !strings.Contains(query, "sig=QSECRET2") {
		t.Errorf("upstream saw query %q, want the upstream URL's signed query", query)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"pw-secret-1", "QSECRET1", "QSECRET2", "QSECRET3"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("tape holds %q:\n%s", secret, data)
		}
	}
	// Every value is redacted (a parameter named private_key, pwd or jwt is
	// as secret as api_key); the names stay, to show what was there.
	if bytes.Contains(data, []byte("2026-12-01")) || !bytes.Contains(data, []byte("se=%5BREDACTED%5D")) {
		t.Errorf("tape should name the query parameter se with its value redacted:\n%s", data)
	}
	// A client given the upstream URL's query sends it too: each parameter
	// reaches the upstream once.
	resp, err = http.Post(proxied+"?sig=QSECRET2&api_key=QSECRET1&x=1", "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	q, _ := url.ParseQuery(query)
	if len(q["sig"]) != 1 || len(q["api_key"]) != 1 || q.Get("x") != "1" {
		t.Errorf("upstream saw query %q, want each parameter once and the client's own x", query)
	}
}

// TestProxySSEEventByEvent checks that SSE events reach the client one by
// one as the server sends them, each on the tape before the client has it,
// and that priming events, resumption and legacy endpoint events are kept.
func TestProxySSEEventByEvent(t *testing.T) {
	release := make(chan struct{})
	var lastEventID string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		switch r.URL.Path {
		case "/sse": // legacy HTTP+SSE
			io.WriteString(w, "event: endpoint\ndata: http://"+r.Host+"/messages?sessionId=abc\n\n")
			fl.Flush()
			return
		}
		lastEventID = r.Header.Get("Last-Event-ID")
		io.WriteString(w, "id: 0\ndata:\n\n") // priming event
		io.WriteString(w, "id: 1\nevent: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"progress\":1}}\n\n")
		fl.Flush()
		<-release
		io.WriteString(w, "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}}\n\n")
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)

	req, _ := http.NewRequest("GET", proxied, nil)
	req.Header.Set("Last-Event-ID", "0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	readEvent := func() string {
		var ev strings.Builder
		for {
			l, err := br.ReadString('\n')
			if err != nil {
				t.Fatalf("reading the stream: %v (got %q)", err, ev.String())
			}
			ev.WriteString(l)
			if l == "\n" {
				return ev.String()
			}
		}
	}
	if ev := readEvent(); ev != "id: 0\ndata:\n\n" {
		t.Errorf("priming event %q", ev)
	}
	if ev := readEvent(); !strings.Contains(ev, "notifications/progress") {
		t.Errorf("first event %q", ev)
	}
	// The second event is held by the server: the first must have come
	// through alone, and be on the tape already.
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"notifications/progress"`)) || !bytes.Contains(data, []byte(`"event":"1"`)) {
		t.Errorf("first event not on the tape when the client had it:\n%s", data)
	}
	close(release)
	if ev := readEvent(); !strings.Contains(ev, `"id":5`) {
		t.Errorf("second event %q", ev)
	}
	if lastEventID != "0" {
		t.Errorf("upstream saw Last-Event-ID %q, want 0", lastEventID)
	}

	// Legacy endpoint event: rewritten to name the proxy (one proxying the
	// legacy /sse endpoint: a proxy serves its upstream's path only).
	legacy, legacyPath := startProxy(t, up.URL+"/sse", nil)
	u, _ := url.Parse(legacy)
	lresp, err := http.Get(legacy)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(lresp.Body)
	lresp.Body.Close()
	if want := "event: endpoint\ndata: http://" + u.Host + "/messages?sessionId=abc\n\n"; string(body) != want {
		t.Errorf("endpoint event %q, want %q", body, want)
	}
	data, _ = os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"lastEventId":"0"`)) {
		t.Errorf("tape lacks the Last-Event-ID:\n%s", data)
	}
	data, _ = os.ReadFile(legacyPath)
	if !bytes.Contains(data, []byte(`"method":"$http/endpoint"`)) {
		t.Errorf("legacy tape lacks the endpoint:\n%s", data)
	}
}

type echoIn struct {
	Message string `json:"message"`
}

// TestProxyStateless records the 2026-07-28 era over HTTP: a stateless
// go-sdk server (the only kind that speaks it; the peers' sdkserver is
// stateful, so this one is built here), no sessions, no initialize, and
// Mcp-Method headers that must reach the server.
func TestProxyStateless(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "stateless", Version: "1.0.0"}, nil)
	mcp.AddTool(server, &mcp.Tool{Name: "echo", Description: "Echoes back the message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &mcp.StreamableHTTPOptions{Stateless: true})
	var mu sync.Mutex
	var methods []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		methods = append(methods, r.Header.Get("Mcp-Method"))
		mu.Unlock()
		handler.ServeHTTP(w, r)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	args := []string{"--steps", "init,tools,echo"}
	direct := runClient(t, append(args, "--url", up.URL+"/mcp")...)
	through := runClient(t, append(args, "--url", proxied)...)
	if direct != through || !strings.Contains(through, "protocol 2026-07-28") {
		t.Errorf("transcripts differ or are not 2026-07-28.\nthrough the proxy:\n%s\ndirect:\n%s", through, direct)
	}
	mu.Lock()
	if !slices.Contains(methods, "tools/call") {
		t.Errorf("Mcp-Method headers seen by the server: %q, want tools/call among them", methods)
	}
	mu.Unlock()
	m := tapeSummary(t, path)
	wantMethods(t, m, "send server/discover", "send tools/list", "send tools/call")
	if m["send initialize"] != 0 {
		t.Errorf("2026-07-28 session sent initialize: %v", m)
	}
	data, _ := os.ReadFile(path)
	if bytes.Contains(data, []byte(`"session":`)) || bytes.Contains(data, []byte(`"newSession":`)) {
		t.Errorf("a sessionless era recorded a session:\n%s", data)
	}
	// The real client's 2026-07-28 headers are on the tape for replay.
	call := findRecord(t, path, tape.DirSend, "tools/call")
	for key, want := range map[string]string{"mcpMethod": "tools/call", "mcpName": "echo", "protocolVersion": "2026-07-28"} {
		if got := call[key]; got != want {
			t.Errorf("tools/call _meta.%s = %v, want %q (line %s)", key, got, want, call["line"])
		}
	}
}

// findRecord returns the _meta of the first record of method in direction
// dir, with its line number under "line".
func findRecord(t *testing.T, path string, dir tape.Dir, method string) map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tape.NewReader(f)
	for {
		e, err := r.Next()
		if err == io.EOF {
			t.Fatalf("no %s %s on the tape %s", dir, method, path)
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Dir != dir || e.Method != method {
			continue
		}
		var m struct {
			Meta map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(e.Raw, &m); err != nil {
			t.Fatalf("line %d: %v", e.Line, err)
		}
		m.Meta["line"] = fmt.Sprint(e.Line)
		return m.Meta
	}
}

// TestProxyRequestHeaders checks that the request headers replay needs
// (MCP-Protocol-Version, Mcp-Method, Mcp-Name) are recorded in _meta, the
// version on the answer too, and credential headers nowhere.
func TestProxyRequestHeaders(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":7,"result":{}}`)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	req, _ := http.NewRequest("POST", proxied, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("MCP-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", "tools/call")
	req.Header.Set("Mcp-Name", "echo")
	req.Header.Set("Authorization", "Bearer hdr-secret-1")
	req.Header.Set("X-Auth-Token", "hdr-secret-2")
	req.Header.Set("Cookie", "sid=hdr-secret-3")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	sent := findRecord(t, path, tape.DirSend, "tools/call")
	for key, want := range map[string]string{"protocolVersion": "2026-07-28", "mcpMethod": "tools/call", "mcpName": "echo"} {
		if got := sent[key]; got != want {
			t.Errorf("request _meta.%s = %v, want %q", key, got, want)
		}
	}
	got := findRecord(t, path, tape.DirRecv, "")
	if got["protocolVersion"] != "2026-07-28" {
		t.Errorf("answer _meta.protocolVersion = %v, want 2026-07-28", got["protocolVersion"])
	}
	if _, ok := got["mcpMethod"]; ok {
		t.Errorf("answer _meta has mcpMethod %v; it belongs to the request's record", got["mcpMethod"])
	}
	data, _ := os.ReadFile(path)
	for _, secret := range []string{"hdr-secret-1", "hdr-secret-2", "hdr-secret-3"} {
		if bytes.Contains(data, []byte(secret)) {
			t.Errorf("tape holds %q:\n%s", secret, data)
		}
	}
}

// TestProxyBatches records a 2025-03-26 style batch both ways and a 202.
func TestProxyBatches(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !bytes.Contains(body, []byte(`"id"`)) {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"no"}}]`)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	for _, body := range []string{
		`[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"nope"},{"jsonrpc":"2.0","method":"notifications/x"}]`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	} {
		resp, err := http.Post(proxied, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.Contains(body, `"id"`) && !strings.HasPrefix(string(got), `[{"jsonrpc":"2.0","id":1,"result":{}}`) {
			t.Errorf("client got %q", got)
		}
	}
	m := tapeSummary(t, path)
	wantMethods(t, m, "send ping", "send nope", "send notifications/x", "send notifications/initialized", "lifecycle $http/exchange")
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	data, _ := os.ReadFile(path)
	if n := bytes.Count(data, []byte(`"batch":`)); n != 5 {
		t.Errorf("%d lines with _meta.batch, want 5 (3 sent, 2 received):\n%s", n, data)
	}
	if !bytes.Contains(data, []byte(`"status":202`)) {
		t.Errorf("no 202 exchange on the tape:\n%s", data)
	}
}

// A body over MaxBody gets 413 and never reaches the server; the tape says
// so. (A 1 GB chunked POST was buffered whole.)
func TestProxyMaxBody(t *testing.T) {
	reached := 0
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached++
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":1,"result":{}}`)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", func(p *record.Proxy) { p.MaxBody = 1 << 10 })
	body := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 4<<10) + `"}}`
	resp, err := http.Post(proxied, "application/json", io.MultiReader(strings.NewReader(body))) // chunked: no Content-Length
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || reached != 0 {
		t.Errorf("a 4 KiB body with a 1 KiB limit: %s, upstream reached %d times; want 413 and 0", resp.Status, reached)
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"status":413`)) || bytes.Contains(data, []byte("xxxx")) {
		t.Errorf("tape:\n%.400s", data)
	}
}

// An upstream SSE event without end is relayed as it comes, not buffered
// (6.5 GB in 12 s), and recorded by size; the events after it are recorded
// as usual.
func TestProxySSEOversizeEvent(t *testing.T) {
	big := strings.Repeat("x", 50_000)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"method\":\"a\",\"params\":{\"blob\":\""+big+"\"}}\n\n")
		io.WriteString(w, "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n")
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", func(p *record.Proxy) { p.MaxEvent = 1000 })
	resp, err := http.Post(proxied, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"x"}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), big) || !strings.Contains(string(body), `"id":1,"result"`) {
		t.Errorf("the client got %d bytes, want both events whole", len(body))
	}
	data, _ := os.ReadFile(path)
	if !bytes.Contains(data, []byte(`"method":"$transport/oversize"`)) || bytes.Contains(data, []byte(big)) || !bytes.Contains(data, []byte(`"id":1,"result"`)) {
		t.Errorf("tape:\n%.600s", data)
	}
}

// Two clients that initialize at once, both with id 0 and no session yet,
// are told apart on the tape (_meta.exchange): each request pairs with the
// answer that gave it its session, and no "id reused" warning.
func TestProxyConcurrentInitialize(t *testing.T) {
	var (
		mu      sync.Mutex
		arrived int
		both    = make(chan struct{})
	)
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		name := gjson.GetBytes(body, "params.clientInfo.name").String()
		mu.Lock()
		if arrived++; arrived == 2 {
			close(both)
		}
		mu.Unlock()
		<-both // both requests are on the tape before either answer
		if name == "first" {
			time.Sleep(20 * time.Millisecond) // the second is answered first
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "session-of-"+name)
		io.WriteString(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"up","version":"1"}}}`)
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	var wg sync.WaitGroup
	for _, name := range []string{"first", "second"} {
		wg.Go(func() {
			body := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"` + name + `","version":"1"}}}`
			resp, err := http.Post(proxied, "application/json", strings.NewReader(body))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if ws := x.Warnings(); len(ws) != 0 {
		t.Errorf("warnings: %v", ws)
	}
	paired := 0
	for i := range x.Len() {
		if x.Entry(i).Method != "initialize" || x.Entry(i).Kind != tape.KindRequest {
			continue
		}
		req, _ := x.Message(i)
		p := x.Pair(i)
		if p.Partner < 0 {
			t.Fatalf("initialize at line %d is unpaired", x.Entry(i).Line)
		}
		resp, _ := x.Message(p.Partner)
		name := gjson.GetBytes(req.Raw, "params.clientInfo.name").String()
		if got := gjson.GetBytes(resp.Raw, "_meta.newSession").String(); got != "session-of-"+name {
			t.Errorf("%s's initialize paired with the answer that assigned %q", name, got)
		}
		paired++
	}
	if paired != 2 {
		t.Errorf("%d initializes paired, want 2", paired)
	}
}

// A POST answered with an SSE stream that the server primes with an event
// id and closes before any message (for the client to resume with
// Last-Event-ID) is on the tape: the recorder used to write nothing of it.
func TestProxySSEStreamWithoutMessage(t *testing.T) {
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "id: ev-7\ndata: \n\n")
	}))
	defer up.Close()
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	resp, err := http.Post(proxied, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"poll"}}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), "id: ev-7") {
		t.Fatalf("the client got %q", body)
	}
	// The client may have its last byte (the body has a length) before the
	// proxy reads the upstream's end and writes the record: wait for it.
	var data []byte
	var found bool
	for deadline := time.Now().Add(5 * time.Second); !found && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		data, _ = os.ReadFile(path)
		for _, l := range strings.Split(string(data), "\n") {
			if strings.Contains(l, `"$http/exchange"`) && strings.Contains(l, `"messages":0`) && strings.Contains(l, `"lastEvent":"ev-7"`) && strings.Contains(l, `"method":"POST"`) {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no record of the stream that ended without a message:\n%s", data)
	}
}
