//go:build unix

package export

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// cutOnWrite is an output that cuts the tape at path to nothing at its
// first write: the export has mapped the tape and read part of it, and
// reads the rest (the calls' bytes, the bodies) from pages that are gone.
type cutOnWrite struct {
	t    *testing.T
	path string
	cut  bool
}

func (w *cutOnWrite) Write(p []byte) (int, error) {
	if !w.cut {
		w.cut = true
		if err := os.Truncate(w.path, 0); err != nil {
			w.t.Error(err)
		}
	}
	return len(p), nil
}

// An export whose tape is cut shorter while it is mapped ends with an
// error that names the tape and wraps mmap.ErrShrank, not a SIGBUS crash
// (the reading goroutines, the formatters and the writing goroutine
// touch the mapping).
func TestExportTapeCutWhileMapped(t *testing.T) {
	for _, format := range []string{"json", "har", "otlp", "html"} {
		t.Run(format, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "t.jsonl")
			if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 60000, Seed: 5, Profile: tape.SynthRealistic}); err != nil {
				t.Fatal(err)
			}
			x, err := tape.OpenIndex(path)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			src := Source{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
			w := &cutOnWrite{t: t, path: path}
			switch format {
			case "json":
				err = JSON(w, src)
			case "har":
				err = HAR(w, src, "test")
			case "html":
				err = HTML(w, src, "test")
			case "otlp":
				_, err = OTLP(context.Background(), w, src, OTLPOptions{})
			}
			if !w.cut {
				t.Fatalf("the export wrote nothing before it ended (%v): the tape was not cut", err)
			}
			if !errors.Is(err, mmap.ErrShrank) {
				t.Fatalf("expected an error wrapping mmap.ErrShrank, found %v", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("expected the error to name %s, found %q", path, err)
			}
		})
	}
}
