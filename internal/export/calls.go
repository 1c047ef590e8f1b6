package export

import (
	"errors"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape"
)

// Reading and formatting on two cores: a tape file that maps is read by
// tape.ReadCallsMapped, whose goroutines read each call's bytes in place
// from the mapping (scanning its members) by ranges, while the caller's
// goroutine pairs them and formats and writes them; a Call's bytes are the
// mapping's, which lives until readCalls returns, so nothing is copied or
// handed over again. Another reader is read by tape.ReadCalls on a
// goroutine of its own, which hands the calls over in batches.

const (
	callBatch   = 256 // calls handed over at once
	callBatches = 4   // batches in flight: bounds the memory to a few MB of calls
)

// errStopReading ends ReadCalls when fn failed on the other side.
var errStopReading = errors.New("stop reading: the writer failed")

// readCalls is tape.ReadCallsMapped(r's mapping, x, server, o, fn): fn is
// called on the caller's goroutine, in ReadCalls' order, and its first
// error ends the reading and is returned. A call's bytes are valid until
// readCalls returns: flush, when not nil, is called (under the mapping's
// Guard) after the last call and before the tape is unmapped, to write
// what still refers to them (a gatherWriter's pieces); its error is
// returned. When r is not a file that maps, it is
// tape.ReadCalls(r, x, server, fn) on another goroutine (o has no effect).
func readCalls(r io.Reader, x *tape.Index, server string, o tape.CallOptions, fn func(tape.Call) error, flush func() error) error {
	if f, ok := r.(*os.File); ok {
		if m, err := tape.MapTape(f); err == nil {
			// fn runs under the mapping's Guard, and before it is unmapped.
			defer m.Close()
			err := tape.ReadCallsMapped(m, x, server, o, fn)
			if err == nil && flush != nil {
				err = m.Guard(flush)
			}
			return err
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
