package importer

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// sample reads a file of testdata/import at the repository root.
func sample(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "import", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// importTape imports data and reads the tape back, failing on any error
// or on a tape line the tape reader does not take.
func importTape(t testing.TB, format string, data []byte, o Options) (Result, []tape.Entry) {
	t.Helper()
	var buf bytes.Buffer
	res, err := Import(format, bytes.NewReader(data), &buf, o)
	if err != nil {
		t.Fatalf("import %s: %v", format, err)
	}
	return res, readTape(t, buf.Bytes())
}

func readTape(t testing.TB, b []byte) []tape.Entry {
	t.Helper()
	var out []tape.Entry
	rd := tape.NewReader(bytes.NewReader(b))
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("the imported tape does not read back: %v\n%s", err, b)
		}
		out = append(out, e)
	}
}

// wire returns the wire messages of a tape.
func wire(es []tape.Entry) []tape.Entry {
	var out []tape.Entry
	for _, e := range es {
		if e.IsWire() {
			out = append(out, e)
		}
	}
	return out
}

func count(es []tape.Entry, f func(tape.Entry) bool) int {
	n := 0
	for _, e := range es {
		if f(e) {
			n++
		}
	}
	return n
}

// tapeTime truncates to the tape's resolution (microseconds).
func tapeTime(t time.Time) time.Time { return t.Truncate(time.Microsecond) }

// wantError checks err is an *Error whose text has each of parts.
func wantError(t *testing.T, err error, parts ...string) {
	t.Helper()
	var ie *Error
	if !errors.As(err, &ie) {
		t.Fatalf("got %v (%T), want an *importer.Error", err, err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error %q lacks %q", err, p)
		}
	}
}

// checkFuzzResult is what every fuzz target asserts: an import either
// writes a tape the tape reader takes whole, or fails with an *Error
// that says where.
func checkFuzzResult(t *testing.T, format string, data []byte) {
	var buf bytes.Buffer
	_, err := Import(format, bytes.NewReader(data), &buf, Options{})
	if err != nil {
		var ie *Error
		if !errors.As(err, &ie) {
			t.Fatalf("error of type %T, not *Error: %v", err, err)
		}
		if ie.Line == 0 && ie.Path == "" && !strings.Contains(ie.Err.Error(), "empty input") {
			t.Fatalf("an error that says neither line nor path: %v", err)
		}
		return
	}
	for _, l := range bytes.Split(bytes.TrimSuffix(buf.Bytes(), []byte("\n")), []byte("\n")) {
		if len(l) > 0 && !json.Valid(l) {
			t.Fatalf("import succeeded but wrote a line that is not JSON: %q\ninput:\n%q", l, data)
		}
	}
	rd := tape.NewReader(bytes.NewReader(buf.Bytes()))
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatalf("import succeeded but wrote a bad tape: %v\ninput:\n%q\ntape:\n%s", err, data, buf.Bytes())
		}
	}
}
