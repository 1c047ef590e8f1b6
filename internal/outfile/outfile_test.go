package outfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

// Until Commit the target is as it was (absent, or its old bytes); Abort
// leaves it so and removes the temporary file; Commit replaces it, keeping
// an existing file's mode, through a symbolic link.
func TestCommitAndAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")

	f, err := Create(path, Options{Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"partial":`)
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("before Commit the target exists: %v", err)
	}
	f.Abort()
	if got := entries(t, dir); len(got) != 0 {
		t.Fatalf("after Abort the directory holds %v, want nothing", got)
	}

	if err := os.WriteFile(path, []byte("old"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err = Create(path, Options{Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("half")
	f.Abort()
	if got := read(t, path); got != "old" {
		t.Fatalf("after Abort the target holds %q, want the old bytes", got)
	}

	link := filepath.Join(dir, "link.json")
	if err := os.Symlink("out.json", link); err != nil {
		t.Fatal(err)
	}
	f, err = Create(link, Options{Perm: 0o600, Sync: true})
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("new")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	f.Abort() // after Commit: nothing
	if got := read(t, path); got != "new" {
		t.Fatalf("after Commit through the link the target holds %q, want \"new\"", got)
	}
	if fi, _ := os.Lstat(link); fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the link was replaced by a file")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want the old file's 0640", fi.Mode().Perm())
	}
	if got := entries(t, dir); len(got) != 2 {
		t.Errorf("the directory holds %v, want the file and the link only", got)
	}
	if err := f.Commit(); err == nil {
		t.Errorf("a second Commit succeeded")
	}
	if _, err := Create(dir, Options{}); err == nil {
		t.Errorf("Create of a directory succeeded")
	}
}

// A target that is not a regular file is written in place.
func TestDeviceWrittenInPlace(t *testing.T) {
	f, err := Create(os.DevNull, Options{Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	if f.temp || f.File.Name() != os.DevNull {
		t.Fatalf("%s written through %s", os.DevNull, f.File.Name())
	}
	f.WriteString("x")
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
}

// A target that is one of the command's inputs, by its own path or another
// (a symbolic link, a hard link), is refused and left as it was.
func TestCreateRefusesAnInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "tape.jsonl")
	if err := os.WriteFile(in, []byte("the tape\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link, hard := filepath.Join(dir, "link.jsonl"), filepath.Join(dir, "hard.jsonl")
	if err := os.Symlink(in, link); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(in, hard); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{in, link, hard} {
		f, err := Create(target, Options{Perm: 0o600, Inputs: []string{in}})
		if err == nil {
			f.Abort()
			t.Fatalf("Create(%s) with %s as an input: expected a refusal, found none", target, in)
		}
		if !strings.Contains(err.Error(), "which this command reads") {
			t.Errorf("Create(%s): expected an error saying it is an input, found %q", target, err)
		}
	}
	if got := read(t, in); got != "the tape\n" {
		t.Fatalf("the input holds %q after the refusals, want it unchanged", got)
	}
	other := filepath.Join(dir, "other.har")
	f, err := Create(other, Options{Perm: 0o600, Inputs: []string{in}})
	if err != nil {
		t.Fatalf("Create(%s), not an input: %v", other, err)
	}
	f.Abort()
}
