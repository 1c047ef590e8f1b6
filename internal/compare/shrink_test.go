//go:build unix

package compare

import (
	"errors"
	"hash/maphash"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// A tape cut shorter once diff has mapped it: reading its calls ends with
// an error that names it and wraps mmap.ErrShrank, not a SIGBUS crash.
func TestCallsTapeCutWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	size, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 60000, Seed: 5, Profile: tape.SynthRealistic})
	if err != nil {
		t.Fatal(err)
	}
	if size < spanThreshold {
		t.Fatalf("expected a tape of %d bytes or more (mapped), found %d", spanThreshold, size)
	}
	side, err := OpenSide(path)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Index.Close()
	afterMap = func() {
		if err := os.Truncate(path, size/2); err != nil {
			t.Error(err)
		}
	}
	defer func() { afterMap = nil }()
	seeds := [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}
	_, err = calls(side, "", &tape.Normalizer{}, seeds, nil, nil)
	if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), side.Name) {
		t.Fatalf("expected an error naming %s and wrapping mmap.ErrShrank, found %v", side.Name, err)
	}
}
