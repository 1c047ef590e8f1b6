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
	// The requests written or held, until answered: the last few (up to
	// pendingRecent, their ids at most pendingID bytes) in recent, oldest
	// first (most answers come a few lines after their request: no hash
	// nor string made), the others in seen; no request in both.
	recent []pendingReq
	seen   map[reqKey]bool
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

// pendingRecent and pendingID bound reorder.recent.
const (
	pendingRecent = 32
	pendingID     = 26
)

// pendingReq is a request in reorder.recent.
type pendingReq struct {
	sess int32
	send bool
	n    uint8 // the id's length
	id   [pendingID]byte
}

// request notes the request id sent (or received: send false) in the
// session numbered sess, id's bytes not kept.
func (q *reorder) request(sess int32, send bool, id []byte) {
	if len(id) > pendingID {
		q.seen[reqKey{sess, send, tape.ID(id)}] = true
		return
	}
	if q.recentAt(sess, send, id) >= 0 || len(q.seen) > 0 && q.seen[reqKey{sess, send, tape.ID(id)}] {
		return
	}
	if len(q.recent) == pendingRecent { // the oldest moves to seen
		e := &q.recent[0]
		q.seen[reqKey{e.sess, e.send, tape.ID(e.id[:e.n])}] = true
		q.recent = append(q.recent[:0], q.recent[1:]...)
	}
	e := pendingReq{sess: sess, send: send, n: uint8(len(id))}
	copy(e.id[:], id)
	q.recent = append(q.recent, e)
}

// answered forgets the request id of the session numbered sess sent (or
// received), reporting whether it was noted.
func (q *reorder) answered(sess int32, send bool, id []byte) bool {
	if len(id) <= pendingID {
		if i := q.recentAt(sess, send, id); i >= 0 {
			q.recent = append(q.recent[:i], q.recent[i+1:]...)
			return true
		}
	}
	if len(q.seen) == 0 {
		return false
	}
	k := reqKey{sess, send, tape.ID(id)}
	if q.seen[k] {
		delete(q.seen, k)
		return true
	}
	return false
}

// recentAt is the request's index in recent, -1 when it is not there.
func (q *reorder) recentAt(sess int32, send bool, id []byte) int {
	for i := range q.recent {
		e := &q.recent[i]
		if int(e.n) == len(id) && e.sess == sess && e.send == send && string(e.id[:e.n]) == string(id) {
			return i
		}
	}
	return -1
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

// pair places r, a single message of kind with id (its JSON text, not
// empty, not kept) sent or received (dir) at ts by server in session.
func (q *reorder) pair(kind tape.Kind, id []byte, dir tape.Dir, ts time.Time, server, session string, r rec) error {
	switch kind {
	case tape.KindRequest:
		sess, send := q.sessNum(server, session), dir == tape.DirSend
		q.request(sess, send, id)
		for i := range q.queue {
			h := &q.queue[i]
			if !h.orphan || h.moved || h.key.sess != sess || h.key.send != send || string(h.key.id) != string(id) {
				continue
			}
			h.orphan = false
			if !ts.IsZero() && !h.ts.IsZero() && !ts.After(h.ts) {
				h.moved = true
				q.out.res.Reordered++
				r.b = bytes.Clone(r.b)
				q.queue = append(q.queue, held{r: r}, held{r: h.r})
				q.answered(sess, send, id)
				return q.flush(false)
			}
			break
		}
		return q.add(held{r: r})
	case tape.KindResponse:
		sess, send := q.sessNum(server, session), dir != tape.DirSend // the request's direction is the other
		if q.answered(sess, send, id) {
			return q.add(held{r: r})
		}
		return q.add(held{r: r, orphan: true, key: reqKey{sess, send, tape.ID(id)}, ts: ts})
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
