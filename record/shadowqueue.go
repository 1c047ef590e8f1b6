package record

import (
	"sync"
	"sync/atomic"
	"time"
)

// shadowQueue holds the shadow's copies in the order they were offered,
// each until it is ready (A's answer to it was forwarded to the client)
// or its hold passed; pop takes them in that order. Putting a copy in
// wakes no goroutine unless it is ready and the queue was empty: a held
// copy's dispatcher is woken when the copy at the head becomes ready,
// after the client's exchange, or by the head's timer.
type shadowQueue struct {
	hold time.Duration

	mu     sync.Mutex
	ring   []queued
	head   uint64 // the ticket of the first copy; tickets start at 1
	n      int
	closed bool
	wake   chan struct{} // 1 slot: the head became ready, or the queue closed
	timer  *time.Timer   // the head's hold ends (reset under mu)
	// marks counts the copies whose A answer reached the client (mark):
	// a copy put in after the nth sees n (shadowItem.after).
	marks uint64
}

// shadowOrder is a held copy's place in the client's causal order: when
// A's answer to it reached the client, among the others' (mark). A copy
// the client sent after that answer (shadowItem.after >= at) goes to B
// only once B answered this one (shadow.awaitCause).
type shadowOrder struct {
	ticket uint64
	at     atomic.Uint64 // 0: A's answer not yet forwarded
}

type queued struct {
	it    shadowItem
	at    time.Time // when a held copy was offered
	ready bool
}

func newShadowQueue(size int, hold time.Duration) *shadowQueue {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &shadowQueue{hold: hold, ring: make([]queued, size), head: 1, wake: make(chan struct{}, 1), timer: t}
}

// push puts a copy at the end of the queue, ready or held, and returns
// its ticket; false: the queue is full or closed.
func (q *shadowQueue) push(it shadowItem, ready bool) (uint64, bool) {
	e := queued{it: it, ready: ready}
	if !ready {
		e.at = time.Now()
	}
	q.mu.Lock()
	if q.closed || q.n == len(q.ring) {
		q.mu.Unlock()
		return 0, false
	}
	e.it.after = q.marks
	ticket := q.head + uint64(q.n)
	if e.it.order != nil {
		e.it.order.ticket = ticket
	}
	q.ring[ticket%uint64(len(q.ring))] = e
	q.n++
	first := q.n == 1
	if first && !ready {
		q.timer.Reset(q.hold)
	}
	q.mu.Unlock()
	if first && ready {
		q.signal()
	}
	return ticket, true
}

// ready marks the copy of ticket ready, if it is still waiting.
func (q *shadowQueue) ready(ticket uint64) {
	q.mu.Lock()
	head := false
	if ticket >= q.head && ticket < q.head+uint64(q.n) {
		q.ring[ticket%uint64(len(q.ring))].ready = true
		head = ticket == q.head
	}
	q.mu.Unlock()
	if head {
		q.signal()
	}
}

// mark says A's answer to o's copy is reaching the client: copies put in
// from now on are the client's messages sent after it.
func (q *shadowQueue) mark(o *shadowOrder) {
	q.mu.Lock()
	if o.at.Load() == 0 {
		q.marks++
		o.at.Store(q.marks)
	}
	q.mu.Unlock()
}

func (q *shadowQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// pop returns the first copy once it is ready, its hold passed or the
// queue closed; false: the queue is closed and empty.
func (q *shadowQueue) pop() (shadowItem, bool) {
	for {
		q.mu.Lock()
		if q.n > 0 {
			e := &q.ring[q.head%uint64(len(q.ring))]
			var wait time.Duration
			if !e.ready && !q.closed {
				wait = q.hold - time.Since(e.at)
			}
			if wait <= 0 {
				it := e.it
				*e = queued{}
				q.head++
				q.n--
				q.mu.Unlock()
				return it, true
			}
			q.timer.Reset(wait)
		} else if q.closed {
			q.mu.Unlock()
			return shadowItem{}, false
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-q.timer.C:
		}
	}
}

// close lets pop take what is left at once, then end.
func (q *shadowQueue) close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	q.signal()
}
