package tape

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"
)

func readAll(t *testing.T, r *Reader) []Entry {
	t.Helper()
	var out []Entry
	for {
		e, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("Next after %d entries: %v", len(out), err)
		}
		out = append(out, e)
	}
}

const (
	reqLine  = `{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	respLine = `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.250Z"}}`
)

func TestReaderLineEndings(t *testing.T) {
	input := "\xef\xbb\xbf" + reqLine + "\r\n\r\n   \n" + respLine + "\r\n"
	r := NewReader(iotest.OneByteReader(strings.NewReader(input)), BufferSize(16))
	got := readAll(t, r)
	if len(got) != 2 {
		t.Fatalf("got %d entries, want 2", len(got))
	}
	if string(got[0].Raw) != reqLine || string(got[1].Raw) != respLine {
		t.Errorf("raw bytes changed:\n%s\n%s", got[0].Raw, got[1].Raw)
	}
	if got[0].Line != 1 || got[1].Line != 4 {
		t.Errorf("lines %d and %d, want 1 and 4", got[0].Line, got[1].Line)
	}
	if got[0].Offset != 3 || input[got[1].Offset:got[1].Offset+int64(len(respLine))] != respLine {
		t.Errorf("offsets %d and %d do not point at the messages", got[0].Offset, got[1].Offset)
	}
	if len(r.Warnings()) != 0 {
		t.Errorf("warnings %v, want none", r.Warnings())
	}
}

func TestReaderTornLastLine(t *testing.T) {
	input := reqLine + "\n" + respLine[:40]
	r := NewReader(strings.NewReader(input), Strict())
	got := readAll(t, r)
	if len(got) != 2 || got[1].Kind != KindInvalid {
		t.Fatalf("got %+v, want a request and an invalid torn entry", got)
	}
	ws := r.Warnings()
	if len(ws) != 1 || !errors.Is(ws[0], ErrTorn) || ws[0].Line != 2 {
		t.Fatalf("warnings %v, want one ErrTorn on line 2", ws)
	}
}

func TestReaderMalformed(t *testing.T) {
	input := reqLine + "\nnot json\n" + respLine + "\n"
	got := readAll(t, NewReader(strings.NewReader(input)))
	if len(got) != 3 || got[1].Kind != KindInvalid || got[2].Kind != KindResponse {
		t.Fatalf("default mode: got %+v, want request, invalid, response", got)
	}
	r := NewReader(strings.NewReader(input), Strict())
	if _, err := r.Next(); err != nil {
		t.Fatal(err)
	}
	_, err := r.Next()
	if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), "line 2:") {
		t.Fatalf("strict mode: err %v, want ErrMalformed naming line 2", err)
	}
}

func TestReaderBadUTF8AndMissingVersion(t *testing.T) {
	meta := `,"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	input := `{"jsonrpc":"2.0","id":1,"method":"m","params":{"s":"` + "\xff\xfe" + `"}` + meta + "\n" + `{"id":2,"method":"m"` + meta + "\n"
	r := NewReader(strings.NewReader(input))
	got := readAll(t, r)
	if len(got) != 2 || got[0].Kind != KindRequest || got[1].Kind != KindRequest {
		t.Fatalf("got %+v, want two requests kept", got)
	}
	ws := r.Warnings()
	if len(ws) != 2 || !strings.Contains(ws[0].Error(), "line 1: ") || !strings.Contains(ws[0].Error(), "UTF-8") ||
		!strings.Contains(ws[1].Error(), `line 2: `) || !strings.Contains(ws[1].Error(), `"jsonrpc"`) {
		t.Fatalf("warnings %v, want UTF-8 on line 1 and jsonrpc on line 2", ws)
	}
}

func TestReaderBatch(t *testing.T) {
	input := `[{"jsonrpc":"2.0","id":1,"method":"a"},{"jsonrpc":"2.0","id":2,"method":"b"}]` + "\n" + reqLine + "\n" + `[{"jsonrpc":"2.0","id":1,"result":{}}]` + "\n"
	got := readAll(t, NewReader(strings.NewReader(input)))
	if len(got) != 4 {
		t.Fatalf("got %d entries, want 4", len(got))
	}
	if got[0].Batch != 1 || got[1].Batch != 1 || got[2].Batch != 0 || got[3].Batch != 2 {
		t.Errorf("batches %d %d %d %d, want 1 1 0 2", got[0].Batch, got[1].Batch, got[2].Batch, got[3].Batch)
	}
	if string(got[1].Raw) != `{"jsonrpc":"2.0","id":2,"method":"b"}` || got[1].Seq != 1 || got[1].Line != 1 {
		t.Errorf("second batch element: %+v", got[1])
	}
}

// TestReaderHugeLine reads a 64 MiB message: there is no line-length limit.
func TestReaderHugeLine(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping the 64 MiB line")
	}
	big := bytes.Repeat([]byte("x"), 64<<20)
	line := append(append([]byte(`{"jsonrpc":"2.0","id":1,"result":{"blob":"`), big...), `"}}`...)
	input := append(append(line, '\n'), []byte(reqLine+"\n")...)
	got := readAll(t, NewReader(bytes.NewReader(input)))
	if len(got) != 2 || len(got[0].Raw) != len(line) || got[0].Kind != KindResponse {
		t.Fatalf("got %d entries (first %d bytes), want the 64 MiB response and a request", len(got), len(got[0].Raw))
	}
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	if err := os.WriteFile(path, input, 0o600); err != nil {
		t.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if x.Len() != 2 {
		t.Fatalf("index has %d messages, want 2", x.Len())
	}
	m, err := x.Message(0)
	if err != nil || !bytes.Equal(m.Raw, line) {
		t.Fatalf("Message(0): %v, %d bytes; want the whole line back", err, len(m.Raw))
	}
}

type failingReader struct{ err error }

func (f failingReader) Read([]byte) (int, error) { return 0, f.err }

func TestReaderPassesReadErrors(t *testing.T) {
	boom := errors.New("boom")
	r := NewReader(io.MultiReader(strings.NewReader(reqLine+"\n"+respLine[:30]), failingReader{boom}))
	if e, err := r.Next(); err != nil || e.Kind != KindRequest {
		t.Fatalf("first entry: %+v, %v", e, err)
	}
	if e, err := r.Next(); !errors.Is(err, boom) {
		t.Fatalf("got %+v, %v; want the reader's error, not a partial line", e, err)
	}
}

func TestReaderOddMetaAndResponse(t *testing.T) {
	input := `{"jsonrpc":"2.0","id":1,"method":"m","_meta":{"dir":"send","server":5,"ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{},"error":{"code":1,"message":"x"},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
`
	r := NewReader(strings.NewReader(input))
	got := readAll(t, r)
	if len(got) != 2 || !got[1].Error {
		t.Fatalf("entries %+v", got)
	}
	ws := r.Warnings()
	if len(ws) != 2 || ws[0].Error() != "line 1: expected _meta.server to be a string, found '5'" ||
		ws[1].Error() != `line 2: expected "result" or "error" in a response, found both; read as an error` {
		t.Errorf("warnings %q", ws)
	}
}

// TestReaderEntries checks the one read loop: a malformed line (an invalid
// entry, or skipped in strict mode) and a torn last line do not end it, a
// read error ends it and is Err, and breaking out of it is no error.
func TestReaderEntries(t *testing.T) {
	tp := `{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s"}}` + "\n" +
		"{not json\n" +
		`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s"}}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"meth`
	for _, strict := range []bool{false, true} {
		var opts []ReaderOption
		if strict {
			opts = append(opts, Strict())
		}
		rd := NewReader(strings.NewReader(tp), opts...)
		var kinds []Kind
		for e := range rd.Entries() {
			if e.Kind != KindInvalid {
				kinds = append(kinds, e.Kind)
			}
		}
		if rd.Err() != nil || len(kinds) != 2 || kinds[0] != KindRequest || kinds[1] != KindResponse {
			t.Errorf("strict %v: entries %v, err %v; want a request and a response and no error", strict, kinds, rd.Err())
		}
		if rd.WarningCount() == 0 {
			t.Errorf("strict %v: the torn last line left no warning", strict)
		}
	}
	boom := errors.New("disk gone")
	rd := NewReader(io.MultiReader(strings.NewReader(tp[:strings.IndexByte(tp, '\n')+1]), iotest.ErrReader(boom)))
	n := 0
	for range rd.Entries() {
		n++
	}
	if n != 1 || !errors.Is(rd.Err(), boom) {
		t.Errorf("after a read error: %d entries, Err %v; want 1 and %v", n, rd.Err(), boom)
	}
	rd = NewReader(strings.NewReader(tp))
	for range rd.Entries() {
		break
	}
	if rd.Err() != nil {
		t.Errorf("a loop broken off: Err %v, want nil", rd.Err())
	}
}

// MaxLine bounds a line (a tape from /dev/zero used to grow the buffer
// until the kernel ended the process), with an error naming the line.
func TestReaderMaxLine(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}` + "\n" +
		strings.Repeat("x", 10000) + "\n"
	rd := NewReader(strings.NewReader(in), MaxLine(4096), BufferSize(4096))
	if _, err := rd.Next(); err != nil {
		t.Fatalf("first line: %v", err)
	}
	_, err := rd.Next()
	if !errors.Is(err, ErrLineTooLong) || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("Next() on a 10000-byte line with MaxLine(4096) = %v, want ErrLineTooLong naming line 2", err)
	}
	// Without MaxLine, the line is read (as a malformed one).
	rd = NewReader(strings.NewReader(in))
	rd.Next()
	if _, err := rd.Next(); err != nil {
		t.Errorf("Next() without MaxLine = %v, want the line read", err)
	}
}
