package tape

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
)

// TestNoRecords: a file with lines but no tape record (another tool's log,
// a source file) is no tape, through the Index (CheckRecords) and the
// sniffing of a file about to be followed (FindRecord); an empty file, blank
// lines, a tape with a record after bad lines, and the unfinished first line
// of a tape being recorded are tapes.
func TestNoRecords(t *testing.T) {
	const rec = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	snoop := `{"session_id":"everything-1","server_label":"everything","seq":1,"direction":"c2s","raw":{"jsonrpc":"2.0","id":1,"method":"ping"}}`
	long := strings.Repeat("é", 40) // 80 bytes: cut at a rune boundary
	tests := []struct {
		name, text string
		partial    bool   // FindRecord only: the file is followed
		line       int    // 0: no error
		quoted     string // the error's Text
		problem    string // a fragment of its Problem
	}{
		{name: "empty", text: ""},
		{name: "blank lines", text: "\n  \n\t\n"},
		{name: "a record", text: rec + "\n"},
		{name: "a record after bad lines", text: "hello\n{not json\n" + rec + "\n"},
		{name: "lifecycle then torn", text: rec + "\n" + `{"jsonrpc":"2.0","id":1,"me`},
		{name: "go source", text: "\n// Package x does y.\npackage x\n", line: 2, quoted: `"// Package x does y."`, problem: "expected a JSON-RPC object or batch at column 1, found '/'"},
		{name: "mcpsnoop log", text: snoop + "\n" + snoop + "\n", line: 1, quoted: `"{\"session_id\":\"everything-1\",\"server_label\":\"everything\",\"se"…`, problem: `found neither`},
		{name: "long first line", text: long + "\n", line: 1, quoted: `"` + strings.Repeat("é", 30) + `"…`, problem: "found"},
		{name: "one unfinished line", text: `{"jsonrpc":"2.0","method":"$transport/st`, line: 1, quoted: `"{\"jsonrpc\":\"2.0\",\"method\":\"$transport/st"`, problem: "found end of line"},
		{name: "one unfinished line, followed", text: `{"jsonrpc":"2.0","method":"$transport/st`, partial: true},
		{name: "a bad line then an unfinished one, followed", text: "hello\n" + `{"jsonrpc":"2.0","method":"$transport/st`, partial: true, line: 1, quoted: `"hello"`, problem: "found 'h'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := bytes.NewReader([]byte(tt.text))
			check := func(how string, err error) {
				t.Helper()
				if tt.line == 0 {
					if err != nil {
						t.Errorf("%s: %v, want no error", how, err)
					}
					return
				}
				var nr *NoRecordsError
				if !errors.As(err, &nr) || !errors.Is(err, ErrNoRecords) {
					t.Fatalf("%s: %v, want a *NoRecordsError", how, err)
				}
				if nr.Line != tt.line || nr.Text != tt.quoted || !strings.Contains(nr.Problem, tt.problem) {
					t.Errorf("%s: line %d, text %s, problem %q; want line %d, text %s, problem with %q", how, nr.Line, nr.Text, nr.Problem, tt.line, tt.quoted, tt.problem)
				}
				if string(nr.Head) != tt.text {
					t.Errorf("%s: head %q, want the whole file", how, nr.Head)
				}
				want := "holds no tape records: line "
				if !strings.HasPrefix(err.Error(), want) {
					t.Errorf("%s: %q, want it to start %q", how, err, want)
				}
			}
			check("FindRecord", FindRecord(src, int64(len(tt.text)), tt.partial))
			if tt.partial {
				return // an Index reads a followed tape's last line only once complete
			}
			x := NewIndex(src)
			if err := x.Extend(int64(len(tt.text)), nil); err != nil {
				t.Fatal(err)
			}
			check("CheckRecords", x.CheckRecords())
		})
	}
}

// TestNoRecordsHead: the error keeps the file's first HeadSize bytes, not
// the whole file.
func TestNoRecordsHead(t *testing.T) {
	text := strings.Repeat("not a tape\n", HeadSize/5)
	x := NewIndex(bytes.NewReader([]byte(text)))
	if err := x.Extend(int64(len(text)), nil); err != nil {
		t.Fatal(err)
	}
	var nr *NoRecordsError
	if err := x.CheckRecords(); !errors.As(err, &nr) || len(nr.Head) != HeadSize || string(nr.Head) != text[:HeadSize] {
		t.Fatalf("CheckRecords: %v, head of %d bytes; want a NoRecordsError with the first %d", err, len(nr.Head), HeadSize)
	}
}

// TestNoRecordsFixtures: every tape of testdata/ has a record, even the
// hostile ones; only the empty one has no line at all.
func TestNoRecordsFixtures(t *testing.T) {
	for _, dir := range []string{"../testdata/", "../testdata/hostile/"} {
		ents, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, e := range ents {
			if !strings.HasSuffix(e.Name(), ".tape.jsonl") {
				continue
			}
			n++
			x, err := OpenIndex(dir + e.Name())
			if err != nil {
				t.Fatal(err)
			}
			if err := x.CheckRecords(); err != nil {
				t.Errorf("%s: %v", e.Name(), err)
			}
			x.Close()
		}
		if n < 5 {
			t.Fatalf("%s: %d tapes, expected the fixtures", dir, n)
		}
	}
}
