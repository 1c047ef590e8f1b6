package record_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// TestShadowHTTPConnections sends the shadow's copies to Bs that close
// their connections: one that says so (Connection: close on every
// answer): B gets each request once and answers it, the lane drops
// nothing; one that reads a connection's second request and closes it
// unanswered: that copy is dropped with a note, never sent to B again (as
// net/http never sends a POST again once written), the rest answered.
// One that sends an informational answer (103) before each answer: the
// answer is the one after it. The same with net/http doing the requests
// (ShadowOptions.Transport).
func TestShadowHTTPConnections(t *testing.T) {
	for _, c := range []struct {
		mode       string
		viaNetHTTP bool // else the shadow's own connections
	}{
		{"close-header", false}, {"close-unanswered", false}, {"early-hints", false},
		{"close-header", true}, {"close-unanswered", true}, {"early-hints", true},
	} {
		mode := c.mode
		name := mode
		if c.viaNetHTTP {
			name += "/net-http"
		}
		t.Run(name, func(t *testing.T) {
			b, seen := closingB(t, mode)
			const calls = 6
			path, _ := shadowTape(t, b, c.viaNetHTTP, calls, 0)
			var answered, sent, dropped, droppedCalls int64 = -1, -1, 0, 0
			for _, l := range laneRecords(t, path) {
				switch gjson.Get(l, "method").String() {
				case tape.MethodShadowDropped:
					dropped++
					if gjson.Get(l, "params.method").String() != "notifications/initialized" {
						droppedCalls++
					}
					if mode != "close-unanswered" || !strings.HasSuffix(gjson.Get(l, "params.reason").String(), ": EOF") {
						t.Errorf("the lane dropped a copy: %s", l)
					}
				case tape.MethodClose:
					sent, answered = gjson.Get(l, "params.sent").Int(), gjson.Get(l, "params.answered").Int()
				}
			}
			if mode == "close-unanswered" && dropped == 0 {
				t.Errorf("B closed connections with a request unanswered, and the lane noted no dropped copy")
			}
			if sent != calls+1 || answered+droppedCalls != sent {
				t.Errorf("the lane's close record: sent %d, answered %d, and %d requests dropped; want %d sent, each answered or dropped",
					sent, answered, droppedCalls, calls+1)
			}
			// Each on a connection of its own, B may read them in
			// another order.
			order := seen()
			slices.Sort(order)
			want := []string{"initialize 1", "notifications/initialized"}
			for i := range calls {
				want = append(want, "tools/list "+strconv.Itoa(2+i)) // B's ids
			}
			slices.Sort(want)
			if strings.Join(order, " ") != strings.Join(want, " ") {
				t.Errorf("B got %q, want %q", order, want)
			}
		})
	}
}

// closingB is a B over raw connections that closes them as mode says;
// seen returns the method and id of each request it read, in order.
func closingB(t *testing.T, mode string) (string, func() []string) {
	t.Helper()
	var mu sync.Mutex
	var methods []string
	url := rawB(t, func(n int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
		mu.Lock()
		methods = append(methods, strings.TrimSpace(gjson.GetBytes(body, "method").String()+" "+gjson.GetBytes(body, "id").Raw))
		mu.Unlock()
		if mode == "close-unanswered" && n == 1 {
			return false
		}
		head := "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n"
		answer := ""
		if id := gjson.GetBytes(body, "id"); id.Exists() {
			answer = `{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{}}`
			head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: b-session\r\nContent-Length: " +
				strconv.Itoa(len(answer)) + "\r\n"
		}
		switch mode {
		case "close-header":
			head += "Connection: close\r\n"
		case "early-hints":
			head = "HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\n\r\n" + head
		}
		_, err := io.WriteString(c, head+"\r\n"+answer)
		return err == nil && mode != "close-header"
	})
	return url, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), methods...)
	}
}
