package tape

import (
	"os"
	"testing"
	"time"
)

func timeParse(s string) (time.Time, error) { return time.Parse(time.RFC3339Nano, s) }

// indexedFile opens the tape at path and indexes its first size bytes,
// the file closed when the test ends.
func indexedFile(t *testing.T, path string, size int) (*os.File, *Index) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	x := NewIndex(f)
	if err := x.Extend(int64(size), nil); err != nil {
		t.Fatal(err)
	}
	return f, x
}

// mapped maps f, the mapping closed when the test ends.
func mapped(t *testing.T, f *os.File) *Mapping {
	t.Helper()
	m, err := MapTape(f)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m
}

// mappedPath opens and maps the tape at path, both closed when the test
// ends.
func mappedPath(t *testing.T, path string) *Mapping {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return mapped(t, f)
}
