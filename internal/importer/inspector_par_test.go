package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// inspectorDoc is an export of n entries, each separated by sep (",\n  "
// as the Inspector's, or others), the initialize answer (naming the
// server) at entry init (-1 for none), and the tools/call requests
// carrying, in their arguments, an array of objects cut by ",\n" and by
// sep, which a guess of where an element starts takes for one.
func inspectorDoc(n, init int, sep string) string {
	var b strings.Builder
	b.WriteString("[" + strings.TrimPrefix(sep, ","))
	for i := range n {
		if i > 0 {
			b.WriteString(sep)
		}
		ts := fmt.Sprintf("2026-01-02T03:%02d:%02d.%03dZ", i/60000%60, i/1000%60, i%1000)
		switch {
		case i == init:
			fmt.Fprintf(&b, `{"id":"e%d","timestamp":"%s","direction":"response","origin":"server","message":{"jsonrpc":"2.0","id":0,"result":{"serverInfo":{"name":"late","version":"1"}}}}`, i, ts)
		case i%3 == 0:
			fmt.Fprintf(&b, `{"id":"e%d","timestamp":"%s","direction":"request","origin":"client","message":{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"x","arguments":{"l":[1%s{"a":"b\"c"},
{"a":"\\"}]}}},"response":{"jsonrpc":"2.0","id":%d,"result":{"content":[]}},"duration":%d}`, i, ts, i, sep, i, i%7)
		case i%3 == 1:
			fmt.Fprintf(&b, `{"id":"e%d","timestamp":"%s","direction":"notification","origin":"server","message":{ "jsonrpc" : "2.0", "method":"notifications/progress","params":{"progress":%d}}}`, i, ts, i)
		default:
			fmt.Fprintf(&b, `{"id":"e%d","timestamp":"%s","direction":"request","message":{"jsonrpc":"2.0","id":"s%d","method":"ping","_meta":{"k":1}}}`, i, ts, i)
		}
	}
	b.WriteString(strings.TrimPrefix(sep, ",") + "]\n")
	return b.String()
}

// importInspector imports doc with o, returning the tape's bytes and the
// error.
func importInspector(doc string, o Options) (string, Result, error) {
	var buf bytes.Buffer
	res, err := Import("inspector", strings.NewReader(doc), &buf, o)
	return buf.String(), res, err
}

// Scanned in segments from guessed element starts (right and wrong ones)
// on several workers, and encoded in runs, an export makes the tape one
// worker scanning and encoding it whole makes, byte for byte, with the
// same counts and server.
func TestImportInspectorWorkers(t *testing.T) {
	docs := map[string]string{
		"fixture":      string(sample(t, "inspector/everything-protocol.json")),
		"indented":     inspectorDoc(300, 1, ",\n  "),
		"late server":  inspectorDoc(300, 250, ",\n  "),
		"no server":    inspectorDoc(300, -1, ",\n  "),
		"newline only": inspectorDoc(300, 1, ",\n"),
		"one line":     inspectorDoc(300, 1, ","),
		"one entry":    inspectorDoc(1, 0, ",\n  "),
		// Every entry padded, then an array of objects cut as entries
		// are: a guess most often lands in the padding, and takes the
		// array's comma for the next entry's.
		"nested commas": strings.NewReplacer(`"params":{"progress":`, `"params":{"pad":"`+strings.Repeat("x", 300)+`","l":[1,`+"\n"+`{"a":1}],"progress":`, `"method":"ping"`, `"method":"ping","params":{"pad":"`+strings.Repeat("x", 300)+`","l":[1,`+"\n"+`{"a":1}]}`).Replace(inspectorDoc(40, 39, ",\n")),
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, []byte(docs["fixture"])); err != nil {
		t.Fatal(err)
	}
	docs["fixture compact"] = compact.String()
	for name, doc := range docs {
		want, wantRes, err := importInspector(doc, Options{workers: 1, chunk: 1 << 30})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, w := range []int{2, 3, 7} {
			for _, chunk := range []int{0, 100, 2000} {
				got, res, err := importInspector(doc, Options{workers: w, chunk: chunk})
				if err != nil {
					t.Fatalf("%s, %d workers, chunk %d: %v", name, w, chunk, err)
				}
				if got != want || fmt.Sprint(res) != fmt.Sprint(wantRes) {
					t.Errorf("%s, %d workers, chunk %d: %+v, a tape of %d bytes; one worker: %+v, %d bytes", name, w, chunk, res, len(got), wantRes, len(want))
				}
			}
		}
	}
	// The documents do make guesses, and wrong ones: the nested arrays'
	// commas.
	doc := []byte(strings.TrimSpace(docs["nested commas"]))
	first := bytes.IndexByte(doc, '{')
	guesses := inspectorGuesses(doc, first, 7)
	wrong := 0
	for _, g := range guesses {
		if !bytes.HasPrefix(doc[g:], []byte(`{"id"`)) {
			wrong++
		}
	}
	if len(guesses) != 6 || wrong == 0 {
		t.Errorf("guesses %v (%d wrong): expected 6, some inside an entry", guesses, wrong)
	}
	if _, res, _ := importInspector(docs["late server"], Options{workers: 3, chunk: 100}); len(res.Servers) != 1 || res.Servers[0] != "late" {
		t.Errorf("late server: servers %v, expected late (entry 250's serverInfo.name)", res.Servers)
	}
}

// A fault in the middle of a long export, or its end cut off, is found
// whichever worker scans it, and the error is the one a scan from the
// start makes: a syntax error (before any entry's) names its line, an
// entry's names its element, and nothing is written.
func TestImportInspectorFaultsMidDocument(t *testing.T) {
	doc := inspectorDoc(300, 1, ",\n  ")
	at := func(i int) int { return strings.Index(doc, fmt.Sprintf(`{"id":"e%d"`, i)) }
	line := func(i int) string { return fmt.Sprintf("line %d", strings.Count(doc[:at(i)], "\n")+1) }
	for _, c := range []struct {
		name, doc string
		want      []string
	}{
		{"malformed element", doc[:at(200)] + `{"id":"e200",]` + doc[at(201)-4:], []string{line(200), "invalid JSON"}},
		{"truncated", doc[:at(250)+40], []string{line(250), "invalid JSON: unexpected end of JSON input"}},
		{"truncated after a comma", doc[:at(250)], []string{line(250), "invalid JSON: unexpected end of JSON input"}},
		{"bad time", strings.Replace(doc, `"e170","timestamp":"2026-01-02T03:00:00.170Z"`, `"e170","timestamp":"soon"`, 1), []string{"$[170].timestamp", `found "soon"`}},
		{"bad time, then bad JSON", strings.Replace(doc[:at(290)+20], `"e170","timestamp":"2026-01-02T03:00:00.170Z"`, `"e170","timestamp":"soon"`, 1), []string{"invalid JSON"}},
		{"two bad entries", strings.Replace(strings.Replace(doc, `"e280","timestamp":"2026-01-02T03:00:00.280Z"`, `"e280","timestamp":1`, 1), `"e150","timestamp":"2026-01-02T03:00:00.150Z","direction":"request"`, `"e150","timestamp":"2026-01-02T03:00:00.150Z","direction":"up"`, 1), []string{"$[150].direction", `found "up"`}},
		{"not an entry", doc[:at(220)] + `7` + doc[at(220)-4:], []string{"$[220]", "expected a message entry (an object), found a number"}},
		{"null", doc[:at(220)] + `null` + doc[at(220)-4:], []string{"$[220]", "expected a message entry (an object), found nothing"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.doc == doc {
				t.Fatal("the fault was not made")
			}
			for _, w := range []int{1, 2, 7} {
				got, res, err := importInspector(c.doc, Options{workers: w, chunk: 200})
				wantError(t, err, c.want...)
				if got != "" || res.Messages != 0 {
					t.Errorf("%d workers: wrote %d bytes, %d messages before the error", w, len(got), res.Messages)
				}
			}
		})
	}
}

// An export in a file is mapped, not read: the tape is the one reading it
// makes; a file already read into is read from where it stands, as any
// reader is; an import stopped before it starts reads nothing.
func TestImportInspectorFile(t *testing.T) {
	doc := inspectorDoc(300, 1, ",\n  ")
	want, wantRes, err := importInspector(doc, Options{})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "export.json")
	if err := os.WriteFile(path, []byte("   "+doc), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, _, mapped, err := inspectorMap(f, DefaultMaxDocument); !mapped || err != nil {
		t.Fatalf("a file of %d bytes: mapped %v, %v; expected it mapped", len(doc), mapped, err)
	}
	var got bytes.Buffer
	res, err := Import("inspector", f, &got, Options{})
	if err != nil || got.String() != want || fmt.Sprint(res) != fmt.Sprint(wantRes) {
		t.Errorf("from the file: %+v, %v, %d bytes; from a reader: %+v, %d bytes", res, err, got.Len(), wantRes, len(want))
	}
	// Read from byte 3 on: the same tape; from byte 4 on, not an export.
	for _, c := range []struct {
		at   int64
		want string
	}{{3, ""}, {4, "invalid JSON"}} {
		if _, err := f.Seek(c.at, io.SeekStart); err != nil {
			t.Fatal(err)
		}
		got.Reset()
		_, err = Import("inspector", f, &got, Options{})
		switch {
		case c.want == "" && (err != nil || got.String() != want):
			t.Errorf("from byte %d: %v, %d bytes; expected the tape of %d bytes", c.at, err, got.Len(), len(want))
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("from byte %d: %v; expected %q (the file read from there)", c.at, err, c.want)
		}
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got.Reset()
	if _, err := ImportContext(ctx, "inspector", f, &got, Options{}); !errors.Is(err, context.Canceled) || got.Len() != 0 {
		t.Errorf("stopped: %v, %d bytes written; expected context.Canceled and nothing", err, got.Len())
	}
}

// Whatever the export, segments on several workers (tiny ones, so that
// guesses land everywhere) make what one worker makes: the same tape, or
// the same error.
func FuzzInspectorWorkers(f *testing.F) {
	f.Add(inspectorDoc(12, 1, ",\n  "))
	f.Add(inspectorDoc(12, 11, ",\n"))
	f.Add(strings.Replace(inspectorDoc(12, 1, ",\n  "), `"timestamp":"2026-01-02T03:00:00.007Z"`, `"timestamp":7`, 1))
	f.Add(inspectorDoc(12, -1, ",\n  ")[:900])
	f.Add("[\n  null,\n  {}\n]")
	f.Fuzz(func(t *testing.T, doc string) {
		want, wantRes, wantErr := importInspector(doc, Options{workers: 1, chunk: 1 << 30})
		for _, w := range []int{2, 5} {
			got, res, err := importInspector(doc, Options{workers: w, chunk: 16})
			if got != want || fmt.Sprint(res) != fmt.Sprint(wantRes) || fmt.Sprint(err) != fmt.Sprint(wantErr) {
				t.Fatalf("%d workers: %+v, %v, %q\none worker: %+v, %v, %q", w, res, err, got, wantRes, wantErr, want)
			}
		}
	})
}
