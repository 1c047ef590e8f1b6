package importer

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// A log that is a file is read through mappings (linesmap.go): the tape,
// the counts and the error are those of reading the same bytes, whatever
// the window, the chunk and the workers, from the file's start or from
// its offset, with a last line without a newline (read after the mapped
// part) or a line past the bound.
func TestImportMappedEqualsRead(t *testing.T) {
	inputs := []struct {
		name, format string
		data         []byte
		o            Options
	}{
		{"reorders", "mcpsnoop", snoopReorderLog(300, ""), Options{}},
		{"reorders-bad-line", "mcpsnoop", snoopReorderLog(200, `{"session_id":"s1","direction":"c2s","ts":"nope"}`+"\n"), Options{}},
		{"reorders-unended", "mcpsnoop", bytes.TrimSuffix(snoopReorderLog(100, ""), []byte("\n")), Options{}},
		{"reorders-long-line", "mcpsnoop", snoopReorderLog(150, `{"pad":"`+strings.Repeat("x", 3000)+`"}`+"\n"), Options{MaxLine: 2000}},
		{"reorders-long-last", "mcpsnoop", append(snoopReorderLog(50, ""), strings.Repeat("z", 3000)...), Options{MaxLine: 2000}},
		{"ghaw-many", "gh-aw", ghawLogOf(300, ""), Options{}},
		{"ghaw-long-unended", "gh-aw", ghawLogOf(100, strings.Repeat("y", 5000)), Options{MaxLine: 4000}},
		{"blank", "gh-aw", []byte("\n \n"), Options{}},
		{"one-unended", "gh-aw", []byte(`{"type":"REQUEST"}`), Options{}},
	}
	defer func(w int64) { linesMapWindow = w }(linesMapWindow)
	dir := t.TempDir()
	for _, in := range inputs {
		path := filepath.Join(dir, in.name)
		if err := os.WriteFile(path, in.data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, skip := range []int{0, bytes.IndexByte(in.data, '\n') + 1} {
			want, wantRes, wantErr := importWith(in.format, bytes.NewReader(in.data[skip:]), in.o)
			for _, window := range []int64{1, 5000, 64 << 20} {
				linesMapWindow = window
				for _, workers := range []int{1, 4} {
					for _, chunk := range []int{1, 97, 4096, 0} {
						o := in.o
						o.workers, o.chunk = workers, chunk
						f, err := os.Open(path)
						if err != nil {
							t.Fatal(err)
						}
						if _, err := f.Seek(int64(skip), io.SeekStart); err != nil {
							t.Fatal(err)
						}
						// Mapped up to the last newline, when one is among
						// the last MaxLine+1 bytes (else the last line is
						// too long, and reading says so).
						rest := in.data[skip:]
						mappable := bytes.Contains(rest[max(0, int64(len(rest))-o.maxLine()-1):], []byte("\n"))
						if ms := newMapSource(f, o.maxLine()); (ms != nil) != mappable {
							t.Fatalf("%s from byte %d: mapped %v, want %v", in.name, skip, ms != nil, mappable)
						} else if ms != nil {
							ms.close()
						}
						got, res, gerr := importWith(in.format, f, o)
						f.Close()
						if got != want || gerr != wantErr || !reflect.DeepEqual(res, wantRes) {
							t.Fatalf("%s from byte %d, window %d, %d workers, chunk %d: tape of %d bytes, %+v, error %q; read: %d bytes, %+v, error %q",
								in.name, skip, window, workers, chunk, len(got), res, gerr, len(want), wantRes, wantErr)
						}
					}
				}
			}
		}
	}
}

// A mapped import stops with its context's error, as a read one does.
func TestImportMappedContextStops(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	if err := os.WriteFile(path, snoopReorderLog(100, ""), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, workers := range []int{1, 4} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err = ImportContext(ctx, "mcpsnoop", f, io.Discard, Options{workers: workers})
		f.Close()
		if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "stopped while reading") {
			t.Errorf("%d workers: ImportContext of a file with its context done = %v, want the context's error", workers, err)
		}
	}
}
