package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// fixtureSources are the repository's recorded tapes and hostile inputs,
// each as a Source, and the realistic benchmark tape (a small one): what
// the exporters' hand-written encodings are held to encoding/json and the
// collector's marshaler on.
func fixtureSources(t *testing.T) []Source {
	t.Helper()
	paths, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.jsonl")
	paths = append(paths, hostile...)
	if len(paths) < 20 {
		t.Fatalf("expected the testdata tapes, found %d", len(paths))
	}
	synth := filepath.Join(t.TempDir(), "realistic.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 3000, Seed: 7, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, synth)
	var out []Source
	for _, p := range paths {
		x, err := tape.OpenIndex(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		t.Cleanup(func() { x.Close() })
		out = append(out, Source{Name: filepath.Base(p), Index: x, Open: func() (io.ReadCloser, error) { return os.Open(p) }})
	}
	return out
}

type harLog struct {
	Log struct {
		Version string     `json:"version"`
		Creator harCreator `json:"creator"`
		Entries []harEntry `json:"entries"`
		Comment string     `json:"comment,omitempty"`
	} `json:"log"`
}

type harCreator struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// writeHAR writes what encoding/json writes of the log (as HAR did before
// it wrote its entries by hand): on every fixture tape, and on entries
// with what the tapes lack (nil lists, floats in exponent form, escapes,
// invalid UTF-8, no comment).
func TestHARWriterAgrees(t *testing.T) {
	odd := &harEntry{StartedDateTime: "x\u2028<&>", Time: 1e-7, Comment: "", Request: harRequest{Method: "GET", URL: "\xff\"\\", PostData: &harPostData{Text: "\x00\t"}}, Response: harResponse{Content: harContent{Text: "é"}}, Timings: harTimings{Wait: -2.5e22}}
	cases := map[string][]*harEntry{"none": {}, "odd": {odd}}
	for _, src := range fixtureSources(t) {
		entries, err := harEntries(src)
		if err != nil {
			t.Fatalf("%s: %v", src.Name, err)
		}
		cases[src.Name] = entries
	}
	// More entries than the chunks in flight hold, formatted by several
	// goroutines: the chunks are written in order, a comma between each.
	var many []*harEntry
	for len(many) < 3*harChunk*harChunksOut+harChunk/2 {
		for _, entries := range cases {
			many = append(many, entries...)
		}
	}
	cases["many"] = many
	for name, entries := range cases {
		for _, comment := range []string{"exported from " + name, ""} {
			var want harLog
			want.Log.Version = "1.2"
			want.Log.Creator = harCreator{Name: "tapedeck", Version: "v<1>"}
			want.Log.Comment = comment
			want.Log.Entries = make([]harEntry, 0, len(entries))
			for _, e := range entries {
				want.Log.Entries = append(want.Log.Entries, *e)
			}
			var got bytes.Buffer
			if err := writeHAR(&got, entries, nil, "v<1>", comment); err != nil {
				t.Fatal(err)
			}
			exp := append(encodingJSON(t, want, false), '\n')
			if !bytes.Equal(got.Bytes(), exp) {
				i := 0
				for i < len(exp) && i < got.Len() && exp[i] == got.Bytes()[i] {
					i++
				}
				t.Fatalf("%s: the HAR differs from encoding/json's at byte %d:\nexpected …%s\nfound    …%s", name, i, exp[max(0, i-80):min(len(exp), i+80)], got.Bytes()[max(0, i-80):min(got.Len(), i+80)])
			}
		}
	}
}

// failingWriter fails every write after its first n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n -= len(p); w.n < 0 {
		return 0, errors.New("disk full")
	}
	return len(p), nil
}

// A write that fails ends writeHAR with its error, however many chunks are
// being formatted, and leaves no goroutine behind.
func TestHARWriteFails(t *testing.T) {
	en := &harEntry{StartedDateTime: "2026-01-01T00:00:00Z", Request: harRequest{Method: "POST", PostData: &harPostData{Text: strings.Repeat("x", 1000)}}}
	entries := make([]*harEntry, 10*harChunk*harChunksOut)
	for i := range entries {
		entries[i] = en
	}
	before := runtime.NumGoroutine()
	for _, n := range []int{0, 1 << 16, 1 << 20} {
		if err := writeHAR(&failingWriter{n: n}, entries, nil, "v", ""); err == nil || err.Error() != "disk full" {
			t.Fatalf("writer failing after %d bytes: %v, expected disk full", n, err)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after, %d before: the formatters did not end", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// A server message on a stream the tape has not tied to a POST yet goes to
// the earliest POST still awaiting its answer, the same one every time (it
// went to whichever the map's order gave).
func TestHARStreamOfOpenPostIsStable(t *testing.T) {
	const meta = `"server":"s","http":"POST","session":"S","transport":"http"`
	tp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.000Z",` + meta + `}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.001Z",` + meta + `}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.002Z",` + meta + `}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"on a new stream"},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.003Z","status":200,"stream":9,` + meta + `}}
{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.004Z","status":200,"stream":9,` + meta + `}}
{"jsonrpc":"2.0","id":2,"result":{},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.005Z","status":200,` + meta + `}}
{"jsonrpc":"2.0","id":3,"result":{},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.006Z","status":200,` + meta + `}}
`
	var first []byte
	for i := range 40 {
		var b bytes.Buffer
		if err := HAR(&b, source(t, "t", tp), "test"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = b.Bytes()
			continue
		}
		if !bytes.Equal(b.Bytes(), first) {
			t.Fatalf("export %d differs from the first:\n%s\n---\n%s", i, b.Bytes(), first)
		}
	}
	var log harLog
	if err := json.Unmarshal(first, &log); err != nil {
		t.Fatal(err)
	}
	for i, en := range log.Log.Entries {
		has := strings.Contains(en.Response.Content.Text, "on a new stream")
		if has != (i == 0) {
			t.Errorf("entry %d (%s): holds the stream's notification: %v; want it on the first POST only", i, en.Request.PostData.Text, has)
		}
	}
}

// A server message of a sessionless exchange names its POST ("exchange"
// in its _meta): it goes on that POST's stream, not on an earlier POST
// still awaiting its answer.
func TestHARStreamGoesToItsExchange(t *testing.T) {
	const meta = `"server":"s","http":"POST","transport":"http"`
	tp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"slow"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.000Z","exchange":1,` + meta + `}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"streams"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.001Z","exchange":2,` + meta + `}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.002Z","exchange":2,"status":200,"stream":7,` + meta + `}}
{"jsonrpc":"2.0","id":2,"result":{"content":[]},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.003Z","exchange":2,"status":200,"stream":7,` + meta + `}}
{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.004Z","exchange":1,"status":200,` + meta + `}}
`
	var b bytes.Buffer
	if err := HAR(&b, source(t, "t", tp), "test"); err != nil {
		t.Fatal(err)
	}
	var log harLog
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if len(log.Log.Entries) != 2 {
		t.Fatalf("%d entries, expected the two POSTs:\n%s", len(log.Log.Entries), b.Bytes())
	}
	for _, en := range log.Log.Entries {
		streams := strings.Contains(en.Request.PostData.Text, `"streams"`)
		if has := strings.Contains(en.Response.Content.Text, "notifications/progress"); has != streams {
			t.Errorf("entry %s: holds exchange 2's notification: %v; want it on exchange 2's POST only (response %q)", en.Request.PostData.Text, has, en.Response.Content.Text)
		}
	}
}

// A _meta whose "dir" member name is escaped ("di\u0072") has no direction
// for tapedeck (the index warns "no _meta.dir"), as ReadMessages read it
// for har before: an answer with it that answers nothing is no client
// POST, and a notification with it is no client message.
func TestHAREscapedDirIsUnknown(t *testing.T) {
	const odd = `"di\u0072":"send","server":"s"`
	tp := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:01.000Z"}}
{"jsonrpc":"2.0","id":9,"result":{"orphan":true},"_meta":{` + odd + `,"ts":"2026-05-16T12:00:02.000Z"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{"odd":true},"_meta":{` + odd + `,"ts":"2026-05-16T12:00:03.000Z"}}
`
	var b bytes.Buffer
	if err := HAR(&b, source(t, "t", tp), "test"); err != nil {
		t.Fatal(err)
	}
	var log harLog
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	for _, en := range log.Log.Entries {
		if en.Request.PostData != nil && strings.Contains(en.Request.PostData.Text, `"orphan"`) {
			t.Errorf("the orphan answer with an escaped dir is a client POST: %+v", en)
		}
		if en.Request.PostData != nil && strings.Contains(en.Request.PostData.Text, `"odd"`) && !strings.HasSuffix(en.Request.URL, "/client") {
			t.Errorf("the notification with an escaped dir is a client message to %s: %s", en.Request.URL, en.Request.PostData.Text)
		}
	}
}

// A notification the client POSTed is answered 202 with no body: it opens
// no stream. A server message on a stream goes to the open POST of a
// request, not to an earlier notification's POST still awaiting its 202
// (its $http/exchange record missing).
func TestHARStreamNotOnNotificationPost(t *testing.T) {
	const meta = `"server":"s","http":"POST","session":"S","transport":"http"`
	tp := `{"jsonrpc":"2.0","method":"notifications/initialized","_meta":{"dir":"send","ts":"2026-01-01T00:00:00.000Z",` + meta + `}}
{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"long"},"_meta":{"dir":"send","ts":"2026-01-01T00:00:00.001Z",` + meta + `}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.002Z","status":200,"stream":7,` + meta + `}}
{"jsonrpc":"2.0","id":7,"result":{"content":[]},"_meta":{"dir":"recv","ts":"2026-01-01T00:00:00.003Z","status":200,"stream":7,` + meta + `}}
`
	var b bytes.Buffer
	if err := HAR(&b, source(t, "t", tp), "test"); err != nil {
		t.Fatal(err)
	}
	var log harLog
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, en := range log.Log.Entries {
		has := strings.Contains(en.Response.Content.Text, "notifications/progress")
		call := en.Request.PostData != nil && strings.Contains(en.Request.PostData.Text, "tools/call")
		if has && !call {
			t.Errorf("the progress went to %s's POST, expected the tools/call's", en.Request.PostData.Text)
		}
		found = found || has
	}
	if !found {
		t.Errorf("no entry holds the progress notification:\n%s", b.Bytes())
	}
}
