package replay

// Keyed and loose matching: a request matches the recorded requests with
// its key (method and canonical params), in recorded order.

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"hash/maphash"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// memoKey remembers the key of raw params seen before: identical bytes have
// the same canonical form, so repeated calls skip decoding.
type memoKey struct {
	method string
	params []byte
	key    [16]byte
}

const memoSize = 1024

var memoSeed = maphash.MakeSeed()

// key returns a request's keyed-mode lookup key: a hash of its method and
// canonical params (initialize and server/discover by method alone).
func (e *Engine) key(method string, raw []byte) ([16]byte, error) {
	params := field(raw, "params")
	var h maphash.Hash // no concatenation: params may be large
	h.SetSeed(memoSeed)
	h.WriteString(method)
	h.WriteByte(0)
	h.Write(params)
	mh := h.Sum64()
	if m, ok := e.keys.memo[mh]; ok && m.method == method && bytes.Equal(m.params, params) {
		return m.key, nil
	}
	k, err := e.computeKey(method, params)
	if err != nil {
		return k, err
	}
	if len(e.keys.memo) >= memoSize {
		clear(e.keys.memo)
	}
	e.keys.memo[mh] = memoKey{method: method, params: bytes.Clone(params), key: k}
	return k, nil
}

func (e *Engine) computeKey(method string, params []byte) ([16]byte, error) {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	if method != "initialize" && method != "server/discover" && method != "ping" {
		c, err := e.normalize(method, params)
		if err != nil {
			return [16]byte{}, err
		}
		h.Write(c)
	}
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k, nil
}

// lookup returns the next recorded request with key k, filling the keyed
// index from the tape as far as needed; -1 when none is left.
func (e *Engine) lookup(k [16]byte) int {
	for {
		if q := e.keys.pending[k]; len(q) > 0 {
			for len(q) > 0 && e.report.used[q[0]] {
				q = q[1:]
			}
			e.keys.pending[k] = q
			if len(q) > 0 {
				return q[0]
			}
		}
		if e.keys.n == len(e.scanned.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.scanned.reqs[e.keys.n]
		e.keys.n++
		rec, err := e.recorded(seq)
		if err != nil {
			e.scanned.unreadable[seq] = err
			continue
		}
		rk, err := e.computeKey(rec.Method, field(rec.Raw, "params"))
		if err != nil {
			e.scanned.unreadable[seq] = fmt.Errorf("its params: %w", err)
			continue
		}
		e.keys.pending[rk] = append(e.keys.pending[rk], seq)
		e.keys.last[rk] = seq
	}
}

func (e *Engine) keyedRequest(m tape.Entry) {
	k, err := e.key(m.Method, m.Raw)
	if err != nil {
		e.divergeWith(m, -1, ReasonUnknown, "its params could not be decoded: "+err.Error())
		return
	}
	seq := -1
	if e.x.HasMethod(m.Method) { // else no recorded request can match: no scan
		seq = e.lookup(k)
	}
	if seq >= 0 {
		e.keys.served[k] = seq
		e.consume(m, seq)
		return
	}
	switch {
	case m.Method == "server/discover":
		e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeMethodNotFound, "Method not found: server/discover", nil), e.pos.now, -1, m.ID, nil)
	case m.Method == "ping":
		e.push([]byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`), e.pos.now, -1, m.ID, nil)
	case e.opts.Mode == Loose:
		if last, ok := e.keys.served[k]; ok {
			e.report.matched++
			e.respond(m, last)
			return
		}
		e.unknown(m)
	default:
		if last, ok := e.keys.last[k]; ok {
			e.diverge(m, last, ReasonRepeat)
		} else {
			e.unknown(m)
		}
	}
}

// unknown reports a live request found nowhere on the tape, naming a
// recorded request of its method that could not be read, if any: the tape
// may hold it there.
func (e *Engine) unknown(m tape.Entry) {
	if seq, err := e.unreadableFor(m.Method); seq >= 0 {
		e.divergeUnreadable(m, seq, err)
		return
	}
	e.diverge(m, e.nearest(m), ReasonUnknown)
}

// nearestLimit bounds how many recorded requests of a method a miss is
// compared with to name the nearest.
const nearestLimit = 256

// nearest returns the recorded request of m's method that differs least
// from m by meaning, among the first nearestLimit of them, or -1: a keyed
// miss names it and shows the diff, which says more than "not on the tape".
func (e *Engine) nearest(m tape.Entry) int {
	got, err := e.norm.Normalize(m.Raw)
	if err != nil {
		return -1
	}
	e.scanAll()
	best, fewest, n := -1, 0, 0
	for _, seq := range e.scanned.reqs {
		if e.x.Entry(seq).Method != m.Method {
			continue
		}
		if n++; n > nearestLimit {
			break
		}
		rec, err := e.recorded(seq)
		if err != nil {
			continue
		}
		want, err := e.norm.Normalize(rec.Raw)
		if err != nil {
			continue
		}
		if d := len(Diff(want, got)); best < 0 || d < fewest {
			best, fewest = seq, d
		}
	}
	return best
}
