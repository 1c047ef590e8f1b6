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

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// withoutMeta is a record's message without its _meta, re-encoded (keys
// sorted), to compare messages whatever their spacing.
func withoutMeta(t *testing.T, raw []byte) string {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	delete(m, "_meta")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The Inspector's export of a go-sdk client's session with
// server-everything (written from that session's tape, see
// testdata/import/README.md) imports back to the tape's messages, in the
// tape's order, each with its direction and time: the answers folded into
// their requests' entries unfolded at request time + duration, a call's
// progress notifications before its answer, the client's next request
// after it.
func TestImportInspector(t *testing.T) {
	data := sample(t, "inspector/everything-protocol.json")
	if f, ok := Detect(data[:200]); !ok || f != "inspector" {
		t.Errorf("Detect: %q %v, expected inspector", f, ok)
	}
	res, es := importTape(t, "inspector", data, Options{})
	if res.Messages != 33 || res.Lifecycle != 1 || len(res.Servers) != 1 || res.Servers[0] != "mcp-servers/everything" {
		t.Fatalf("result %+v: expected 33 messages, 1 start, the server mcp-servers/everything (the initialize answer's serverInfo.name)", res)
	}
	if es[0].Method != tape.MethodStart || !strings.Contains(string(es[0].Raw), `"importedFrom":"inspector"`) {
		t.Errorf("first record %s, expected a $transport/start imported from inspector", es[0].Raw)
	}
	orig, err := os.ReadFile(filepath.Join("..", "..", "testdata", "sdk-everything-2025-06-18.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := wire(readTape(t, orig))
	got := wire(es)
	if len(got) != len(want) {
		t.Fatalf("%d messages, expected the tape's %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		gs := fmt.Sprintf("%s %s %v %s %s %s", g.Dir, g.Kind, g.ID, g.Method, tapeTime(g.Time).Format("15:04:05.000"), withoutMeta(t, g.Raw))
		ws := fmt.Sprintf("%s %s %v %s %s %s", w.Dir, w.Kind, w.ID, w.Method, tapeTime(w.Time).Format("15:04:05.000"), withoutMeta(t, w.Raw))
		if gs != ws {
			t.Errorf("message %d:\n got %.200s\nwant %.200s", i, gs, ws)
		}
	}
	// --server names the server instead.
	if res, _ := importTape(t, "inspector", data, Options{Server: "everything"}); len(res.Servers) != 1 || res.Servers[0] != "everything" {
		t.Errorf("--server everything: servers %v", res.Servers)
	}
}

// Entries without origin (exports older than it), a server's request with
// the client's answer folded in, an answer that matched no request, and
// answers and entries of one millisecond placed by who sent them.
func TestImportInspectorShapes(t *testing.T) {
	in := `[
 {"id":"a","timestamp":"2026-01-02T03:04:05.000Z","direction":"request","message":{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}},
  "response":{"jsonrpc":"2.0","id":1,"result":{"content":[]}},"duration":10},
 {"id":"b","timestamp":"2026-01-02T03:04:05.002Z","direction":"request","message":{"jsonrpc":"2.0","id":0,"method":"sampling/createMessage","params":{}},
  "response":{"jsonrpc":"2.0","id":0,"result":{"role":"assistant"}},"duration":3},
 {"id":"c","timestamp":"2026-01-02T03:04:05.010Z","direction":"notification","message":{"jsonrpc":"2.0","method":"notifications/progress","params":{}}},
 {"id":"d","timestamp":"2026-01-02T03:04:05.010Z","direction":"notification","message":{"jsonrpc":"2.0","method":"notifications/cancelled","params":{}}},
 {"id":"e","timestamp":"2026-01-02T03:04:05.020Z","direction":"response","message":{"jsonrpc":"2.0","id":9,"error":{"code":-32600,"message":"late"}}}
]`
	_, es := importTape(t, "inspector", []byte(in), Options{})
	var got []string
	for _, e := range wire(es) {
		got = append(got, fmt.Sprintf("%s %s %v %s %s", tapeTime(e.Time).Format("05.000"), e.Dir, e.ID, e.Method, e.Server))
	}
	want := []string{
		"05.000 send 1 tools/call inspector",
		"05.002 recv 0 sampling/createMessage inspector",
		"05.005 send 0  inspector",
		"05.010 recv  notifications/progress inspector",
		"05.010 recv 1  inspector",
		"05.010 send  notifications/cancelled inspector",
		"05.020 recv 9  inspector",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// With origin, origin decides.
	_, es = importTape(t, "inspector", []byte(`[{"timestamp":"2026-01-02T03:04:05Z","direction":"notification","origin":"client","message":{"jsonrpc":"2.0","method":"notifications/progress"}}]`), Options{})
	if w := wire(es); len(w) != 1 || w[0].Dir != tape.DirSend {
		t.Errorf("origin client: %+v", w)
	}
}

func TestImportInspectorErrors(t *testing.T) {
	const msg = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, c := range []struct {
		name, in string
		want     []string
	}{
		{"empty", "", []string{"inspector", "empty input"}},
		{"not JSON", "[{\"timestamp\":\n", []string{"line 2", "invalid JSON"}},
		{"an object", `{"log":{}}`, []string{"$", "expected the Inspector's history export (a JSON array of message entries), found an object"}},
		{"empty array", `[]`, []string{"$", "found an empty array"}},
		{"not an entry", `[1]`, []string{"$[0]", "expected a message entry (an object), found a number"}},
		{"no timestamp", `[{"direction":"request","message":` + msg + `}]`, []string{"$[0].timestamp", "expected a timestamp (RFC 3339), found nothing"}},
		{"bad time", `[{"timestamp":"noon","direction":"request","message":` + msg + `}]`, []string{"$[0].timestamp", `found "noon"`}},
		{"bad direction", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"up","message":` + msg + `}]`, []string{"$[0].direction", `expected "request", "response" or "notification", found "up"`}},
		{"bad origin", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","origin":"proxy","message":` + msg + `}]`, []string{"$[0].origin", `expected "client" or "server", found "proxy"`}},
		{"no message", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request"}]`, []string{"$[0].message", "expected a JSON-RPC message (an object), found nothing"}},
		{"not JSON-RPC", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":{"hello":1}}]`, []string{"$[0].message", "expected a JSON-RPC message"}},
		{"response on a notification", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"notification","message":{"jsonrpc":"2.0","method":"n"},"response":{"jsonrpc":"2.0","id":1,"result":{}}}]`, []string{"$[0].response", "expected a response only on a request entry, found one on a notification entry"}},
		{"bad response", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":` + msg + `,"response":"ok"}]`, []string{"$[0].response", `found a string "\"ok\""`}},
		{"negative duration", `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":` + msg + `,"response":{"jsonrpc":"2.0","id":1,"result":{}},"duration":-5}]`, []string{"$[0].duration", "found -5"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			var buf bytes.Buffer
			_, err := Import("inspector", strings.NewReader(c.in), &buf, Options{})
			wantError(t, err, c.want...)
		})
	}
	var out bytes.Buffer
	_, err := Import("inspector", strings.NewReader(`[`+strings.Repeat(" ", 8<<10)+`]`), &out, Options{MaxDocument: 4 << 10})
	if err == nil || !strings.Contains(err.Error(), "at most 4096 bytes") {
		t.Errorf("an 8 KiB export over a 4 KiB limit: got %v, want an error naming the limit", err)
	}
}

// Detect tells an export from a tape's batch line and from the other
// formats' files.
func TestDetectInspector(t *testing.T) {
	for _, c := range []struct {
		head string
		want string
	}{
		{"[\n  {\n    \"id\": \"x\",\n    \"timestamp\": \"2026-01-02T03:04:05.000Z\",\n    \"direction\": \"request\",\n    \"origin\": \"client\",\n    \"message\": {\n      \"jsonrpc\": \"2.0\",\n      \"id\": 1,\n      \"meth", "inspector"},
		{`[{"jsonrpc":"2.0","id":1,"method":"ping","direction":"x","message":1}]`, ""},
		{`[1,2]`, ""},
		{`{"direction":"request","message":{}}`, ""},
	} {
		if f, _ := Detect([]byte(c.head)); f != c.want {
			t.Errorf("Detect(%.40q) = %q, expected %q", c.head, f, c.want)
		}
	}
}

func FuzzImportInspector(f *testing.F) {
	data := sample(f, "inspector/everything-protocol.json")
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		f.Fatal(err)
	}
	for i := 0; i+3 <= len(elems); i += 5 {
		b, _ := json.Marshal(elems[i : i+3])
		f.Add(b)
	}
	f.Add([]byte(`[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":{"jsonrpc":"2.0","id":1,"method":"ping"},"response":{"jsonrpc":"2.0","id":1,"result":{}},"duration":1e300}]`))
	f.Add([]byte(`[{"timestamp":"2026-01-02T03:04:05Z","direction":"notification","message":{"jsonrpc":"2.0","method":"notifications/progress"}},{"timestamp":"2026-01-02T03:04:04Z","direction":"response","message":{"jsonrpc":"2.0","id":"a","result":{}}}]`))
	f.Add([]byte(`[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":[{"jsonrpc":"2.0","id":1,"method":"ping"}]}]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "inspector", data)
	})
}

// The export is validated in the pass that splits it: a document
// json.Valid refuses is a syntax error, one it takes is not.
func TestImportInspectorSyntax(t *testing.T) {
	entry := `{"timestamp":"2026-01-02T03:04:05Z","direction":"request","origin":"client","message":{"jsonrpc":"2.0","id":1,"method":"ping"}}`
	for _, doc := range []string{
		"[" + entry + ",]", "[" + entry + " " + entry + "]", "[" + entry, "[" + entry + "]]", "[" + entry + ",", "[,]", "[", "[ ]",
		"[" + entry + "]", "[ " + entry + " , " + entry + " ]\n", "[null]", "[1]", "[" + entry + ",1]", `{"a":1}`, "[" + entry + ",{]",
	} {
		_, err := Import("inspector", strings.NewReader(doc), io.Discard, Options{})
		syntax := err != nil && strings.Contains(err.Error(), "invalid JSON")
		if syntax == json.Valid([]byte(doc)) {
			t.Errorf("%s: got %v; json.Valid says %v", doc, err, json.Valid([]byte(doc)))
		}
	}
}

// A message (and a response) nested as deep as encoding/json reads is
// read, one level deeper is a syntax error, as json.Valid says: the
// scan that finds a message's members counts its depth in the document.
func TestImportInspectorDepth(t *testing.T) {
	for _, member := range []string{"message", "response"} {
		for _, extra := range []int{-1, 0, 1} {
			k := jsonscan.MaxDepth - 3 + extra // the array, the element, the message, then k arrays
			deep := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", k) + strings.Repeat("]", k) + `}`
			msg, resp := deep, `{"jsonrpc":"2.0","id":1,"result":{}}`
			if member == "response" {
				msg, resp = `{"jsonrpc":"2.0","id":1,"method":"m"}`, strings.Replace(deep, `"method":"m","params"`, `"result"`, 1)
			}
			doc := `[{"timestamp":"2026-01-02T03:04:05Z","direction":"request","message":` + msg + `,"response":` + resp + `}]`
			_, err := Import("inspector", strings.NewReader(doc), io.Discard, Options{})
			syntax := err != nil && strings.Contains(err.Error(), "invalid JSON")
			if valid := json.Valid([]byte(doc)); syntax == valid || valid && err != nil {
				t.Errorf("%s nested %d deep: Import = %v; expected a syntax error only where json.Valid (%v) refuses it", member, 3+k, err, valid)
			}
		}
	}
}

// The scan of an element finds what the Peeker reads of its message and
// response (so that they are not walked again): the same head, of the
// same bytes.
func TestInspectorScanHead(t *testing.T) {
	for _, c := range []struct{ msg, resp string }{
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":"b"}}`, `{"jsonrpc":"2.0","id":1,"result":{"content":[]}}`},
		{`{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`, `{"jsonrpc":"2.0","id":"x","error":{"code":1,"message":"m"}}`},
		{`{"jsonrpc":"2.0","id":2,"method":"m","_meta":{}}`, `{"id":2,"jsonrpc":"2.0","result":{}}`},
	} {
		el := []byte(`{"id":"e1","timestamp":"2026-01-02T03:04:05.000Z","direction":"request","message":` + c.msg + `,"response":` + c.resp + `,"duration":3}`)
		var s inspectorScan
		if end := s.object(el, 0); end != len(el) {
			t.Fatalf("object(%s) = %d, expected %d", el, end, len(el))
		}
		var peek tape.Peeker
		for _, m := range []struct {
			raw  []byte
			head *msgHead
		}{{s.e.Message, &s.msgHead}, {s.e.Response, &s.respHead}} {
			if !m.head.of(m.raw) {
				t.Fatalf("%s: the scan's head is not of the member's bytes", m.raw)
			}
			h, ok := m.head.head()
			want := peek.Peek(m.raw)
			if ok && (h.Kind != want.Kind || string(h.ID) != string(want.ID) || string(h.Method) != string(want.Method) || h.Plain != want.Plain) {
				t.Errorf("%s: the scan's head %+v, the Peeker's %+v", m.raw, h, want)
			}
			if !ok && want.Plain && want.Kind != tape.KindInvalid && !bytes.Contains(m.raw, []byte("_meta")) {
				t.Errorf("%s: the scan's head says ask the Peeker, for a message it reads at once", m.raw)
			}
		}
	}
}

// An import of an export allocates for the document and its entries, not
// for each element (its timestamp read from its bytes, no string made).
func TestInspectorImportAllocs(t *testing.T) {
	var b strings.Builder
	b.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n  {\"id\":\"e%d\",\"timestamp\":\"2026-01-02T03:04:05.%03dZ\",\"direction\":\"request\",\"origin\":\"client\",\"message\":{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\"},\"response\":{\"jsonrpc\":\"2.0\",\"id\":%d,\"result\":{}},\"duration\":2}", i, i%1000, i, i)
	}
	b.WriteString("\n]\n")
	doc := []byte(b.String())
	run := func() {
		if _, err := Import("inspector", bytes.NewReader(doc), io.Discard, Options{workers: 1}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := testing.AllocsPerRun(3, run); n > 300 {
		t.Errorf("%v allocations importing 3000 entries, expected at most 300", n)
	}
}

// node.num's reading of small integers without encoding/json is what
// encoding/json reads, and refuses what it refuses.
func TestNumSmallIntAgrees(t *testing.T) {
	for _, s := range []string{"0", "7", "00", "01", "10", "999999999999999", "1000000000000000", "123456789012345678", "-1", "1.5", "1e3", "", " 5 ", "5x", "x", "0.0", "-0"} {
		got, err := node{format: "t", path: "$.d", raw: []byte(s)}.num()
		var want float64
		t0 := bytes.TrimSpace([]byte(s))
		werr := json.Unmarshal(t0, &want)
		if len(t0) == 0 || !(t0[0] == '-' || isDigit(t0[0])) {
			werr = fmt.Errorf("not a number")
		}
		if (err != nil) != (werr != nil) || err == nil && got != want {
			t.Errorf("num(%q) = %v, %v; encoding/json reads %v, %v", s, got, err, want, werr)
		}
	}
}
