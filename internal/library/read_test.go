package library

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// TestRowsMatchReader: the rows readTape makes from the index's entries
// and its own reading of the lines (no second classifying pass) are the
// ones a tape.Reader pass gives: each message's offset and length (its
// bytes, for snippets), kind, method and text, on every fixture tape, the
// hostile ones (batches, BOM, CRLF, blank lines, invalid lines, a torn
// last line) included, and with a window smaller than a line.
func TestRowsMatchReader(t *testing.T) {
	var paths []string
	for _, pat := range []string{"../../testdata/*.jsonl", "../../testdata/hostile/*.jsonl"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) < 20 {
		t.Fatalf("expected the fixture tapes, found %d", len(paths))
	}
	// And what no fixture has: blanks around a message, a line longer
	// than the window, a BOM, a torn last line.
	meta := `,"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00Z"}}`
	odd := filepath.Join(t.TempDir(), "odd.jsonl")
	long := strings.Repeat("word ", 100)
	body := "\xef\xbb\xbf" +
		`  {"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"q":"` + long + `"}}` + meta + " \t \r\n" +
		"\n   \nnot json  \n" +
		`[{"jsonrpc":"2.0","id":2,"method":"ping"` + meta + ` , {"jsonrpc":"2.0","method":"notifications/x","params":{"m":"in a batch"}` + meta + "]  \n" +
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"done"}]}` + strings.Replace(meta, "send", "recv", 1) + "\r\n" +
		`{"jsonrpc":"2.0","method":"notifications/y","params":{"m":"torn"`
	if err := os.WriteFile(odd, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, odd)
	for _, path := range paths {
		t.Run(filepath.Base(path), func(t *testing.T) {
			st, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			rows := readRows(t, path, st)
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			rd := tape.NewReader(bufio.NewReader(f))
			i := 0
			for e := range rd.Entries() {
				if i >= len(rows) {
					t.Fatalf("the reader has message %d (line %d), the rows end at %d", e.Seq, e.Line, len(rows))
				}
				r := rows[i]
				i++
				want := row{seq: e.Seq, kind: e.Kind, off: e.Offset, n: len(e.Raw)}
				if r.seq != want.seq || r.kind != want.kind || r.off != want.off || r.n != want.n {
					t.Fatalf("message %d (line %d): row seq %d kind %v off %d len %d; reader: seq %d kind %v off %d len %d",
						e.Seq, e.Line, r.seq, r.kind, r.off, r.n, want.seq, want.kind, want.off, want.n)
				}
				// The text pass reads a message's bytes at the row's
				// offset and length: they must be the reader's.
				raw := make([]byte, r.n)
				if _, err := f.ReadAt(raw, r.off); err != nil {
					t.Fatalf("message %d: read its bytes: %v", e.Seq, err)
				}
				if !bytes.Equal(raw, e.Raw) {
					t.Fatalf("message %d (line %d): bytes at %d+%d %q; the reader's %q", e.Seq, e.Line, r.off, r.n, raw, e.Raw)
				}
				if (e.Kind == tape.KindRequest || e.Kind == tape.KindNotification || e.Kind == tape.KindLifecycle) && r.method != e.Method {
					t.Fatalf("message %d: method %q, the reader's %q", e.Seq, r.method, e.Method)
				}
			}
			if err := rd.Err(); err != nil {
				t.Fatal(err)
			}
			if i != len(rows) {
				t.Fatalf("%d rows, the reader read %d messages", len(rows), i)
			}
		})
	}
}

// readRows runs readTape on path as a refresh would, the window of its
// line reading cut to 64 bytes, and returns the rows.
func readRows(t *testing.T, path string, st os.FileInfo) []row {
	t.Helper()
	tr := &tapeRows{window: 64, file: fileInfo{path: path, size: st.Size(), mtime: st.ModTime().Add(-2 * settle).UnixNano()}, chunks: make(chan []row, 1), decided: make(chan struct{})}
	tr.decide = sync.OnceFunc(func() { close(tr.decided) })
	var rows []row
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range tr.chunks {
			rows = append(rows, c...)
		}
	}()
	err := readTape(context.Background(), tr)
	close(tr.chunks)
	<-done
	if err != nil {
		t.Fatal(err)
	}
	return rows
}
