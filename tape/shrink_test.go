//go:build unix

package tape

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

// Readers of a mapped tape whose file is cut shorter after it was mapped
// and before its bytes are read: each returns an error wrapping
// mmap.ErrShrank and naming the file, where it used to crash the process
// with SIGBUS ("unexpected fault address").

// cutAfterMap makes the next mappings of the tape package cut the file at
// path to size bytes right after they are made.
func cutAfterMap(t *testing.T, path string, size int64) {
	t.Helper()
	afterMap = func() {
		if err := os.Truncate(path, size); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(func() { afterMap = nil })
}

// withProcs runs the test with GOMAXPROCS n: 1 takes the serial paths,
// 2 the parallel ones.
func withProcs(t *testing.T, n int) {
	t.Cleanup(func() { runtime.GOMAXPROCS(runtime.GOMAXPROCS(n)) })
}

func writeShrinkTape(t *testing.T) (string, []byte) {
	t.Helper()
	data := parallelTape(t, SynthSmall, 50000, "")
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func wantShrank(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, mmap.ErrShrank) {
		t.Fatalf("expected an error wrapping mmap.ErrShrank, found %v", err)
	}
	if !strings.Contains(err.Error(), path) {
		t.Fatalf("expected the error to name %s, found %q", path, err)
	}
}

// lastSegment is where consumeParallel's last segment of data starts.
func lastSegment(data []byte) int {
	at := 0
	for {
		end := min(at+segmentBytes, len(data))
		if end < len(data) {
			if k := bytes.IndexByte(data[end:], '\n'); k >= 0 {
				end += k + 1
			} else {
				end = len(data)
			}
		}
		if end == len(data) {
			return at
		}
		at = end
	}
}

func TestIndexFileCutWhileMapped(t *testing.T) {
	page := os.Getpagesize()
	for _, tc := range []struct {
		name  string
		procs int
		cut   func(data []byte) int64
	}{
		{"serial", 1, func(data []byte) int64 { return int64(len(data) / 2) }},
		// the goroutine cutting the window into segments meets the fault
		{"parallel mid-window", 2, func(data []byte) int64 { return int64(len(data) / 2) }},
		// a worker classifying the last segment meets it
		{"parallel last segment", 2, func(data []byte) int64 {
			at := lastSegment(data)
			if len(data)-at < 3*page {
				t.Fatalf("the last segment is %d bytes, expected more than 3 pages", len(data)-at)
			}
			return int64(at + page)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			withProcs(t, tc.procs)
			path, data := writeShrinkTape(t)
			cutAfterMap(t, path, tc.cut(data))
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			x := NewIndex(f)
			wantShrank(t, x.Extend(int64(len(data)), nil), path)
		})
	}
}

func TestReadCallsMappedFileCutWhileMapped(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(map[int]string{1: "serial", 2: "parallel"}[procs], func(t *testing.T) {
			withProcs(t, procs)
			path, data := writeShrinkTape(t)
			f, x := indexedFile(t, path, len(data))
			cutAfterMap(t, path, int64(len(data)/2))
			m := mapped(t, f)
			calls := 0
			err := ReadCallsMapped(m, x, "", CallOptions{Alias: true}, func(Call) error { calls++; return nil })
			wantShrank(t, err, path)
			if calls == 0 {
				t.Errorf("expected the calls before the cut to be given, found none")
			}
		})
	}
}

// The caller's goroutine reads the calls' bytes in the mapping (Alias):
// the file cut to nothing once the calls are read, the first byte read
// faults there.
func TestReadCallsMappedCallerReadsCutFile(t *testing.T) {
	for _, procs := range []int{1, 2} {
		t.Run(map[int]string{1: "serial", 2: "parallel"}[procs], func(t *testing.T) {
			withProcs(t, procs)
			path, data := writeShrinkTape(t)
			f, x := indexedFile(t, path, len(data))
			m := mapped(t, f)
			var sum int
			err := ReadCallsMapped(m, x, "", CallOptions{Alias: true}, func(c Call) error {
				if err := os.Truncate(path, 0); err != nil {
					return err
				}
				for _, b := range c.RequestRaw {
					sum += int(b)
				}
				return nil
			})
			wantShrank(t, err, path)
		})
	}
}

func TestMessageReaderFileCutWhileMapped(t *testing.T) {
	path, data := writeShrinkTape(t)
	f, x := indexedFile(t, path, len(data))
	cutAfterMap(t, path, int64(len(data)/2))
	mr := NewMessageReader(x, f)
	defer mr.Close()
	if mr.mapped == nil {
		t.Fatal("expected the message reader to map the tape")
	}
	read := 0
	err := mr.Guard(func() error {
		for i := range x.Len() {
			raw, err := mr.At(x.Entry(i))
			if err != nil {
				return err
			}
			read += len(raw)
		}
		return nil
	})
	wantShrank(t, err, path)
}
