//go:build unix

package mmap

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// A mapping read after its file was cut shorter: under Guard the read
// returns ErrShrank instead of crashing the process with SIGBUS; the bytes
// still in the file read as before, and another panic is not taken for
// a fault.
func TestGuardTurnsAFaultIntoAnError(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	data := make([]byte, 3*page)
	for i := range data {
		data[i] = 'x'
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, unmap, err := Map(f, 0, int64(len(data)), Sequential|Populate)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := os.Truncate(path, int64(page)); err != nil {
		t.Fatal(err)
	}
	var got byte
	err = Guard(func() error { got = m[0]; return nil })
	if err != nil || got != 'x' {
		t.Fatalf("the page the file still has: %q, %v; want 'x', no error", got, err)
	}
	err = Guard(func() error { got = m[2*page]; return nil })
	if !errors.Is(err, ErrShrank) {
		t.Fatalf("a page past the file's new end: %v, want ErrShrank", err)
	}
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Errorf("another panic: recovered %v, want it passed on", r)
		}
	}()
	_ = Guard(func() error { panic("not a fault") })
}

// Catch, deferred, does for the rest of its function what Guard does for
// its closure.
func TestCatchTurnsAFaultIntoAnError(t *testing.T) {
	page := os.Getpagesize()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := os.WriteFile(path, make([]byte, 3*page), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m, unmap, err := Map(f, 0, int64(3*page), Sequential)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	if err := os.Truncate(path, int64(page)); err != nil {
		t.Fatal(err)
	}
	read := func(at int) (b byte, err error) {
		defer Catch(&err)()
		return m[at], nil
	}
	if _, err := read(0); err != nil {
		t.Fatalf("the page the file still has: %v, want no error", err)
	}
	if _, err := read(2 * page); !errors.Is(err, ErrShrank) {
		t.Fatalf("a page past the file's new end: %v, want ErrShrank", err)
	}
	defer func() {
		if r := recover(); r != "not a fault" {
			t.Errorf("another panic: recovered %v, want it passed on", r)
		}
	}()
	func() (err error) {
		defer Catch(&err)()
		panic("not a fault")
	}()
}
