package export

import (
	"errors"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape"
)

// Reading and formatting on two cores: tape.ReadCallsMapped (reading each
// call's bytes in place from a mapping of the tape, scanning its members)
// runs on a goroutine of its own and hands the calls over in batches,
// while the caller's goroutine formats and writes them. The calls reach fn
// in ReadCalls' order; a Call's bytes are its own memory or the mapping's,
// which lives until readCalls returns, so handing one over copies nothing.

const (
	callBatch   = 256 // calls handed over at once
	callBatches = 4   // batches in flight: bounds the memory to a few MB of calls
)

// errStopReading ends ReadCalls when fn failed on the other side.
var errStopReading = errors.New("stop reading: the writer failed")

// readCalls is tape.ReadCallsMapped(r's mapping, x, server, o, fn) with
// the reading done on another goroutine: fn is called on the caller's, in
// the same order, and its first error ends the reading and is returned.
// A call's bytes are valid until readCalls returns. When r is not a file
// that maps, it is tape.ReadCalls(r, x, server, fn) (o has no effect).
func readCalls(r io.Reader, x *tape.Index, server string, o tape.CallOptions, fn func(tape.Call) error) error {
	read := func(fn func(tape.Call) error) error { return tape.ReadCalls(r, x, server, fn) }
	guard := func(fn func() error) error { return fn() } // fn reads the calls' bytes
	if f, ok := r.(*os.File); ok {
		if m, err := tape.MapTape(f); err == nil {
			defer m.Close() // after the last call was handed over and formatted
			read = func(fn func(tape.Call) error) error { return tape.ReadCallsMapped(m, x, server, o, fn) }
			guard = m.Guard // the file cut shorter is an error, not a crash
		}
	}
	batches := make(chan []tape.Call, callBatches)
	free := make(chan []tape.Call, callBatches+2)
	quit := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		defer close(batches)
		b := make([]tape.Call, 0, callBatch)
		send := func() bool {
			select {
			case batches <- b:
			case <-quit:
				return false
			}
			select {
			case b = <-free:
			default:
				b = make([]tape.Call, 0, callBatch)
			}
			return true
		}
		err := read(func(c tape.Call) error {
			if b = append(b, c); len(b) == callBatch && !send() {
				return errStopReading
			}
			return nil
		})
		if !errors.Is(err, errStopReading) && len(b) > 0 {
			send() // the calls before an error too, as ReadCalls gives them
		}
		done <- err
	}()
	var ferr error
	gerr := guard(func() error {
		for b := range batches {
			if ferr == nil {
				for i := range b {
					if ferr = fn(b[i]); ferr != nil {
						close(quit) // the reader stops at its next batch
						break
					}
				}
			}
			clear(b) // let the calls' bytes go
			select {
			case free <- b[:0]:
			default:
			}
		}
		return nil
	})
	if gerr != nil { // fn met the file cut shorter: the reader stops before the mapping goes
		if ferr == nil {
			close(quit)
		}
		for range batches {
		}
		<-done
		return gerr
	}
	err := <-done
	if ferr != nil {
		return ferr
	}
	return err
}
