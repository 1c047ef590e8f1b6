package importer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/export"
	"github.com/tapedeck/tapedeck/tape"
)

type wireMsg struct {
	dir  tape.Dir
	body string
}

// byDir returns each direction's messages in order (canonical JSON).
func byDir(t *testing.T, es []tape.Entry) map[tape.Dir][]tape.Entry {
	out := map[tape.Dir][]tape.Entry{}
	for _, e := range wire(es) {
		out[e.Dir] = append(out[e.Dir], e)
	}
	return out
}

func canon(t *testing.T, b []byte) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(tape.StripMeta(b), &v); err != nil {
		t.Fatal(err)
	}
	c, _ := json.Marshal(v)
	return string(c)
}

// The HAR tapedeck exported of a session it recorded through its HTTP
// proxy imports back to the recorded messages: each direction's messages
// in the recorded order with their bytes' meaning, the client's messages
// and the answers at their recorded times, the HTTP meta (session,
// status, SSE stream and event ids) kept. Only the times of SSE events
// before a stream's last differ: HAR has no time per event.
func TestImportHARTapedeckHTTP(t *testing.T) {
	recorded := readTape(t, sample(t, "har/everything-http.tape.jsonl"))
	res, got := importTape(t, "har", sample(t, "har/everything-http.har"), Options{})
	if res.Messages != 41 || len(res.Servers) != 1 || res.Servers[0] != "127.0.0.1" {
		t.Fatalf("result %+v, want 41 messages of server 127.0.0.1 (as record --upstream names it)", res)
	}
	want, have := byDir(t, recorded), byDir(t, got)
	for _, d := range []tape.Dir{tape.DirSend, tape.DirRecv} {
		if len(want[d]) != len(have[d]) {
			t.Fatalf("%s: %d messages, want %d", d, len(have[d]), len(want[d]))
		}
		for i := range want[d] {
			w, h := want[d][i], have[d][i]
			if canon(t, w.Raw) != canon(t, h.Raw) {
				t.Fatalf("%s #%d:\ngot  %s\nwant %s", d, i, tape.StripMeta(h.Raw), tape.StripMeta(w.Raw))
			}
			if (d == tape.DirSend || w.Kind == tape.KindResponse) && !w.Time.Equal(h.Time) {
				t.Errorf("%s #%d %s: ts %v, want %v", d, i, w.Method, h.Time, w.Time)
			}
			wm, hm := tape.ParseHTTPMeta(w.Raw), tape.ParseHTTPMeta(h.Raw)
			if !hm.HTTP || wm.Session != hm.Session || wm.Status != hm.Status || wm.Event != hm.Event || wm.Method != hm.Method {
				t.Errorf("%s #%d: HTTP meta %+v, want %+v", d, i, hm, wm)
			}
		}
	}
	// The server's roots/list on the GET stream comes before the client's
	// answer to it, and the initialize answer says the session.
	pos := map[string]int{}
	for i, e := range got {
		switch {
		case e.Method == "roots/list":
			pos["roots"] = i
		case e.Dir == tape.DirSend && e.Kind == tape.KindResponse:
			pos["answer"] = i
		}
		if e.Kind == tape.KindResponse && strings.Contains(string(e.Raw), `"serverInfo"`) && !strings.Contains(string(e.Raw), `"newSession":"`) {
			t.Errorf("the initialize answer lacks newSession: %s", e.Raw)
		}
	}
	if pos["roots"] >= pos["answer"] {
		t.Errorf("roots/list at %d, the client's answer at %d", pos["roots"], pos["answer"])
	}
	if !strings.Contains(string(got[0].Raw), `"importedFrom":"har"`) || !strings.Contains(string(got[0].Raw), `"upstream":"http://127.0.0.1:38221/mcp"`) {
		t.Errorf("start record: %s", got[0].Raw)
	}
}

// A stdio tape exported to HAR (stdio://SERVER/ entries) imports back to
// its messages, in order, with their directions and times.
func TestImportHARStdioRoundTrip(t *testing.T) {
	for _, name := range []string{"sdk-everything-2025-06-18", "sdk-sdkserver"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join("..", "..", "testdata", name+".tape.jsonl")
			x, err := tape.OpenIndex(path)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			var har bytes.Buffer
			src := export.Source{Name: name, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
			if err := export.HAR(&har, src, "test"); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			want := wire(readTape(t, data))
			_, got := importTape(t, "har", har.Bytes(), Options{})
			got = wire(got)
			if len(got) != len(want) {
				t.Fatalf("%d messages, want %d", len(got), len(want))
			}
			for i := range want {
				if want[i].Dir != got[i].Dir || canon(t, want[i].Raw) != canon(t, got[i].Raw) || want[i].Server != got[i].Server || !want[i].Time.Equal(got[i].Time) {
					t.Errorf("#%d: got %s %s %v %s\nwant %s %s %v %s", i, got[i].Dir, got[i].Server, got[i].Time, tape.StripMeta(got[i].Raw), want[i].Dir, want[i].Server, want[i].Time, tape.StripMeta(want[i].Raw))
				}
			}
		})
	}
}

// mcpsnoop's own HAR export (mcp://SERVER/METHOD entries of params and
// results, no JSON-RPC messages or ids) is refused, saying why.
func TestImportHARMCPSnoopExportRefused(t *testing.T) {
	_, err := Import("har", bytes.NewReader(sample(t, "har/mcpsnoop-export.har")), io.Discard, Options{})
	wantError(t, err, "$.log.entries", "found 17 mcp:// entries", "--from mcpsnoop")
}

// Other traffic in a HAR (a browser's pages) is skipped; an answer
// without a message is an $http/exchange record; an SSE body's events
// are messages.
func TestImportHARBrowserLike(t *testing.T) {
	har := `{"log":{"version":"1.2","creator":{"name":"WebInspector","version":"537.36"},"entries":[
{"startedDateTime":"2026-05-01T10:00:00.000Z","time":5,"request":{"method":"GET","url":"https://example.com/","headers":[]},"response":{"status":200,"headers":[],"content":{"mimeType":"text/html","text":"<html>"}}},
{"startedDateTime":"2026-05-01T10:00:01.000Z","time":12.5,"request":{"method":"POST","url":"https://example.com/mcp","headers":[{"name":"content-type","value":"application/json"}],"postData":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{}}"}},"response":{"status":200,"headers":[{"name":"mcp-session-id","value":"abc"},{"name":"content-type","value":"text/event-stream"}],"content":{"mimeType":"text/event-stream","text":"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\ndata: \"result\":{}}\n\n"}}},
{"startedDateTime":"2026-05-01T10:00:02.000Z","time":1,"request":{"method":"POST","url":"https://example.com/mcp","headers":[{"name":"Mcp-Session-Id","value":"abc"}],"postData":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}"}},"response":{"status":202,"headers":[],"content":{"size":0,"mimeType":""}}},
{"startedDateTime":"2026-05-01T10:00:03.000Z","time":2,"request":{"method":"POST","url":"https://example.com/mcp","headers":[{"name":"Mcp-Session-Id","value":"abc"}],"postData":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}"}},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","encoding":"base64","text":"eyJqc29ucnBjIjoiMi4wIiwiaWQiOjIsInJlc3VsdCI6eyJ0b29scyI6W119fQ=="}}},
{"startedDateTime":"2026-05-01T10:00:04.000Z","time":3,"request":{"method":"POST","url":"https://example.com/api","headers":[],"postData":{"mimeType":"application/json","text":"{\"query\":\"{ me }\"}"}},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","text":"{}"}}},
{"startedDateTime":"2026-05-01T10:00:05.000Z","time":1,"request":{"method":"DELETE","url":"https://example.com/mcp","headers":[{"name":"Mcp-Session-Id","value":"abc"}]},"response":{"status":204,"headers":[],"content":{}}}
]}}`
	res, es := importTape(t, "har", []byte(har), Options{})
	if res.Messages != 5 || res.Skipped != 2 || res.Servers[0] != "example.com" {
		t.Fatalf("result %+v, want 5 messages, 2 skipped, server example.com", res)
	}
	var kinds []string
	for _, e := range es {
		kinds = append(kinds, string(e.Dir)+" "+e.Method+e.Kind.String())
	}
	wantKinds := []string{"lifecycle $transport/startlifecycle", "send initializerequest", "recv response", "send notifications/initializednotification", "lifecycle $http/exchangelifecycle", "send tools/listrequest", "recv response", "lifecycle $http/exchangelifecycle"}
	if strings.Join(kinds, "|") != strings.Join(wantKinds, "|") {
		t.Fatalf("records:\n%s\nwant:\n%s", strings.Join(kinds, "\n"), strings.Join(wantKinds, "\n"))
	}
	init := es[2]
	if hm := tape.ParseHTTPMeta(init.Raw); hm.NewSession != "abc" || hm.Event != "7" || hm.Status != 200 {
		t.Errorf("initialize answer meta %+v", hm)
	}
	if want := time.Date(2026, 5, 1, 10, 0, 1, 12_500_000, time.UTC); !init.Time.Equal(want) { // its microseconds kept
		t.Errorf("answer at %v, want %v (start + time)", init.Time, want)
	}
	if string(tape.StripMeta(es[6].Raw)) != `{"jsonrpc":"2.0","id":2,"result":{"tools":[]}}` {
		t.Errorf("base64 answer: %s", es[6].Raw)
	}
}

func TestImportHARMalformed(t *testing.T) {
	entry := func(req, resp string) string {
		return `{"log":{"entries":[{"startedDateTime":"2026-05-01T10:00:00Z","time":1,"request":` + req + `,"response":` + resp + `}]}}`
	}
	okReq := `{"method":"POST","url":"http://h/mcp","postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"}}`
	okResp := `{"status":200,"content":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"}}`
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "  ", []string{"har", "empty input"}},
		{"syntax", "{\"log\":\n  {\"entries\": [,]}}", []string{"line 2, column", "invalid JSON"}},
		{"not an object", `[1]`, []string{"$", "expected a HAR document", "found an array"}},
		{"no log", `{"version":"1.2"}`, []string{"$.log", "expected an object, found nothing"}},
		{"entries not array", `{"log":{"entries":{}}}`, []string{"$.log.entries", "expected an array, found an object"}},
		{"no entries of MCP", `{"log":{"entries":[]}}`, []string{"$.log.entries", "found none in 0 entries"}},
		{"entry a string", `{"log":{"entries":["x"]}}`, []string{"$.log.entries[0]", "expected an object, found a string"}},
		{"bad start", `{"log":{"entries":[{"startedDateTime":"noon"}]}}`, []string{"$.log.entries[0].startedDateTime", `found "noon"`}},
		{"no request", `{"log":{"entries":[{"startedDateTime":"2026-05-01T10:00:00Z"}]}}`, []string{"$.log.entries[0].request", "expected an object, found nothing"}},
		{"url a number", entry(`{"method":"POST","url":3}`, okResp), []string{"$.log.entries[0].request.url", "expected a string, found a number"}},
		{"status a string", entry(okReq, `{"status":"200"}`), []string{"$.log.entries[0].response.status", "expected a number"}},
		{"bad JSON-RPC post", entry(`{"method":"POST","url":"http://h/mcp","postData":{"text":"{\"jsonrpc\":\"2.0\"}"}}`, okResp), []string{"$.log.entries[0].request.postData.text", "expected a JSON-RPC message"}},
		{"broken JSON post", entry(`{"method":"POST","url":"http://h/mcp","headers":[{"name":"Content-Type","value":"application/json"}],"postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":1"}}`, okResp), []string{"$.log.entries[0].request.postData.text", "invalid JSON"}},
		{"broken JSON answer", entry(okReq, `{"status":200,"content":{"mimeType":"application/json","text":"{\"jsonrpc\""}}`), []string{"$.log.entries[0].response.content.text", "invalid JSON"}},
		{"bad SSE event", entry(okReq, `{"status":200,"content":{"mimeType":"text/event-stream","text":"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: hello\n\n"}}`), []string{"$.log.entries[0].response.content.text", "SSE event 2", "hello"}},
		{"bad base64", entry(okReq, `{"status":200,"content":{"encoding":"base64","text":"!!"}}`), []string{"$.log.entries[0].response.content.text", "expected base64"}},
		{"bad encoding", entry(okReq, `{"status":200,"content":{"encoding":"gzip","text":""}}`), []string{"$.log.entries[0].response.content.encoding", `found "gzip"`}},
		{"header without name", entry(`{"method":"POST","url":"http://h/mcp","headers":[{"value":"x"}]}`, okResp), []string{"$.log.entries[0].request.headers[0].name", "expected a string, found nothing"}},
		{"stdio without message", entry(`{"method":"POST","url":"stdio://s/"}`, okResp), []string{"$.log.entries[0].request.postData.text", "found nothing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Import("har", strings.NewReader(c.in), io.Discard, Options{})
			wantError(t, err, c.want...)
		})
	}
}

func FuzzImportHAR(f *testing.F) {
	f.Add([]byte(`{"log":{"entries":[{"startedDateTime":"2026-05-01T10:00:00Z","time":1,"request":{"method":"POST","url":"http://h/mcp","headers":[{"name":"Mcp-Session-Id","value":"s"}],"postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}"}},"response":{"status":200,"content":{"mimeType":"text/event-stream","text":"id: 1\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n"}}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"startedDateTime":"2026-05-01T10:00:00Z","time":1,"request":{"method":"GET","url":"http://h/mcp","headers":[{"name":"Mcp-Session-Id","value":"s"}]},"response":{"status":200,"content":{"mimeType":"text/event-stream","text":"data: {\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\"}\n\n"}}},{"startedDateTime":"2026-05-01T10:00:01Z","time":1,"request":{"method":"POST","url":"http://h/mcp","postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}"}},"response":{"status":202,"content":{}}}]}}`))
	f.Add([]byte(`{"log":{"entries":[{"startedDateTime":"2026-05-01T10:00:00Z","time":1,"request":{"method":"POST","url":"stdio://s/client","postData":{"text":"{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"roots/list\"}"}},"response":{"status":200,"content":{"text":"{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{}}"}}}]}}`))
	// The first entries of the committed HAR.
	data := sample(f, "har/everything-http.har")
	var doc struct {
		Log struct {
			Entries []json.RawMessage `json:"entries"`
		} `json:"log"`
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		f.Fatal(err)
	}
	for i := 0; i+2 <= len(doc.Log.Entries) && i < 8; i += 2 {
		seed, _ := json.Marshal(map[string]any{"log": map[string]any{"entries": doc.Log.Entries[i : i+2]}})
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "har", data)
	})
}

// harOf generates a HAR of n ping exchanges as a stream, without holding it.
func harOf(n int) io.Reader {
	i := -1
	return &chunkReader{next: func() []byte {
		i++
		switch {
		case i == 0:
			return []byte(`{"log":{"version":"1.2","creator":{"name":"gen"},"entries":[`)
		case i > n+1:
			return nil
		case i == n+1:
			return []byte("]}}\n")
		}
		sep := ","
		if i == 1 {
			sep = ""
		}
		t := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond).Format(time.RFC3339Nano)
		return fmt.Appendf(nil, `%s{"startedDateTime":%q,"time":0.5,"request":{"method":"POST","url":"http://h/mcp","headers":[{"name":"Content-Type","value":"application/json"},{"name":"Mcp-Session-Id","value":"s"}],"postData":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"ping\"}"}},"response":{"status":200,"headers":[],"content":{"mimeType":"application/json","text":"{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}}"}}}`+"\n", sep, t, i, i)
	}}
}

// chunkReader reads the chunks next returns, nil ending the stream.
type chunkReader struct {
	next func() []byte
	cur  []byte
	done bool
}

func (c *chunkReader) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.done {
			return 0, io.EOF
		}
		if c.cur = c.next(); c.cur == nil {
			c.done = true
		}
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

// A HAR is streamed entry by entry: a document far over MaxDocument imports
// when each entry is under it (the whole document used to be read, and held
// with copies of it: a 10^6-entry HAR took past 6 GB).
func TestImportHARStreams(t *testing.T) {
	const n = 5000 // about 2 MB
	var out bytes.Buffer
	res, err := Import("har", harOf(n), &out, Options{MaxDocument: 64 << 10})
	if err != nil {
		t.Fatalf("a %d-entry HAR with each entry under the 64 KiB bound: %v", n, err)
	}
	if res.Messages != 2*n {
		t.Errorf("imported %d messages, want %d", res.Messages, 2*n)
	}
}

// BenchmarkImportHARLarge imports a generated HAR of 10^5 entries (about
// 45 MB) as a stream; run it with /usr/bin/time -v to see the peak RSS.
func BenchmarkImportHARLarge(b *testing.B) {
	for range b.N {
		if _, err := Import("har", harOf(100000), io.Discard, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}
