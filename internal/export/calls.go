package export

import (
	"errors"
	"io"

	"github.com/tapedeck/tapedeck/tape"
)

// Reading and formatting on two cores: tape.ReadCalls (reading each call's
// bytes, scanning its members, stripping _meta) runs on a goroutine of its
// own and hands the calls over in batches, while the caller's goroutine
// formats and writes them. The calls reach fn in ReadCalls' order; a
// Call's bytes are its own memory, so handing one over copies nothing.

const (
	callBatch   = 256 // calls handed over at once
	callBatches = 4   // batches in flight: bounds the memory to a few MB of calls
)

// errStopReading ends ReadCalls when fn failed on the other side.
var errStopReading = errors.New("stop reading: the writer failed")

// readCalls is tape.ReadCalls(r, x, server, fn) with the reading done on
// another goroutine: fn is called on the caller's, in the same order, and
// its first error ends the reading and is returned.
func readCalls(r io.Reader, x *tape.Index, server string, fn func(tape.Call) error) error {
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
		err := tape.ReadCalls(r, x, server, func(c tape.Call) error {
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
	err := <-done
	if ferr != nil {
		return ferr
	}
	return err
}
