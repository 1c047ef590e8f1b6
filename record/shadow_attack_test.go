package record_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// rawB is a B over raw connections: answer is called with each request it
// reads (n its number on the connection) and writes what it likes on c;
// false ends the connection.
func rawB(t *testing.T, answer func(n int, c net.Conn, br *bufio.Reader, req *http.Request, body []byte) bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Go(func() {
				defer c.Close()
				br := bufio.NewReader(c)
				for n := 0; ; n++ {
					req, err := http.ReadRequest(br)
					if err != nil {
						return
					}
					body, _ := io.ReadAll(req.Body)
					if !answer(n, c, br, req, body) {
						return
					}
				}
			})
		}
	})
	return "http://" + ln.Addr().String()
}

// jsonAnswer is B's usual answer to body: JSON with the request's id, a
// 202 to a notification.
func jsonAnswer(body []byte) string {
	id := gjson.GetBytes(body, "id")
	if !id.Exists() {
		return "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
	}
	answer := `{"jsonrpc":"2.0","id":` + id.Raw + `,"result":{}}`
	return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nMcp-Session-Id: b-session\r\nContent-Length: " +
		strconv.Itoa(len(answer)) + "\r\n\r\n" + answer
}

// shadowRun is shadowTape's session with the lane's records each summed
// up without times or ports, in order of kind, and the answers the client
// got.
func shadowRun(t *testing.T, b string, viaNetHTTP bool, calls int, drain time.Duration, opts ...func(*record.ShadowOptions)) (lane []string, client []string) {
	t.Helper()
	path, client := shadowTape(t, b, viaNetHTTP, calls, drain, opts...)
	for _, l := range laneRecords(t, path) {
		l = strings.ReplaceAll(l, strings.TrimPrefix(b, "http://"), "B")
		m := gjson.Get(l, "method").String()
		s := gjson.Get(l, "_meta.dir").String() + " " + m + " " + gjson.Get(l, "id").Raw
		switch m {
		case tape.MethodShadowDropped:
			s += " " + gjson.Get(l, "params.method").String() + " " + gjson.Get(l, "params.reason").String()
		case tape.MethodClose:
			s += " " + gjson.Get(l, "params").Raw
		case tape.MethodStart:
			continue // B's address
		}
		if r := gjson.Get(l, "result"); r.Exists() {
			s += " result " + gjson.Get(l, "_meta.status").Raw
		}
		lane = append(lane, s)
	}
	slices.Sort(lane)
	return lane, client
}

// shadowTape records a client's session (initialize, initialized, calls
// tools/list) through a proxy to a plain A with B at b as its shadow,
// through the shadow's own connections or net/http (viaNetHTTP), and
// returns the tape's path and the answers the client got.
func shadowTape(t *testing.T, b string, viaNetHTTP bool, calls int, drain time.Duration, opts ...func(*record.ShadowOptions)) (path string, client []string) {
	t.Helper()
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(body, "id")
		if !id.Exists() {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		w.Header().Set("Mcp-Session-Id", "a-session")
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+id.Raw+`,"result":{}}`)
	}))
	defer a.Close()
	up, _ := url.Parse(a.URL + "/mcp")
	bu, _ := url.Parse(b + "/mcp")
	path = filepath.Join(t.TempDir(), "shadow.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	o := &record.ShadowOptions{URL: bu, Drain: drain}
	for _, opt := range opts {
		opt(o)
	}
	if viaNetHTTP {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		defer tr.CloseIdleConnections()
		o.Transport = tr
	}
	p := &record.Proxy{Upstream: up, Tape: f, Server: "a", Shadow: o}
	if err := p.Start("test", "test"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	post := func(session, body string) {
		req, _ := http.NewRequest("POST", srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if session != "" {
			req.Header.Set("Mcp-Session-Id", session)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		client = append(client, resp.Status+" "+string(got))
	}
	post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	post("a-session", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for i := range calls {
		post("a-session", `{"jsonrpc":"2.0","id":`+strconv.Itoa(10+i)+`,"method":"tools/list"}`)
	}
	srv.Close()
	if err := p.Close("test over"); err != nil {
		t.Fatal(err)
	}
	return path, client
}

// settled waits for the goroutines to fall back to before (the shadow's
// connections' readers ended).
func settled(t *testing.T, before int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after the recording, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestShadowMisbehavingB sends the shadow's copies to Bs that misbehave
// at the HTTP level, over the shadow's own connections and over net/http:
// both must leave the same records on the lane, the client's answers
// those of a plain run, and no goroutine behind.
func TestShadowMisbehavingB(t *testing.T) {
	const calls = 4
	_, plain := shadowRun(t, rawB(t, func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
		_, err := io.WriteString(c, jsonAnswer(body))
		return err == nil
	}), false, calls, 300*time.Millisecond)
	isCall := func(body []byte) bool { return gjson.GetBytes(body, "method").String() == "tools/list" }
	cases := []struct {
		name   string
		answer func(n int, c net.Conn, br *bufio.Reader, req *http.Request, body []byte) bool
		want   func(lane []string) string // "" if the lane is as expected
	}{
		{"sse-open", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if !isCall(body) {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			ev := `{"jsonrpc":"2.0","id":` + gjson.GetBytes(body, "id").Raw + `,"result":{}}`
			chunk := "event: message\ndata: " + ev + "\n\n"
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				strconv.FormatInt(int64(len(chunk)), 16)+"\r\n"+chunk+"\r\n")
			return true // the stream stays open: the next request on it is never read
		}, nil},
		{"sse-cut", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if !isCall(body) {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			chunk := "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":" + gjson.GetBytes(body, "id").Raw
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"+
				strconv.FormatInt(int64(len(chunk)), 16)+"\r\n"+chunk+"\r\n")
			return false
		}, nil},
		{"close-after-headers", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if !isCall(body) {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n")
			return false
		}, nil},
		{"http10-no-length", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			a := jsonAnswer(body)
			if isCall(body) {
				a = "HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + `{"jsonrpc":"2.0","id":` + gjson.GetBytes(body, "id").Raw + `,"result":{}}`
			}
			io.WriteString(c, a)
			return !isCall(body)
		}, nil},
		{"204-202-no-body", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			a := jsonAnswer(body)
			if isCall(body) {
				a = "HTTP/1.1 204 No Content\r\n\r\n"
			} else if !gjson.GetBytes(body, "id").Exists() {
				a = "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"
			}
			_, err := io.WriteString(c, a)
			return err == nil
		}, nil},
		{"1xx", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			_, err := io.WriteString(c, "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 102 Processing\r\n\r\nHTTP/1.1 199 Whatever\r\nX: y\r\n\r\n"+jsonAnswer(body))
			return err == nil
		}, nil},
		{"two-answers", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			a := jsonAnswer(body)
			if isCall(body) {
				a += a
			}
			_, err := io.WriteString(c, a)
			return err == nil
		}, nil},
		{"never-answers", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if isCall(body) {
				return true // read, never answered
			}
			_, err := io.WriteString(c, jsonAnswer(body))
			return err == nil
		}, nil},
		{"switching-protocols", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if gjson.GetBytes(body, "method").String() == "notifications/initialized" {
				// The connection is B's other protocol's now: nothing
				// more of HTTP on it.
				io.WriteString(c, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: other\r\nConnection: Upgrade\r\n\r\n")
				io.Copy(io.Discard, c)
				return false
			}
			_, err := io.WriteString(c, jsonAnswer(body))
			return err == nil
		}, nil},
		{"malformed", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			a := jsonAnswer(body)
			if isCall(body) {
				a = "HTTP/1.1 abc\r\n\r\n"
			}
			_, err := io.WriteString(c, a)
			return err == nil && !isCall(body)
		}, nil},
		{"headers-cut", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			a := jsonAnswer(body)
			if isCall(body) {
				a = "HTTP/1.1 200 OK\r\nContent-Type: appl"
			}
			_, err := io.WriteString(c, a)
			return err == nil && !isCall(body)
		}, nil},
		{"keep-alive-timeout", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			// B closes a connection idle for 2 ms, without a word: a
			// copy written then finds it closed or closing.
			_, err := io.WriteString(c, jsonAnswer(body))
			c.SetReadDeadline(time.Now().Add(2 * time.Millisecond))
			return err == nil
		}, eachAnsweredOrDropped},
		{"huge-headers", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if !isCall(body) {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			// 11 MB of headers: more than net/http's 10 MB.
			w := bufio.NewWriter(c)
			w.WriteString("HTTP/1.1 200 OK\r\n")
			line := "X-Big: " + strings.Repeat("x", 1000) + "\r\n"
			for range 11 << 10 {
				if _, err := w.WriteString(line); err != nil {
					return false
				}
			}
			w.WriteString(jsonAnswer(body)[len("HTTP/1.1 200 OK\r\n"):])
			w.Flush()
			return false
		}, func(lane []string) string {
			for _, l := range lane {
				if strings.Contains(l, "headers exceeded") {
					return ""
				}
			}
			return "no copy dropped for B's headers over 10 MB"
		}},
		{"body-left-open", func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if gjson.GetBytes(body, "method").String() != "initialize" {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			// A body the shadow does not read (not JSON, not SSE), left
			// open: net/http closes the connection, the lane goes on.
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nMcp-Session-Id: b-session\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n<html\r\n")
			io.Copy(io.Discard, c)
			return false
		}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := runtime.NumGoroutine()
			t.Cleanup(func() { settled(t, before) }) // after B's cleanup
			var lanes [2][]string
			for i, viaNetHTTP := range []bool{false, true} {
				b := rawB(t, c.answer)
				drain := 300 * time.Millisecond // B's answers not given by then never come
				if c.name == "huge-headers" {
					drain = 20 * time.Second // writing them takes long under -race
				}
				lane, client := shadowRun(t, b, viaNetHTTP, calls, drain)
				if !slices.Equal(client, plain) {
					t.Errorf("net/http %v: the client got %q, without B's misbehaving %q", viaNetHTTP, client, plain)
				}
				lanes[i] = lane
				if c.want != nil {
					if why := c.want(lane); why != "" {
						t.Errorf("net/http %v: %s:\n%s", viaNetHTTP, why, strings.Join(lane, "\n"))
					}
				}
			}
			// Which copy finds its connection closed is a race, for
			// net/http as well: each copy answered or dropped is checked.
			if c.name != "keep-alive-timeout" && !slices.Equal(lanes[0], lanes[1]) {
				t.Errorf("the lane's records differ:\nown connections:\n%s\nnet/http:\n%s", strings.Join(lanes[0], "\n"), strings.Join(lanes[1], "\n"))
			}
		})
	}
}

// eachAnsweredOrDropped checks that each request the lane sent B was
// answered or dropped with a note, and none twice.
func eachAnsweredOrDropped(lane []string) string {
	var answered, dropped, sent int64
	for _, l := range lane {
		switch {
		case strings.HasPrefix(l, "lifecycle "+tape.MethodShadowDropped) && !strings.Contains(l, "notifications/"):
			dropped++
		case strings.HasPrefix(l, "lifecycle "+tape.MethodClose):
			params := l[strings.Index(l, "{"):]
			answered, sent = gjson.Get(params, "answered").Int(), gjson.Get(params, "sent").Int()
		}
	}
	if sent == 0 || answered+dropped != sent {
		return fmt.Sprintf("%d requests sent, %d answered, %d dropped", sent, answered, dropped)
	}
	return ""
}

// The lane's close record counts every copy its $shadow/dropped records
// note, those whose exchange with B failed too (it said "dropped":0 beside
// them), on both paths to B.
func TestShadowCloseCountsFailedCopies(t *testing.T) {
	b := rawB(t, func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
		if gjson.GetBytes(body, "method").String() == "tools/list" {
			return false // closed unanswered: the exchange fails
		}
		_, err := io.WriteString(c, jsonAnswer(body))
		return err == nil
	})
	for _, viaNetHTTP := range []bool{false, true} {
		lane, _ := shadowRun(t, b, viaNetHTTP, 4, 300*time.Millisecond)
		// shadowRun's lane lines: "lifecycle $shadow/dropped  METHOD
		// REASON" (one copy each here), "lifecycle $transport/close  PARAMS".
		noted, closed := int64(0), int64(-1)
		for _, l := range lane {
			if strings.HasPrefix(l, "lifecycle "+tape.MethodShadowDropped+" ") {
				noted++
			}
			if p, ok := strings.CutPrefix(l, "lifecycle "+tape.MethodClose+" "); ok {
				closed = gjson.Get(p, "dropped").Int()
			}
		}
		if noted == 0 || closed != noted {
			t.Errorf("net/http %v: $shadow/dropped records count %d copies, the close record says dropped %d; want the same, not 0:\n%s", viaNetHTTP, noted, closed, strings.Join(lane, "\n"))
		}
	}
}

// An answer of B's longer than ShadowOptions.MaxAnswer (a JSON body, or
// one SSE event past the SSE reader's buffer) is dropped with a note, on both paths to B, instead of
// read whole into memory however long B makes it.
func TestShadowAnswerBounded(t *testing.T) {
	big := strings.Repeat("x", 100_000) // past the SSE reader's 32 KiB buffer too
	for _, sse := range []bool{false, true} {
		b := rawB(t, func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
			if gjson.GetBytes(body, "method").String() != "tools/list" {
				_, err := io.WriteString(c, jsonAnswer(body))
				return err == nil
			}
			msg := `{"jsonrpc":"2.0","id":` + gjson.GetBytes(body, "id").Raw + `,"result":{"x":"` + big + `"}}`
			head := "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n"
			if sse {
				msg = "event: message\ndata: " + msg + "\n\n"
				head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " + strconv.Itoa(len(msg)) + "\r\n\r\n"
			}
			_, err := io.WriteString(c, head+msg)
			return err == nil
		})
		for _, viaNetHTTP := range []bool{false, true} {
			lane, _ := shadowRun(t, b, viaNetHTTP, 2, 300*time.Millisecond, func(o *record.ShadowOptions) { o.MaxAnswer = 1000 })
			dropped := 0
			for _, l := range lane {
				if strings.HasPrefix(l, "lifecycle "+tape.MethodShadowDropped+" ") && strings.Contains(l, "tools/list") {
					dropped++
				}
			}
			if dropped != 2 {
				t.Errorf("sse %v, net/http %v: %d tools/list answers over MaxAnswer noted as dropped, want 2:\n%s", sse, viaNetHTTP, dropped, strings.Join(lane, "\n"))
			}
		}
	}
}

// A copy whose answer B sends but too long is noted as an exchange that
// failed, not as a copy that could not be sent (B got it).
func TestShadowDropReasonSaysExchange(t *testing.T) {
	b := rawB(t, func(_ int, c net.Conn, _ *bufio.Reader, _ *http.Request, body []byte) bool {
		msg := jsonAnswer(body)
		if gjson.GetBytes(body, "method").String() == "tools/list" {
			msg = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2000\r\n\r\n" + strings.Repeat(" ", 2000)
		}
		_, err := io.WriteString(c, msg)
		return err == nil
	})
	lane, _ := shadowRun(t, b, false, 1, 300*time.Millisecond, func(o *record.ShadowOptions) { o.MaxAnswer = 1000 })
	for _, l := range lane {
		if strings.HasPrefix(l, "lifecycle "+tape.MethodShadowDropped+" ") {
			if !strings.Contains(l, "the exchange with B failed: B's answer is longer than 1000 bytes") {
				t.Errorf("the drop note: %q, want the exchange with B failed and why", l)
			}
			return
		}
	}
	t.Errorf("no drop noted:\n%s", strings.Join(lane, "\n"))
}
