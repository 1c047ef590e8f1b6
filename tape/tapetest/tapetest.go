// Package tapetest builds small tapes in memory for the tests of the
// packages that read them (replay, debug): one Line a message, written
// through tape's own Writer and indexed.
package tapetest

import (
	"bytes"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// T0 is the first timestamp of the tapes Build writes.
var T0 = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)

// Line is one message of a test tape: its direction, milliseconds after
// T0, and its JSON (for tape.DirLifecycle, the lifecycle method).
type Line struct {
	Dir tape.Dir
	MS  int
	Msg string
}

// Build writes lines as a tape of server and indexes it; it returns the
// tape's bytes too, which the index reads message bodies from.
func Build(t testing.TB, server string, lines ...Line) (*tape.Index, []byte) {
	t.Helper()
	var buf bytes.Buffer
	w := tape.NewWriter(&buf)
	for _, l := range lines {
		meta := tape.Meta{Dir: l.Dir, Server: server, Time: T0.Add(time.Duration(l.MS) * time.Millisecond)}
		if l.Dir == tape.DirLifecycle {
			if err := w.WriteLifecycle(l.Msg, nil, meta); err != nil {
				t.Fatalf("write tape lifecycle %s: %v", l.Msg, err)
			}
			continue
		}
		if err := w.Write([]byte(l.Msg), meta); err != nil {
			t.Fatalf("write tape line %s: %v", l.Msg, err)
		}
	}
	x := tape.NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatalf("index tape: %v", err)
	}
	return x, buf.Bytes()
}
