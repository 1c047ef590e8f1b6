package importer

import (
	"bytes"
	"encoding/binary"
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
	// The requests written or held, until answered: up to pendingRecent
	// of them (their ids at most pendingID bytes) in recent, a small
	// table of its own (most answers come a few lines after their
	// request: no string made nor hashed), the others in seen; no
	// request in both.
	recent pendingTable
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

// pendingReq is a request in reorder.recent: its id's first 8 bytes
// packed in head (compared as one number), the rest in tail.
type pendingReq struct {
	used bool
	send bool
	n    uint8 // the id's length
	sess int32
	head uint64
	tail [pendingID - 8]byte
}

// pendingTable is a set of up to pendingRecent requests: open addressing
// in twice as many slots, linear probing.
type pendingTable struct {
	slots [2 * pendingRecent]pendingReq
	n     int
}

const pendingMask = 2*pendingRecent - 1

// home is the slot a request's probe starts at.
func pendingHome(sess int32, send bool, n uint8, head uint64) int {
	h := head ^ uint64(n)<<56 ^ uint64(uint32(sess))<<1
	if send {
		h ^= 1
	}
	return int((h * 0x9E3779B97F4A7C15) >> 58 & pendingMask)
}

// find is the request's slot, -1 when it is not in t; head is
// idHead(id).
func (t *pendingTable) find(sess int32, send bool, id []byte, head uint64) int {
	if t.n == 0 {
		return -1
	}
	n := uint8(len(id))
	for i := pendingHome(sess, send, n, head); ; i = (i + 1) & pendingMask {
		e := &t.slots[i]
		if !e.used {
			return -1
		}
		if e.head == head && e.n == n && e.sess == sess && e.send == send && (n <= 8 || string(e.tail[:n-8]) == string(id[8:])) {
			return i
		}
	}
}

// add puts the request (not in t, t not full) in t; head is idHead(id).
func (t *pendingTable) add(sess int32, send bool, id []byte, head uint64) {
	e := pendingReq{used: true, sess: sess, send: send, n: uint8(len(id)), head: head}
	if len(id) > 8 {
		copy(e.tail[:], id[8:])
	}
	i := pendingHome(sess, send, e.n, e.head)
	for t.slots[i].used {
		i = (i + 1) & pendingMask
	}
	t.slots[i] = e
	t.n++
}

// remove empties slot i, moving back the requests after it that probed
// past it.
func (t *pendingTable) remove(i int) {
	t.n--
	for j := i; ; {
		t.slots[i].used = false
		for {
			j = (j + 1) & pendingMask
			e := &t.slots[j]
			if !e.used {
				return
			}
			k := pendingHome(e.sess, e.send, e.n, e.head)
			// e stays when its home is cyclically in (i, j]
			if i <= j && i < k && k <= j || i > j && (i < k || k <= j) {
				continue
			}
			break
		}
		t.slots[i] = t.slots[j]
		i = j
	}
}

// id is e's id.
func (e *pendingReq) id() []byte {
	b := binary.LittleEndian.AppendUint64(make([]byte, 0, 8+len(e.tail)), e.head)
	if e.n <= 8 {
		return b[:e.n]
	}
	return append(b, e.tail[:e.n-8]...)
}

// idHead packs id's first 8 bytes (fewer when shorter) in a number.
func idHead(id []byte) uint64 {
	if len(id) >= 8 {
		return binary.LittleEndian.Uint64(id)
	}
	var h uint64
	for i, c := range id {
		h |= uint64(c) << (8 * i)
	}
	return h
}

// request notes the request id sent (or received: send false) in the
// session numbered sess, id's bytes not kept; head is idHead(id).
func (q *reorder) request(sess int32, send bool, id []byte, head uint64) {
	if len(id) > pendingID {
		q.seen[reqKey{sess, send, tape.ID(id)}] = true
		return
	}
	if q.recent.find(sess, send, id, head) >= 0 || len(q.seen) > 0 && q.seen[reqKey{sess, send, tape.ID(id)}] {
		return
	}
	if q.recent.n == pendingRecent { // the table full: all of it moves to seen
		for i := range q.recent.slots {
			if e := &q.recent.slots[i]; e.used {
				q.seen[reqKey{e.sess, e.send, tape.ID(e.id())}] = true
			}
		}
		q.recent = pendingTable{}
	}
	q.recent.add(sess, send, id, head)
}

// answered forgets the request id of the session numbered sess sent (or
// received), reporting whether it was noted; head is idHead(id).
func (q *reorder) answered(sess int32, send bool, id []byte, head uint64) bool {
	if len(id) <= pendingID {
		if i := q.recent.find(sess, send, id, head); i >= 0 {
			q.recent.remove(i)
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
// empty, not kept; head its idHead, worked out where the id's bytes are
// at hand) sent or received (dir) at ts by server in session.
func (q *reorder) pair(kind tape.Kind, id []byte, head uint64, dir tape.Dir, ts time.Time, server, session string, r rec) error {
	switch kind {
	case tape.KindRequest:
		sess, send := q.sessNum(server, session), dir == tape.DirSend
		q.request(sess, send, id, head)
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
				q.answered(sess, send, id, head)
				return q.flush(false)
			}
			break
		}
		return q.add(held{r: r})
	case tape.KindResponse:
		sess, send := q.sessNum(server, session), dir != tape.DirSend // the request's direction is the other
		if q.answered(sess, send, id, head) {
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
