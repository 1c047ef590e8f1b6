package record_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/record"
)

// TestShadowHold checks when B gets the copy of a client request: once
// A's answer to it was forwarded to the client (B's exchange kept out of
// the client's), and no later than ShadowOptions.Hold when A is slow.
// The messages reach B in the client's order either way.
func TestShadowHold(t *testing.T) {
	for _, c := range []struct {
		name       string
		aDelay     time.Duration // A's answer to tools/call
		hold       time.Duration
		afterA     bool          // B gets tools/call only after the client has A's answer
		within     time.Duration // B gets it at most this long after it was sent
		unanswered bool
	}{
		{name: "held until A answered", aDelay: 300 * time.Millisecond, hold: time.Minute, afterA: true, within: time.Minute},
		{name: "a slow A holds no longer than Hold", aDelay: 3 * time.Second, hold: 50 * time.Millisecond, within: 1500 * time.Millisecond},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			aH := jsonEchoMethod(c.aDelay)
			var aDone time.Time // A wrote its answer to the tools/call
			a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				aH(w, r, body)
				if method(body) == "tools/call" {
					w.(http.Flusher).Flush()
					mu.Lock()
					aDone = time.Now()
					mu.Unlock()
				}
			}))
			defer a.Close()
			var order []string
			got := map[string]time.Time{}
			b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				m := method(body)
				mu.Lock()
				order = append(order, m)
				got[m] = time.Now()
				mu.Unlock()
				jsonEchoMethod(0)(w, r, body)
			}))
			defer b.Close()
			au, _ := url.Parse(a.URL + "/mcp")
			bu, _ := url.Parse(b.URL + "/mcp")
			f, err := os.Create(filepath.Join(t.TempDir(), "t.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			p := &record.Proxy{Upstream: au, Tape: f, Server: "a", Shadow: &record.ShadowOptions{URL: bu, Hold: c.hold, Drain: 5 * time.Second}}
			if err := p.Start("test", "1"); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			post := func(body string) time.Time {
				postS1(t, srv.URL, body)
				return time.Now()
			}
			post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
			post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			sent := time.Now()
			answered := post(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
			post(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
			// B gets the last notification after its 202 was forwarded:
			// wait for it (Close cancels B's requests in flight).
			waitFor(&mu, func() bool { return len(order) >= 4 })
			srv.Close()
			if err := p.Close("test over"); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			at, ok := got["tools/call"]
			if !ok {
				t.Fatalf("B never got the tools/call; it got %v", order)
			}
			if c.afterA && !at.After(aDone) {
				t.Errorf("B got the tools/call %v before A answered it: expected it after the answer was forwarded", aDone.Sub(at))
			}
			if !c.afterA && !at.Before(answered) {
				t.Errorf("B got the tools/call only after A answered (%v after it was sent, A took %v): expected it within the hold %v", at.Sub(sent), answered.Sub(sent), c.hold)
			}
			if d := at.Sub(sent); d > c.within {
				t.Errorf("B got the tools/call %v after it was sent: expected within %v", d, c.within)
			}
			want := "initialize notifications/initialized tools/call notifications/roots/list_changed"
			if g := strings.Join(order, " "); g != want {
				t.Errorf("B got %q, expected the client's order %q", g, want)
			}
		})
	}
}

// postS1 posts body to the proxy at url's /mcp in session s1 and reads
// its answer.
func postS1(t *testing.T, url, body string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", "s1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// waitFor waits up to 5 s for done, read under mu (B's copies arrive after
// their answers were forwarded; Close cancels those in flight).
func waitFor(mu *sync.Mutex, done func() bool) {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		ok := done()
		mu.Unlock()
		if ok {
			return
		}
	}
}

// method is a JSON-RPC message's method, "" for none.
func method(body []byte) string {
	i := bytes.Index(body, []byte(`"method":"`))
	if i < 0 {
		return ""
	}
	rest := body[i+10:]
	return string(rest[:bytes.IndexByte(rest, '"')])
}

// jsonEchoMethod answers a request with a JSON result (a tools/call after
// delay) and a notification with 202; body is the request's, read.
func jsonEchoMethod(delay time.Duration) func(http.ResponseWriter, *http.Request, ...[]byte) {
	return func(w http.ResponseWriter, r *http.Request, read ...[]byte) {
		var body []byte
		if len(read) > 0 {
			body = read[0]
		} else {
			body, _ = io.ReadAll(r.Body)
		}
		i := bytes.Index(body, []byte(`"id":`))
		if i < 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		id := body[i+5 : i+5+bytes.IndexByte(body[i+5:], ',')]
		if method(body) == "tools/call" {
			time.Sleep(delay)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "s1")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{}}`)
	}
}
