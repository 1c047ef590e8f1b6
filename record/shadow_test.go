package record_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// shadowDiff is diff --shadow on the tape at path: each difference as
// "kind method target".
func shadowDiff(t *testing.T, path string) (compare.Report, []string) {
	t.Helper()
	side, err := compare.OpenSide(path)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Index.Close()
	r, err := compare.Shadow(side, compare.Options{})
	if err != nil {
		t.Fatalf("compare.Shadow: %v", err)
	}
	var got []string
	for _, s := range r.Servers {
		for _, c := range s.Calls {
			if c.Kind == "latency" {
				continue // the machine is shared: latencies move
			}
			got = append(got, strings.TrimSpace(c.Kind+" "+c.Method+" "+c.Target))
		}
		if s.ServerInfo != nil || s.Protocol != nil || len(s.Caps)+len(s.Definitions) > 0 {
			got = append(got, "handshake or definitions")
		}
	}
	return r, got
}

// laneRecords returns the records of the tape at path whose server is
// the shadow lane, as raw lines.
func laneRecords(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasSuffix(gjson.Get(l, "_meta.server").String(), tape.ShadowSuffix) {
			if !gjson.Get(l, "_meta.shadow").Bool() {
				t.Errorf("a lane record without _meta.shadow: %s", l)
			}
			out = append(out, l)
		}
	}
	return out
}

// TestShadowStdio records the go-sdk client with a stdio server A through
// the shim with --shadow-cmd running the go-sdk server's variant B: the
// client's transcript equals the direct run against A, and diff --shadow
// finds exactly the call B answers otherwise (answer: 43, not 42). With
// server-everything as A the client still sees A only. A B that dies at
// once is noted and changes nothing for the client.
func TestShadowStdio(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	sdk := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	args := []string{"--protocol", "2025-06-18", "--steps", "init,tools,echo,sum,progress,concurrent,error,answer,logs"}
	run := func(t *testing.T, shadowCmd string, server ...string) string {
		path := filepath.Join(t.TempDir(), "shadow.jsonl")
		direct := runClient(t, append(args, append([]string{"--"}, server...)...)...)
		shimmed := runClient(t, append(args, append([]string{"--", shim, "record", "-o", path, "--server", "a", "--shadow-cmd", shadowCmd, "--"}, server...)...)...)
		if direct != shimmed {
			t.Errorf("transcript through the shadowing shim differs.\nthrough the shim:\n%s\ndirect:\n%s", shimmed, direct)
		}
		return path
	}
	t.Run("sdkserver", func(t *testing.T) {
		path := run(t, sdk+" --variant B", sdk)
		r, got := shadowDiff(t, path)
		if strings.Join(got, "|") != "result tools/call answer" {
			t.Errorf("diff --shadow found %q, want exactly the answer call's result", got)
		}
		if s := r.Servers[0]; s.CallsA != s.CallsB || s.CallsA < 8 {
			t.Errorf("calls: A %d, lane %d; want the same, at least 8", s.CallsA, s.CallsB)
		}
		lane := laneRecords(t, path)
		if !strings.Contains(strings.Join(lane, "\n"), `"the answer is 43"`) {
			t.Errorf("the lane lacks B's answer 43:\n%s", strings.Join(lane, "\n"))
		}
		if c := lane[len(lane)-1]; gjson.Get(c, "method").String() != tape.MethodClose || gjson.Get(c, "params.unanswered").Int() != 0 {
			t.Errorf("the lane's last record is %s, want its close with nothing unanswered", c)
		}
	})
	t.Run("everything", func(t *testing.T) {
		peers := mcptest.Peers(t)
		path := run(t, sdk+" --variant B", peers.EverythingStdio()...)
		_, got := shadowDiff(t, path)
		// B is another server: its tools differ, so do their answers.
		if !strings.Contains(strings.Join(got, "|"), "handshake or definitions") {
			t.Errorf("diff --shadow of server-everything against sdkserver found %q, want the handshake to differ", got)
		}
	})
	t.Run("crashing", func(t *testing.T) {
		path := run(t, "sh -c exit", sdk)
		lane := strings.Join(laneRecords(t, path), "\n")
		if !strings.Contains(lane, tape.MethodShadowDropped) || !strings.Contains(lane, "B exited") {
			t.Errorf("the lane does not say B died:\n%s", lane)
		}
	})
}

// TestShadowHTTP records the go-sdk client through the proxy in front of
// a Streamable HTTP server A, with --shadow at the go-sdk server's variant
// B over HTTP: the transcript equals the direct run, B's session is its
// own, and diff --shadow finds exactly the answer call. With the
// TypeScript SDK's server-everything as A, or as B (over the shadow's own
// connections), diff --shadow finds their differences.
func TestShadowHTTP(t *testing.T) {
	a := mcptest.StartSDKServerHTTP(t)
	b := mcptest.StartSDKServerHTTP(t, "--variant", "B")
	everything := mcptest.StartEverythingHTTP(t)
	for _, tc := range []struct {
		name, upstream, shadow string
		want                   string
	}{
		{"sdkserver", a, b, "result tools/call answer"},
		{"everything", everything, b, ""},
		// B the TypeScript SDK's server-everything, over the shadow's own
		// connections: a B nobody here wrote.
		{"everything-as-B", a, everything, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, _ := url.Parse(tc.upstream)
			bu, _ := url.Parse(tc.shadow)
			path := filepath.Join(t.TempDir(), "shadow.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			p := &record.Proxy{Upstream: up, Tape: f, Server: "a", Shadow: &record.ShadowOptions{URL: bu}}
			if err := p.Start("test", "test"); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			args := []string{"--protocol", "2025-06-18", "--steps", "init,tools,echo,sum,error,answer"}
			direct := runClient(t, append(args, "--url", tc.upstream)...)
			proxied := runClient(t, append(args, "--url", srv.URL+up.Path)...)
			srv.Close()
			if err := p.Close("test over"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if direct != proxied {
				t.Errorf("transcript through the shadowing proxy differs.\nthrough it:\n%s\ndirect:\n%s", proxied, direct)
			}
			lane := laneRecords(t, path)
			aSession, bSession := "", ""
			whole, _ := os.ReadFile(path)
			for _, l := range strings.Split(string(whole), "\n") {
				if s := gjson.Get(l, "_meta.newSession").String(); s != "" {
					if strings.HasSuffix(gjson.Get(l, "_meta.server").String(), tape.ShadowSuffix) {
						bSession = s
					} else {
						aSession = s
					}
				}
			}
			if bSession == "" || bSession == aSession {
				t.Errorf("B's session %q, A's %q: want B's own", bSession, aSession)
			}
			_, got := shadowDiff(t, path)
			if tc.want != "" && strings.Join(got, "|") != tc.want {
				t.Errorf("diff --shadow found %q, want %q", got, tc.want)
			}
			if tc.want == "" && len(got) == 0 {
				t.Errorf("diff --shadow of server-everything against sdkserver found nothing; lane:\n%s", strings.Join(lane, "\n"))
			}
		})
	}
}

// TestShadowHTTPDelete closes B's session when the client DELETEs its own:
// B gets a DELETE with the session B gave (not A's), after the call before
// it, and the lane records it as an $http/exchange of B's session.
func TestShadowHTTPDelete(t *testing.T) {
	type seen struct{ method, session, body string }
	server := func(session string, got chan<- seen) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			got <- seen{r.Method, r.Header.Get("Mcp-Session-Id"), string(body)}
			id := gjson.GetBytes(body, "id")
			switch {
			case r.Method == http.MethodDelete:
				w.WriteHeader(http.StatusOK)
			case !id.Exists():
				w.WriteHeader(http.StatusAccepted)
			default:
				if gjson.GetBytes(body, "method").String() == "initialize" {
					w.Header().Set("Mcp-Session-Id", session)
				}
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"jsonrpc":"2.0","id":`+id.Raw+`,"result":{}}`)
			}
		}))
	}
	aGot, bGot := make(chan seen, 16), make(chan seen, 16)
	a, b := server("a-session", aGot), server("b-session", bGot)
	defer a.Close()
	defer b.Close()
	up, _ := url.Parse(a.URL + "/mcp")
	bu, _ := url.Parse(b.URL + "/mcp")
	path := filepath.Join(t.TempDir(), "shadow.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := &record.Proxy{Upstream: up, Tape: f, Server: "a", Shadow: &record.ShadowOptions{URL: bu}}
	if err := p.Start("test", "test"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	defer srv.Close()
	do := func(method, session, body string) *http.Response {
		req, _ := http.NewRequest(method, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := do("POST", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	sid := resp.Header.Get("Mcp-Session-Id")
	if sid != "a-session" {
		t.Fatalf("the client got session %q, want A's a-session", sid)
	}
	do("POST", sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	do("POST", sid, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if resp := do("DELETE", sid, ""); resp.StatusCode != http.StatusOK {
		t.Fatalf("DELETE through the proxy: status %d, want A's 200", resp.StatusCode)
	}
	var bSeen []seen
	deadline := time.After(5 * time.Second)
	for len(bSeen) < 4 {
		select {
		case s := <-bGot:
			bSeen = append(bSeen, s)
		case <-deadline:
			t.Fatalf("B saw %d requests in 5 s, want 4 (initialize, initialized, tools/list, DELETE): %+v", len(bSeen), bSeen)
		}
	}
	if err := p.Close("test over"); err != nil {
		t.Fatal(err)
	}
	last := bSeen[3]
	if last.method != http.MethodDelete || last.session != "b-session" {
		t.Errorf("B's last request: %s with session %q, want DELETE with B's own b-session", last.method, last.session)
	}
	if m := gjson.Get(bSeen[2].body, "method").String(); m != "tools/list" {
		t.Errorf("B's third request is %q, want tools/list before the DELETE", m)
	}
	var deletes []string
	for _, l := range laneRecords(t, path) {
		if gjson.Get(l, "method").String() == tape.MethodHTTPExchange && gjson.Get(l, "params.method").String() == "DELETE" {
			deletes = append(deletes, l)
		}
	}
	if len(deletes) != 1 || gjson.Get(deletes[0], "params.status").Int() != 200 ||
		gjson.Get(deletes[0], "_meta.session").String() != "b-session" ||
		gjson.Get(deletes[0], "_meta.shadowSession").String() != "a-session" {
		t.Errorf("the lane's DELETE records: %q, want one with status 200, B's session b-session, the client's a-session", deletes)
	}
}
