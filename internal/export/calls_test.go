package export

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// readCalls gives fn the very calls tape.ReadCalls gives, in its order,
// though they are read on another goroutine (more calls than the batches
// in flight hold); fn's first error ends it, is returned, and leaves no
// goroutine behind.
func TestReadCallsOnTwoGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 8000, Seed: 4, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	x := tape.NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	var want, got []tape.Call
	if err := tape.ReadCalls(bytes.NewReader(data), x, "", func(c tape.Call) error { want = append(want, c); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(want) < 2*callBatch*callBatches {
		t.Fatalf("%d calls: expected more than the %d the batches in flight hold", len(want), callBatch*callBatches)
	}
	before := runtime.NumGoroutine()
	if err := readCalls(bytes.NewReader(data), x, "", tape.CallOptions{}, func(c tape.Call) error { got = append(got, c); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d calls, tape.ReadCalls gives %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("call %d is %v, tape.ReadCalls gives %v", i, got[i], want[i])
		}
	}
	for _, at := range []int{1, callBatch, callBatch + 1, len(want) / 2, len(want)} {
		stop := errors.New("stop")
		n := 0
		err := readCalls(bytes.NewReader(data), x, "", tape.CallOptions{}, func(tape.Call) error {
			if n++; n == at {
				return stop
			}
			return nil
		}, nil)
		if err != stop || n != at {
			t.Fatalf("fn failing at call %d: %v after %d calls, expected %v after %d", at, err, n, stop, at)
		}
	}
	for deadline := time.Now().Add(5 * time.Second); runtime.NumGoroutine() > before; {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after, %d before: the reader did not end", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}
