package replay

import (
	"testing"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/tapetest"
)

// t0 is the first timestamp of the test tapes.
var t0 = tapetest.T0

// line is one message of a test tape: dir, milliseconds after t0, JSON
// (a tapetest.Line, kept local so the tests' literals stay short).
type line struct {
	dir tape.Dir
	ms  int
	msg string
}

// buildIndex writes lines as a tape for server "s" and indexes it.
func buildIndex(t testing.TB, lines ...line) *tape.Index {
	t.Helper()
	return buildIndexServer(t, "s", lines...)
}

func buildIndexServer(t testing.TB, server string, lines ...line) *tape.Index {
	t.Helper()
	x, _ := buildIndexBytes(t, server, lines...)
	return x
}

// buildIndexBytes is buildIndexServer that also returns the tape's bytes,
// which the index reads message bodies from: a test may change them.
func buildIndexBytes(t testing.TB, server string, lines ...line) (*tape.Index, []byte) {
	t.Helper()
	ls := make([]tapetest.Line, len(lines))
	for i, l := range lines {
		ls[i] = tapetest.Line{Dir: l.dir, MS: l.ms, Msg: l.msg}
	}
	return tapetest.Build(t, server, ls...)
}

const (
	send = tape.DirSend
	recv = tape.DirRecv
	life = tape.DirLifecycle // msg is the lifecycle method
)

// handlerFor makes an HTTP handler with e's tape and options.
func handlerFor(t testing.TB, e *Engine, o HTTPOptions) *HTTPHandler {
	t.Helper()
	h, err := NewHTTPHandler(e.x, e.Options(), o)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
