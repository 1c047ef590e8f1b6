package tape

import (
	"bytes"
	"time"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Encoder formats the tape lines of one direction of one server on a
// recorder's hot path: the _meta prefix is built once, timestamps are
// formatted once a millisecond, and the message is checked with a reused
// classifier, so a line costs no allocation. Its lines are byte for byte
// those Writer.Write makes for a single JSON-RPC object on one line with no
// Meta.Extra; everything else (batches, extras, invalid frames) is left to a
// Writer. An Encoder is not safe for concurrent use.
type Encoder struct {
	prefix []byte // `"_meta":{"dir":"send","server":"name","ts":"`
	peek   Peeker // its classifier's stack, for skipValue
	lastMS int64
	lastTS []byte
	micro  bool // KeepMicroseconds
}

// KeepMicroseconds makes e stamp a time with a part below the millisecond
// with its microseconds, as a Writer made KeepMicroseconds does (an
// import), and returns e.
func (e *Encoder) KeepMicroseconds() *Encoder {
	e.micro = true
	return e
}

// NewEncoder returns an Encoder for messages going in direction dir to or
// from server.
func NewEncoder(dir Dir, server string) *Encoder {
	p := []byte(`"_meta":{"dir":`)
	p = jsonscan.AppendQuoted(p, string(dir), false)
	p = append(p, `,"server":`...)
	p = jsonscan.AppendQuoted(p, server, false)
	p = append(p, `,"ts":"`...)
	return &Encoder{prefix: p, lastMS: -1}
}

// AppendLine appends to b the tape line (newline included) of msg, a
// JSON-RPC message, stamped t. It reports false, appending nothing, when msg
// is not a single JSON-RPC object on one line: write it with a Writer.
func (e *Encoder) AppendLine(b, msg []byte, t time.Time) ([]byte, bool) {
	return e.AppendLineMeta(b, msg, t, nil)
}

// AppendLineMeta is AppendLine with more _meta members after ts: extra
// holds them already encoded, each as `,"key":value`, in key order, so that
// the line is byte for byte the one Writer.Write makes with those members
// in Meta.Extra. A recorder that stamps every line with the same few keys
// (the HTTP proxy's transport, status, session...) encodes them without a
// map or reflection.
func (e *Encoder) AppendLineMeta(b, msg []byte, t time.Time, extra []byte) ([]byte, bool) {
	msg = bytes.TrimSpace(msg)
	n := len(msg)
	if n < 2 || msg[0] != '{' || msg[n-1] != '}' || bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return b, false
	}
	if !e.plainMessage(msg) {
		return b, false
	}
	return e.AppendLinePlain(b, msg, t, extra), true
}

// AppendLinePlain is AppendLineMeta for a message a Peeker found Plain:
// it is not walked again.
func (e *Encoder) AppendLinePlain(b, msg []byte, t time.Time, extra []byte) []byte {
	msg = bytes.TrimSpace(msg)
	n := len(msg)
	b = append(b, msg[:n-1]...)
	if len(bytes.TrimSpace(msg[1:n-1])) > 0 {
		b = append(b, ',')
	}
	b = append(b, e.prefix...)
	t = t.UTC()
	if e.micro && t.Nanosecond()%int(time.Millisecond) >= int(time.Microsecond) {
		b = appendTS(b, t, true)
	} else if ms := t.UnixMilli(); ms != e.lastMS {
		e.lastMS = ms
		e.lastTS = t.AppendFormat(e.lastTS[:0], TimeFormat)
		b = append(b, e.lastTS...)
	} else {
		b = append(b, e.lastTS...)
	}
	b = append(b, '"')
	b = append(b, extra...)
	return append(b, "}}\n"...)
}

// plainMessage reports whether msg, an object on one line, is one JSON-RPC
// request, response or notification that is not a lifecycle record and has
// no _meta of its own: exactly the objects classify accepts as such, found
// in one walk of the top-level members (Peeker.Peek) without classify's
// notes, UTF-8 check and params walk (which cost more than half of a
// line's encoding). Anything else gets false and goes to a Writer, which
// decides properly.
func (e *Encoder) plainMessage(msg []byte) bool { return e.peek.Peek(msg).Plain }
