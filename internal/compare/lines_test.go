package compare

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// TestSpanReaderAgrees: spanReader gives every message the bytes
// tape.MessageReader gives, read in the index's order, on the testdata
// tapes, a synthetic one and a hand-made one (CRLF ends, blank lines, a
// line with leading white space, a batch, a line longer than the window,
// no newline at the end), with windows small enough to be moved often.
func TestSpanReaderAgrees(t *testing.T) {
	paths, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	paths = append(paths, hostile...)
	dir := t.TempDir()
	synth := filepath.Join(dir, "realistic.tape.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 3000, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	meta := func(dir string) string {
		return `"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-01-01T00:00:00.000Z"}`
	}
	long := strings.Repeat("x", 20000)
	odd := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"},` + meta("send") + "}\r",
		`{"jsonrpc":"2.0","id":1,"result":{"t":"` + long + `"},` + meta("recv") + `}`,
		``,
		`   {"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"b"},` + meta("send") + `}`,
		`{"jsonrpc":"2.0","id":2,"result":{},` + meta("recv") + "}  ",
		`[{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"c"},` + meta("send") + `},{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"d"},` + meta("send") + `}]`,
		`{"jsonrpc":"2.0","id":3,"result":{"t":"` + long[:5000] + `"},` + meta("recv") + `}`,
		`not json`,
		`{"jsonrpc":"2.0","id":4,"result":{},` + meta("recv") + `}`,
	}, "\n")
	hand := filepath.Join(dir, "odd.tape.jsonl")
	if err := os.WriteFile(hand, []byte(odd), 0o600); err != nil {
		t.Fatal(err)
	}
	paths = append(paths, synth, hand)
	read := 0
	for _, p := range paths {
		x, err := tape.OpenIndex(p)
		if err != nil {
			continue // no index is made of it (empty)
		}
		for _, window := range []int64{8 << 10, 1 << 20} {
			f1, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			f2, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			sr := newSpanReader(x, f1, 0, window)
			if sr == nil && x.Len() == 0 {
				f1.Close()
				f2.Close()
				continue
			}
			if sr == nil {
				t.Fatalf("%s: not mapped", p)
			}
			mr := tape.NewMessageReader(x, f2)
			for i := range x.Len() {
				e := x.Entry(i)
				var next *tape.Entry
				if i+1 < x.Len() {
					n := x.Entry(i + 1)
					next = &n
				}
				want, werr := mr.At(e)
				got, gerr := sr.At(e, next)
				if (werr != nil) != (gerr != nil) || !bytes.Equal(got, want) {
					t.Fatalf("%s (window %d), message %d (line %d): %.80q (error %v), MessageReader %.80q (error %v)", p, window, i, e.Line, got, gerr, want, werr)
				}
				read++
			}
			sr.Close()
			mr.Close()
			f1.Close()
			f2.Close()
		}
		x.Close()
	}
	if read < 5000 {
		t.Errorf("only %d messages read", read)
	}
}
