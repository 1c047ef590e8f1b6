package importer

import (
	"bytes"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// reorder repairs answers a source recorded before their requests (by its
// own sequence): mcpsnoop writes the two directions from two goroutines,
// so its seq order is not causal. An answer whose request has not been
// seen is held, with everything after it, until the request comes: when
// the timestamps show the request came first (request ts ≤ answer ts),
// the answer is written right after its request and counted in
// Result.Reordered; otherwise, or when the request never comes within
// reorderWindow records, everything is written in the source's order.
type reorder struct {
	out   *out
	queue []held
	seen  map[reqKey]bool // requests written or held, until answered
}

// reorderWindow bounds how many records wait behind an answer whose
// request has not come.
const reorderWindow = 4096

type reqKey struct {
	server, session string
	dir             tape.Dir // the request's direction
	id              tape.ID
}

type held struct {
	// write writes msg (nil for a record made of other things): the bytes
	// of a record written at once are the reader's, a held record's a
	// copy.
	write  func(msg []byte) error
	msg    []byte
	orphan bool // an answer waiting for its request
	moved  bool // written after its request instead
	key    reqKey
	ts     time.Time
}

func newReorder(o *out) *reorder { return &reorder{out: o, seen: map[reqKey]bool{}} }

func opposite(d tape.Dir) tape.Dir {
	if d == tape.DirSend {
		return tape.DirRecv
	}
	return tape.DirSend
}

// other passes a record that takes no part in pairing (its bytes its
// own).
func (r *reorder) other(write func() error) error {
	return r.add(held{write: func([]byte) error { return write() }})
}

// invalid passes a frame that is no JSON-RPC message.
func (r *reorder) invalid(frame []byte, m tape.Meta) error {
	return r.add(held{msg: frame, write: func(msg []byte) error { return r.out.invalid(msg, m) }})
}

// message passes a wire message of session; only single messages (no
// batches) are repaired.
func (r *reorder) message(msg []byte, m tape.Meta, session string) error {
	write := func(msg []byte) error { return r.out.message(msg, m) }
	es := tape.Classify(msg)
	if len(es) != 1 || es[0].ID == "" {
		return r.add(held{msg: msg, write: write})
	}
	return r.pair(es[0].Kind, es[0].ID, m, session, msg, write)
}

// plain passes a single message a tape.Peeker read as h (Plain, not
// invalid), written on the Encoder's fast path when m has no Extra.
func (r *reorder) plain(msg []byte, h tape.Head, m tape.Meta, session string) error {
	if len(h.ID) == 0 && len(r.queue) == 0 {
		if m.Extra == nil {
			return r.out.plain(msg, m)
		}
		return r.out.message(msg, m)
	}
	write := func(msg []byte) error { return r.out.message(msg, m) }
	if m.Extra == nil {
		write = func(msg []byte) error { return r.out.plain(msg, m) }
	}
	if len(h.ID) == 0 {
		return r.add(held{msg: msg, write: write})
	}
	return r.pair(h.Kind, tape.ID(h.ID), m, session, msg, write)
}

// pair places a message of kind with id (not empty).
func (r *reorder) pair(kind tape.Kind, id tape.ID, m tape.Meta, session string, msg []byte, write func([]byte) error) error {
	switch kind {
	case tape.KindRequest:
		k := reqKey{m.Server, session, m.Dir, id}
		r.seen[k] = true
		for i := range r.queue {
			h := &r.queue[i]
			if !h.orphan || h.moved || h.key != k {
				continue
			}
			h.orphan = false
			if !m.Time.IsZero() && !h.ts.IsZero() && !m.Time.After(h.ts) {
				h.moved = true
				r.out.res.Reordered++
				r.queue = append(r.queue, held{write: write, msg: bytes.Clone(msg)}, held{write: h.write, msg: h.msg})
				delete(r.seen, k)
				return r.flush(false)
			}
			break
		}
		return r.add(held{write: write, msg: msg})
	case tape.KindResponse:
		k := reqKey{m.Server, session, opposite(m.Dir), id}
		if r.seen[k] {
			delete(r.seen, k)
			return r.add(held{write: write, msg: msg})
		}
		return r.add(held{write: write, msg: msg, orphan: true, key: k, ts: m.Time})
	}
	return r.add(held{write: write, msg: msg})
}

// add writes h at once when nothing waits, else holds it (with a copy of
// its bytes).
func (r *reorder) add(h held) error {
	if len(r.queue) == 0 && !h.orphan {
		return h.write(h.msg)
	}
	h.msg = bytes.Clone(h.msg)
	r.queue = append(r.queue, h)
	return r.flush(len(r.queue) > reorderWindow)
}

// flush writes the held records up to the first answer still waiting for
// its request; all of them, in the source's order, with all (at the end,
// or when more than reorderWindow wait).
func (r *reorder) flush(all bool) error {
	i := 0
	for ; i < len(r.queue); i++ {
		h := r.queue[i]
		if h.moved {
			continue
		}
		if h.orphan && !all {
			break
		}
		if err := h.write(h.msg); err != nil {
			return err
		}
	}
	clear(r.queue[:i])
	r.queue = append(r.queue[:0], r.queue[i:]...)
	return nil
}
