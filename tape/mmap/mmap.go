// Package mmap maps files read-only, for the readers that scan a tape or
// an import's source in place (the page cache, no copy through read(2)),
// and turns the one fault such a reader can meet, the file cut shorter by
// another process while it was mapped (SIGBUS on Linux), into an error
// instead of a crash: see Guard.
package mmap

import (
	"errors"
	"os"
	"runtime"
	"runtime/debug"
)

// ErrShrank is what Guard returns when its function touched a mapped page
// the file no longer has.
var ErrShrank = errors.New("the file was cut shorter while it was being read (truncated or rewritten by another process): read it again once it is whole")

// Advice is how a mapping will be read.
type Advice uint8

const (
	// Sequential: front to back (the kernel reads ahead and drops pages
	// behind).
	Sequential Advice = 1 << iota
	// Populate: every page mapped at once (Linux), instead of a fault a
	// page; for a mapping read whole right away.
	Populate
)

// Map maps length bytes of f from off (a multiple of the page size)
// read-only, and returns the function that unmaps them. It fails on a
// system without mappings (errors.ErrUnsupported) and for a length that
// is not positive: read the file instead.
func Map(f *os.File, off, length int64, advice Advice) ([]byte, func() error, error) {
	return mapRange(f, off, length, advice)
}

// Guard runs fn, turning a fault on mapped memory during it (on this
// goroutine) into ErrShrank; any other panic goes on. Every goroutine that
// reads a mapping runs its reading under Guard: a fault is a property of
// the goroutine (debug.SetPanicOnFault).
func Guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); ok && isFault(re) {
				err = ErrShrank
				return
			}
			panic(r)
		}
	}()
	return fn()
}

// Catch is Guard for the rest of a function with a named error result,
// without moving its body into a closure:
//
//	defer mmap.Catch(&err)()
//
// A fault on mapped memory until the function returns (on this goroutine)
// sets *err to ErrShrank; any other panic goes on.
func Catch(err *error) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		if r := recover(); r != nil {
			if re, ok := r.(runtime.Error); ok && isFault(re) {
				*err = ErrShrank
				return
			}
			panic(r)
		}
	}
}

// isFault reports whether a runtime error is a memory fault: such an
// error has the faulting address.
func isFault(e runtime.Error) bool {
	_, ok := e.(interface{ Addr() uintptr })
	return ok
}
