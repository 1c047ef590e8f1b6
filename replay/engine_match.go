package replay

// Matching a live request with recorded ones, shared by the modes.

import (
	"bytes"
	"fmt"

	"github.com/tapedeck/tapedeck/tape"
)

// request handles a live request.
func (e *Engine) request(m tape.Entry) {
	if e.taskRead(m) {
		return
	}
	if e.opts.Mode == Strict {
		e.strict(m)
	} else {
		e.keyedRequest(m)
	}
}

// sameRequest compares a live request with a recorded one by meaning. The
// error says why the recorded request's params could not be decoded; a
// live request whose params cannot be is just not the same.
func (e *Engine) sameRequest(m, rec tape.Entry) (bool, error) {
	if m.Method != rec.Method {
		return false, nil
	}
	if m.Method == "server/discover" || m.Method == "ping" {
		return true, nil
	}
	lp, rp := field(m.Raw, "params"), field(rec.Raw, "params")
	if bytes.Equal(lp, rp) && m.Method != "initialize" {
		return true, nil // byte-equal params: the common case, no decoding
	}
	b, err := e.normalize(rec.Method, rp)
	if err != nil {
		return false, fmt.Errorf("its params: %w", err)
	}
	a, err := e.normalize(m.Method, lp)
	return err == nil && bytes.Equal(a, b), nil
}

// recorded reads recorded message seq. A body that cannot be read, or no
// longer reads as the message indexed (the file changed since), is an
// error.
func (e *Engine) recorded(seq int) (tape.Entry, error) {
	m, err := e.x.Message(seq)
	if err != nil {
		return m, err
	}
	if m.Problem != "" {
		return m, fmt.Errorf("%s (the file changed since it was indexed?)", m.Problem)
	}
	return m, nil
}

// unreadableFor returns the first unused recorded request of method that
// could not be read or keyed, and why, or -1.
func (e *Engine) unreadableFor(method string) (int, error) {
	first := -1
	for seq := range e.scanned.unreadable {
		if !e.report.used[seq] && e.x.Entry(seq).Method == method && (first < 0 || seq < first) {
			first = seq
		}
	}
	if first < 0 {
		return -1, nil
	}
	return first, e.scanned.unreadable[first]
}

// normalize returns the canonical form of a request's params for matching.
func (e *Engine) normalize(method string, params []byte) ([]byte, error) {
	v, err := e.norm.NormalizeParams(params)
	if err != nil {
		return nil, err
	}
	if method == "initialize" {
		if p, ok := v.(map[string]any); ok {
			// Version drift and client identity are not behaviour.
			delete(p, "protocolVersion")
			delete(p, "capabilities")
			delete(p, "clientInfo")
		}
	}
	return tape.CanonicalValue(v)
}
