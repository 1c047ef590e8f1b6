package replay

import (
	"bytes"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// t0 is the first timestamp of the test tapes.
var t0 = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)

// line is one message of a test tape: dir, milliseconds after t0, JSON.
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
	var buf bytes.Buffer
	w := tape.NewWriter(&buf)
	for _, l := range lines {
		meta := tape.Meta{Dir: l.dir, Server: server, Time: t0.Add(time.Duration(l.ms) * time.Millisecond)}
		if l.dir == tape.DirLifecycle {
			if err := w.WriteLifecycle(l.msg, nil, meta); err != nil {
				t.Fatalf("write tape lifecycle %s: %v", l.msg, err)
			}
			continue
		}
		if err := w.Write([]byte(l.msg), meta); err != nil {
			t.Fatalf("write tape line %s: %v", l.msg, err)
		}
	}
	x := tape.NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatalf("index tape: %v", err)
	}
	return x, buf.Bytes()
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
