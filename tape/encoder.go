package tape

import (
	"bytes"
	"time"
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
	cls    classifier
	lastMS int64
	lastTS []byte
}

// NewEncoder returns an Encoder for messages going in direction dir to or
// from server.
func NewEncoder(dir Dir, server string) *Encoder {
	p := []byte(`"_meta":{"dir":`)
	p = appendString(p, string(dir))
	p = append(p, `,"server":`...)
	p = appendString(p, server)
	p = append(p, `,"ts":"`...)
	return &Encoder{prefix: p, lastMS: -1}
}

// AppendLine appends to b the tape line (newline included) of msg, a
// JSON-RPC message, stamped t. It reports false, appending nothing, when msg
// is not a single JSON-RPC object on one line: write it with a Writer.
func (e *Encoder) AppendLine(b, msg []byte, t time.Time) ([]byte, bool) {
	msg = bytes.TrimSpace(msg)
	n := len(msg)
	if n < 2 || msg[0] != '{' || msg[n-1] != '}' || bytes.IndexByte(msg, '\n') >= 0 || bytes.IndexByte(msg, '\r') >= 0 {
		return b, false
	}
	if ms := e.cls.classify(msg); len(ms) != 1 || ms[0].kind == KindInvalid || ms[0].kind == KindLifecycle {
		return b, false
	}
	b = append(b, msg[:n-1]...)
	if len(bytes.TrimSpace(msg[1:n-1])) > 0 {
		b = append(b, ',')
	}
	b = append(b, e.prefix...)
	t = t.UTC()
	if ms := t.UnixMilli(); ms != e.lastMS {
		e.lastMS = ms
		e.lastTS = t.AppendFormat(e.lastTS[:0], TimeFormat)
	}
	b = append(b, e.lastTS...)
	return append(b, "\"}}\n"...), true
}
