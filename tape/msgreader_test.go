package tape

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMessageReaderMapped: read through mappings of a window at a time
// (moved along, widened for lines longer than the window, the last line
// without its newline, with a \r), a tape's messages are the bytes read
// through a buffer.
func TestMessageReaderMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "realistic.jsonl")
	if _, err := WriteSynth(path, SynthOptions{Messages: 600, Profile: SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data = append(data, `{"jsonrpc":"2.0","id":"last","method":"ping","_meta":{"dir":"send","server":"synth","ts":"2026-01-01T00:00:00.000Z"}}`+"\r"...)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	longest := 0
	for l := range bytes.Lines(data) {
		longest = max(longest, len(l))
	}
	page := os.Getpagesize()
	if longest <= 2*page {
		t.Fatalf("the longest line has %d bytes: no line longer than the window of %d", longest, 2*page)
	}
	for _, window := range []int64{int64(2 * page), 1 << 20} {
		open := func(threshold int64) *MessageReader {
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { f.Close() })
			return newMessageReader(x, f, threshold, window)
		}
		mapped, buffered := open(0), open(1<<62)
		if mapped.mapped == nil || buffered.mapped != nil {
			t.Fatalf("mapped %v, buffered %v: expected one of each", mapped.mapped != nil, buffered.mapped != nil)
		}
		n := 0
		for i := range x.Len() {
			e := x.Entry(i)
			got, err := mapped.At(e)
			if err != nil {
				t.Fatal(err)
			}
			got = bytes.Clone(got)
			want, err := buffered.At(e)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("window %d, message %d: mapped %.80q, buffered %.80q", window, i, got, want)
			}
			n++
		}
		mapped.Close()
		if n != x.Len() || n < 600 {
			t.Fatalf("%d messages read of %d", n, x.Len())
		}
	}
}

// TestIndexMessageReader: the index's own MessageReader gives every
// message the bytes Index.Message gives it, on every testdata tape (batches
// and hostile lines included) and on a tape large enough to be mapped.
func TestIndexMessageReader(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../testdata/hostile/*.tape.jsonl")
	big := filepath.Join(t.TempDir(), "big.tape.jsonl")
	if _, err := WriteSynth(big, SynthOptions{Messages: 3000, Profile: SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	paths = append(append(paths, hostile...), big)
	if len(paths) < 10 {
		t.Fatalf("found %d tapes: expected the testdata tapes", len(paths))
	}
	mappedSeen := false
	for _, p := range paths {
		x, err := OpenIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		mr := x.MessageReader()
		mappedSeen = mappedSeen || mr.mapped != nil
		for i := range x.Len() {
			want, err := x.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			got, err := mr.At(x.Entry(i))
			if err != nil {
				t.Fatalf("%s message %d: %v", p, i, err)
			}
			if !bytes.Equal(got, want.Raw) {
				t.Fatalf("%s message %d: the reader gave %.80q, Index.Message %.80q", p, i, got, want.Raw)
			}
		}
		mr.Close()
		x.Close()
	}
	if !mappedSeen {
		t.Fatal("no tape was read through a mapping: expected the big one to be")
	}
}

// TestMessageReaderLineOverBuffer: read through its 1 MiB buffer (a tape
// too small to map), a line longer than the buffer comes whole, its first
// MiB included (the buffer is refilled for the rest of the line).
func TestMessageReaderLineOverBuffer(t *testing.T) {
	const meta = `"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}`
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"big","arguments":{"pad":"` + strings.Repeat("x", 3<<20/2) + `"}},` + meta + `}`
	data := []byte(`{"jsonrpc":"2.0","id":0,"method":"ping",` + meta + "}\n" + big + "\n")
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	mr := NewMessageReader(x, bytes.NewReader(data))
	defer mr.Close()
	for seq := range x.Len() {
		e := x.Entry(seq)
		raw, err := mr.At(e)
		if err != nil {
			t.Fatal(err)
		}
		if want := data[e.Offset : e.Offset+int64(len(raw))]; len(raw) < 2 || !bytes.Equal(raw, want) || raw[len(raw)-1] != '}' {
			t.Errorf("message %d: %d bytes beginning %.50q, expected line %d's (%d bytes) beginning %.50q", seq, len(raw), raw, e.Line, len(bytes.TrimRight(data[e.Offset:], "\n")), want)
		}
	}
}
