package record

import (
	"bytes"
	"net/http"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// laneTape writes the shadow lane's records: encoded on the fast path (a
// tape.Encoder a direction, as the proxy's own records), collected in one
// batch and written to the tape in one write at most every laneFlushEvery
// (or once laneFlushSize is collected), so that the lane takes the tape's
// lock once for many records instead of once a record, and the client's
// own records seldom wait behind the lane's. A lane record reaches the
// tape at most laneFlushEvery late; close writes what is left.
type laneTape struct {
	rc   *recorder   // the lane's
	note func(error) // the recording's first write error

	mu         sync.Mutex // the batch and its sinks
	batch      lineBatch  // dest: nil, flush swaps buf out and writes it
	send, recv *sink
	life       *sink
	timer      *time.Timer // a flush is due (nil: none)
	closed     bool        // close flushed: later records are written at once

	flushMu sync.Mutex // one write at a time, in order
	spare   []byte
}

const (
	laneFlushEvery = 10 * time.Millisecond
	laneFlushSize  = 64 << 10
)

func newLaneTape(rc *recorder, note func(error)) *laneTape {
	t := &laneTape{rc: rc, note: note}
	w := tape.NewWriter(&t.batch)
	t.send = &sink{rc: rc, w: w, enc: tape.NewEncoder(tape.DirSend, rc.server), lines: &t.batch.buf}
	t.recv = &sink{rc: rc, w: w, enc: tape.NewEncoder(tape.DirRecv, rc.server), lines: &t.batch.buf}
	t.life = &sink{rc: rc, w: w}
	return t
}

// message records one lane message (sink.message's rules).
func (t *laneTape) message(msg []byte, dir tape.Dir, mx metaExtra) error {
	t.mu.Lock()
	s := t.recv
	if dir == tape.DirSend {
		s = t.send
	}
	err := s.message(msg, dir, mx)
	return joinErr(err, t.added())
}

// lifecycle records one lifecycle record of the lane.
func (t *laneTape) lifecycle(method string, params any, extra map[string]any) error {
	t.mu.Lock()
	err := t.life.lifecycle(method, params, extra)
	return joinErr(err, t.added())
}

func joinErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// added schedules the flush of what was just added; t.mu is held, and
// released.
func (t *laneTape) added() error {
	switch {
	case t.closed || len(t.batch.buf) >= laneFlushSize:
		t.mu.Unlock()
		return t.flush()
	case t.timer == nil && len(t.batch.buf) > 0:
		t.timer = time.AfterFunc(laneFlushEvery, func() { t.note(t.flush()) })
	}
	t.mu.Unlock()
	return nil
}

// flush writes the collected lines in one write.
func (t *laneTape) flush() error {
	t.flushMu.Lock()
	defer t.flushMu.Unlock()
	t.mu.Lock()
	if t.timer != nil {
		t.timer.Stop()
		t.timer = nil
	}
	b := t.batch.buf
	t.batch.buf = t.spare[:0]
	t.mu.Unlock()
	if len(b) == 0 {
		t.spare = b
		return nil
	}
	_, err := t.rc.dest.Write(b)
	if cap(b) > keepBuffer {
		b = nil
	}
	t.spare = b[:0]
	return err
}

// close writes what is left; later records are written at once.
func (t *laneTape) close() error {
	t.mu.Lock()
	t.closed = true
	t.mu.Unlock()
	return t.flush()
}

// shadowMeta is a lane record's _meta besides dir, server and ts.
type shadowMeta struct {
	http   tape.HTTPMeta
	of     []byte
	client string
}

// appendJSON writes the members in key order, as tape.Writer does: the
// lane's (shadow, shadowOf, shadowSession) before the HTTP members that
// sort after them (status, stream, transport).
func (m shadowMeta) appendJSON(b []byte) []byte {
	start := len(b)
	if m.http.HTTP {
		b = m.http.AppendJSON(b)
	}
	at := len(b)
	for _, k := range [...]string{`,"status":`, `,"stream":`, `,"transport":`} {
		// A string member's text never holds `,"` (its quotes are
		// escaped): the first of these is the member's start.
		if i := bytes.Index(b[start:], []byte(k)); i >= 0 {
			at = start + i
			break
		}
	}
	var tail [256]byte
	rest := append(tail[:0], b[at:]...)
	b = append(b[:at], `,"shadow":true`...)
	if len(m.of) > 0 {
		b = append(b, `,"shadowOf":`...)
		b = append(b, m.of...)
	}
	if m.client != "" {
		b = append(b, `,"shadowSession":`...)
		b = tape.AppendString(b, m.client)
	}
	return append(b, rest...)
}

func (m shadowMeta) fields() map[string]any {
	f := map[string]any{}
	if m.http.HTTP {
		f = m.http.Fields()
	}
	f[tape.MetaShadow] = true
	if len(m.of) > 0 {
		f[tape.MetaShadowOf] = jsonText(m.of)
	}
	if m.client != "" {
		f[tape.MetaShadowSession] = m.client
	}
	return f
}

// jsonText is a JSON value's text kept as it is in a map for tape.Writer.
type jsonText []byte

func (j jsonText) MarshalJSON() ([]byte, error) { return j, nil }

func (s *shadow) record(msg []byte, dir tape.Dir, l *shadowLane, of []byte, client string) {
	var hm tape.HTTPMeta
	if s.o.URL != nil {
		hm = tape.HTTPMeta{HTTP: true, Method: http.MethodPost, Session: l.bSession(), Protocol: l.proto()}
	}
	s.recordHTTP(msg, dir, l, of, client, hm)
}

func (s *shadow) recordHTTP(msg []byte, dir tape.Dir, _ *shadowLane, of []byte, client string, hm tape.HTTPMeta) {
	s.note(s.sk.message(msg, dir, shadowMeta{http: hm, of: of, client: client}))
}
