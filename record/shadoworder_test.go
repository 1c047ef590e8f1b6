package record_test

import (
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

// TestShadowCausalOrder checks that B sees the client's causal order: a
// message the client sent after it had A's answer to a request reaches B
// only once B answered that request's copy, even when B is slow to
// handle it and the later message goes on another connection; and that a
// message the client sent while A had not yet answered the request goes
// to B without waiting for B's answer, concurrently as the client sent it.
func TestShadowCausalOrder(t *testing.T) {
	const bDelay = 400 * time.Millisecond // B handles the tools/call's copy so long
	for _, c := range []struct {
		name   string
		aDelay time.Duration // A's answer to the tools/call
		// concurrent: the client sends the notification while A has not
		// answered the tools/call (else after its answer).
		concurrent bool
		// want is B's order of events: "got M" when B read M's copy,
		// "answered M" when it wrote its answer.
		want string
	}{
		{name: "sent after A's answer: after B's", aDelay: 0,
			want: "got tools/call, answered tools/call, got notifications/roots/list_changed, answered notifications/roots/list_changed"},
		{name: "sent before A's answer: at once", aDelay: 1500 * time.Millisecond, concurrent: true,
			want: "got tools/call, got notifications/roots/list_changed, answered notifications/roots/list_changed, answered tools/call"},
	} {
		for _, viaNetHTTP := range []bool{false, true} {
			name := c.name
			if viaNetHTTP {
				name += " (net/http's transport)"
			}
			t.Run(name, func(t *testing.T) {
				aH := jsonEchoMethod(c.aDelay)
				a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { aH(w, r) }))
				defer a.Close()
				var mu sync.Mutex
				var events []string
				event := func(e string) {
					mu.Lock()
					events = append(events, e)
					mu.Unlock()
				}
				b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					body, _ := io.ReadAll(r.Body)
					m := method(body)
					if m == "tools/call" || strings.HasPrefix(m, "notifications/roots") {
						event("got " + m)
						defer event("answered " + m)
					}
					if m == "tools/call" {
						time.Sleep(bDelay)
					}
					jsonEchoMethod(0)(w, r, body)
					w.(http.Flusher).Flush()
				}))
				defer b.Close()
				au, _ := url.Parse(a.URL + "/mcp")
				bu, _ := url.Parse(b.URL + "/mcp")
				f, err := os.Create(filepath.Join(t.TempDir(), "t.jsonl"))
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				p := &record.Proxy{Upstream: au, Tape: f, Server: "a",
					Shadow: &record.ShadowOptions{URL: bu, Hold: 20 * time.Millisecond, Drain: 5 * time.Second}}
				if viaNetHTTP {
					tr := http.DefaultTransport.(*http.Transport).Clone()
					defer tr.CloseIdleConnections()
					p.Shadow.Transport = tr // B's POSTs by net/http, not the shadow's own connections
				}
				if err := p.Start("test", "1"); err != nil {
					t.Fatal(err)
				}
				srv := httptest.NewServer(p)
				post := func(body string) { postS1(t, srv.URL, body) }
				post(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
				post(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
				call := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{}}}`
				notification := `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
				if c.concurrent {
					var wg sync.WaitGroup
					wg.Go(func() { post(call) })
					// The tools/call's copy goes to B after the hold (A is
					// slow); the notification is sent while A still works.
					time.Sleep(200 * time.Millisecond)
					post(notification)
					wg.Wait()
				} else {
					post(call)
					post(notification)
				}
				waitFor(&mu, func() bool { return len(events) >= 4 })
				srv.Close()
				if err := p.Close("test over"); err != nil {
					t.Fatal(err)
				}
				mu.Lock()
				defer mu.Unlock()
				if got := strings.Join(events, ", "); got != c.want {
					t.Errorf("B's order:\n  %s\nexpected:\n  %s", got, c.want)
				}
			})
		}
	}
}
