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
	// the sessions' numbers in reqKey, by server and session; the last
	// one's kept (a log's lines most often repeat it: no map lookup)
	sessions             map[[2]string]int32
	lastServer, lastSess string
	lastNum              int32
}

// reorderWindow bounds how many records wait behind an answer whose
// request has not come.
const reorderWindow = 4096

type reqKey struct {
	sess int32 // the server's and session's number (reorder.sessions)
	send bool  // the request's direction is send
	id   tape.ID
}

type held struct {
	// r is the record: a record written at once has its chunk's bytes, a
	// held one a copy.
	r      rec
	orphan bool // an answer waiting for its request
	moved  bool // written after its request instead
	key    reqKey
	ts     time.Time
}

func newReorder(o *out) *reorder {
	return &reorder{out: o, seen: map[reqKey]bool{}, sessions: map[[2]string]int32{}}
}

// sessNum is server's and session's number in reqKey.
func (q *reorder) sessNum(server, session string) int32 {
	if len(q.sessions) > 0 && server == q.lastServer && session == q.lastSess {
		return q.lastNum
	}
	k := [2]string{server, session}
	n, ok := q.sessions[k]
	if !ok {
		n = int32(len(q.sessions))
		q.sessions[k] = n
	}
	q.lastServer, q.lastSess, q.lastNum = server, session, n
	return n
}

// pair places r, a single message of kind with id (not empty) sent or
// received (dir) at ts by server in session.
func (q *reorder) pair(kind tape.Kind, id tape.ID, dir tape.Dir, ts time.Time, server, session string, r rec) error {
	switch kind {
	case tape.KindRequest:
		k := reqKey{q.sessNum(server, session), dir == tape.DirSend, id}
		q.seen[k] = true
		for i := range q.queue {
			h := &q.queue[i]
			if !h.orphan || h.moved || h.key != k {
				continue
			}
			h.orphan = false
			if !ts.IsZero() && !h.ts.IsZero() && !ts.After(h.ts) {
				h.moved = true
				q.out.res.Reordered++
				r.b = bytes.Clone(r.b)
				q.queue = append(q.queue, held{r: r}, held{r: h.r})
				delete(q.seen, k)
				return q.flush(false)
			}
			break
		}
		return q.add(held{r: r})
	case tape.KindResponse:
		k := reqKey{q.sessNum(server, session), dir != tape.DirSend, id} // the request's direction is the other
		if q.seen[k] {
			delete(q.seen, k)
			return q.add(held{r: r})
		}
		return q.add(held{r: r, orphan: true, key: k, ts: ts})
	}
	return q.add(held{r: r})
}

// add writes h at once when nothing waits, else holds it (with a copy of
// its bytes).
func (q *reorder) add(h held) error {
	if len(q.queue) == 0 && !h.orphan {
		return q.out.put(h.r)
	}
	h.r.b = bytes.Clone(h.r.b)
	q.queue = append(q.queue, h)
	return q.flush(len(q.queue) > reorderWindow)
}

// flush writes the held records up to the first answer still waiting for
// its request; all of them, in the source's order, with all (at the end,
// or when more than reorderWindow wait).
func (q *reorder) flush(all bool) error {
	i := 0
	for ; i < len(q.queue); i++ {
		h := q.queue[i]
		if h.moved {
			continue
		}
		if h.orphan && !all {
			break
		}
		if err := q.out.put(h.r); err != nil {
			return err
		}
	}
	clear(q.queue[:i])
	q.queue = append(q.queue[:0], q.queue[i:]...)
	return nil
}
