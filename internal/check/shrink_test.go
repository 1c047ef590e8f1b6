//go:build unix

package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// A tape cut shorter once check's pass (or check --spec's) has mapped it:
// the check ends with an error naming the tape and wrapping
// mmap.ErrShrank, not a SIGBUS crash, nor the findings of the part read.
func TestCheckTapeCutWhileMapped(t *testing.T) {
	for _, c := range []struct {
		pass string
		nth  int // the MessageReader after which the tape is cut: Tape's, then specCheck's
	}{{"check", 1}, {"check --spec", 2}} {
		path := filepath.Join(t.TempDir(), "t.jsonl")
		size, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 60000, Seed: 5, Profile: tape.SynthRealistic})
		if err != nil {
			t.Fatal(err)
		}
		if size < 8<<20 {
			t.Fatalf("expected a tape of 8 MB or more (mapped), found %d bytes", size)
		}
		x, err := tape.OpenIndex(path)
		if err != nil {
			t.Fatal(err)
		}
		maps := 0
		afterMap = func() {
			if maps++; maps == c.nth {
				if err := os.Truncate(path, size/2); err != nil {
					t.Error(err)
				}
			}
		}
		fs, err := Tape(path, x, Options{Spec: true, FailOn: DefaultFailOn})
		afterMap = nil
		x.Close()
		if maps < c.nth {
			t.Fatalf("%s: %d passes mapped the tape, expected %d", c.pass, maps, c.nth)
		}
		if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) || fs != nil {
			t.Fatalf("%s, the tape cut after it mapped it: expected an error naming %s and wrapping mmap.ErrShrank (no findings), found %v (%d findings)", c.pass, path, err, len(fs))
		}
	}
}

// A tape shorter than its index (changed after it was indexed), read
// without a mapping: an error, not the findings of the part read.
func TestCheckTapeShorterThanItsIndex(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	size, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 2000, Seed: 5, Profile: tape.SynthRealistic})
	if err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if err := os.Truncate(path, size/2); err != nil {
		t.Fatal(err)
	}
	if fs, err := Tape(path, x, Options{Spec: true, FailOn: DefaultFailOn}); err == nil || fs != nil {
		t.Fatalf("expected an error reading a message past the tape's new end, found %v (%d findings)", err, len(fs))
	}
}
