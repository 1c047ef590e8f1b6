//go:build unix

package importer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// A log cut shorter once it is mapped (logrotate's copytruncate of an
// mcpsnoop log): the import ends with an error naming the file and
// wrapping mmap.ErrShrank, not a SIGBUS crash, whichever goroutine meets
// the fault: the caller's (the tail mapped first, to find the last
// newline), the reader's or a worker's (a window), serially or not.
func TestImportLogCutWhileMapped(t *testing.T) {
	defer func(w int64) { linesMapWindow = w }(linesMapWindow)
	linesMapWindow = 4 * int64(os.Getpagesize())
	for _, format := range []string{"mcpsnoop", "gh-aw"} {
		var data []byte
		if format == "mcpsnoop" {
			data = snoopReorderLog(3000, "")
		} else {
			data = ghawLogOf(3000, "")
		}
		for _, nth := range []int{1, 2, 3} { // the mapping after which the file is cut
			for _, workers := range []int{1, 4} {
				path := filepath.Join(t.TempDir(), "log.jsonl")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				maps := 0
				afterMap = func() {
					if maps++; maps == nth {
						if err := os.Truncate(path, 0); err != nil {
							t.Error(err)
						}
					}
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				_, err = Import(format, f, &out, Options{workers: workers, MaxLine: 2000})
				f.Close()
				afterMap = nil
				if maps < nth {
					t.Fatalf("%s: %d mappings, expected at least %d (the log cut after the %dth)", format, maps, nth, nth)
				}
				if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) {
					t.Fatalf("%s cut after mapping %d, %d workers: expected an error naming %s and wrapping mmap.ErrShrank, found %v", format, nth, workers, path, err)
				}
			}
		}
	}
}

// An Inspector export cut shorter once it is mapped: the import ends with
// an error naming the file and wrapping mmap.ErrShrank, not a SIGBUS
// crash, whichever goroutine meets the fault: the caller's (right after
// the mapping, or encoding on one worker), a segment's scanning worker
// (the first segment whole, the later ones cut), or an encoding worker.
func TestImportInspectorCutWhileMapped(t *testing.T) {
	doc := []byte(inspectorDoc(4000, 1, ",\n  "))
	page := int64(os.Getpagesize())
	for _, c := range []struct {
		stage   string // "map": right after the mapping, else mapStage's
		keep    int64  // the bytes left
		workers int
	}{
		{"map", 0, 4},
		{"scan", (int64(len(doc))/2 + page - 1) &^ (page - 1), 4},
		{"scan", 0, 4},
		{"write", 0, 4},
		{"write", 0, 1},
	} {
		path, err := importCut(t, "inspector", "export.json", doc, c.stage, c.keep, Options{workers: c.workers, chunk: 64 << 10})
		if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) {
			t.Fatalf("cut to %d bytes at %s, %d workers: expected an error naming %s and wrapping mmap.ErrShrank, found %v", c.keep, c.stage, c.workers, path, err)
		}
	}
}

// An OTLP input cut shorter once it is mapped: the import ends with an
// error naming the file and wrapping mmap.ErrShrank, not a SIGBUS crash,
// whichever goroutine meets the fault: the caller's (cutting the input
// into lines, right after the mapping; writing the spans, which alias
// it) or a line's reader (the caller's or a worker's).
func TestImportOTLPCutWhileMapped(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4)) // workers, on any machine
	src := filepath.Join(t.TempDir(), "x.otlp")
	otlpExportWith(t, "../../testdata/sdk-everything-http.tape.jsonl", src, true)
	one, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	data := bytes.Repeat(one, 20)
	page := int64(os.Getpagesize())
	if int64(len(data)) < 8*page {
		t.Fatalf("expected an input of 8 pages or more, found %d bytes", len(data))
	}
	for _, c := range []struct {
		stage string // "map": right after the mapping, else mapStage's
		keep  int64  // the bytes left
	}{
		{"map", 0},
		{"lines", (int64(len(data))/2 + page - 1) &^ (page - 1)},
		{"lines", 0},
		{"write", 0},
	} {
		path, err := importCut(t, "otlp", "in.otlp", data, c.stage, c.keep, Options{})
		if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) {
			t.Fatalf("cut to %d bytes at %s: expected an error naming %s and wrapping mmap.ErrShrank, found %v", c.keep, c.stage, path, err)
		}
	}
}

// importCut imports data, written to a file named name, with the file cut
// to keep bytes once, at stage ("map": right after the mapping, else
// mapStage's); it fails the test unless the cut happened exactly once, and
// returns the file's path and the import's error.
func importCut(t *testing.T, format, name string, data []byte, stage string, keep int64, o Options) (path string, err error) {
	t.Helper()
	path = filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cut := 0
	cutAt := func(s string) {
		if s == stage {
			cut++
			if err := os.Truncate(path, keep); err != nil {
				t.Error(err)
			}
		}
	}
	afterMap = func() { cutAt("map") }
	mapStage = cutAt
	defer func() { afterMap, mapStage = nil, nil }()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out bytes.Buffer
	_, err = Import(format, f, &out, o)
	if cut != 1 {
		t.Fatalf("cut at %s %d times, expected once", stage, cut)
	}
	return path, err
}
