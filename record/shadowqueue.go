package record

import (
	"sync"
	"time"
)

// shadowQueue holds the shadow's copies in the order they were offered,
// each until it is ready (A's answer to it was forwarded to the client)
// or its hold passed; pop takes them in that order. Putting a copy in
// wakes no goroutine unless it is ready and the queue was empty: a held
// copy's dispatcher is woken by the queue's timer, gather after the copy
// at the head became ready (after the client's exchange), or when the
// head's hold ends. Gathering the released copies for a moment wakes the
// dispatcher (and the lane it hands them to) once for the copies released
// meanwhile rather than once a copy.
type shadowQueue struct {
	hold   time.Duration
	gather time.Duration // 0: a copy made ready wakes the dispatcher at once

	mu     sync.Mutex
	ring   []queued
	head   uint64 // the ticket of the first copy; tickets start at 1
	n      int
	closed bool
	wake   chan struct{} // 1 slot: a ready copy was put in an empty queue, or the queue closed
	timer  *time.Timer   // the head's hold ends, or its gathering (reset under mu)
	due    time.Time     // when timer fires; zero: not armed
}

type queued struct {
	it    shadowItem
	at    time.Time // when a held copy was offered
	ready bool
}

func newShadowQueue(size int, hold, gather time.Duration) *shadowQueue {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &shadowQueue{hold: hold, gather: gather, ring: make([]queued, size), head: 1, wake: make(chan struct{}, 1), timer: t}
}

// arm makes the timer fire no later than d from now; q.mu is held.
func (q *shadowQueue) arm(d time.Duration) {
	at := time.Now().Add(d)
	if q.due.IsZero() || at.Before(q.due) {
		q.timer.Reset(d)
		q.due = at
	}
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
	ticket := q.head + uint64(q.n)
	q.ring[ticket%uint64(len(q.ring))] = e
	q.n++
	first := q.n == 1
	if first && !ready {
		q.arm(q.hold)
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
	if head && q.gather > 0 {
		q.arm(q.gather)
		head = false
	}
	q.mu.Unlock()
	if head {
		q.signal()
	}
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
			q.arm(wait)
		} else if q.closed {
			q.mu.Unlock()
			return shadowItem{}, false
		}
		q.mu.Unlock()
		select {
		case <-q.wake:
		case <-q.timer.C:
			q.mu.Lock()
			q.due = time.Time{}
			q.mu.Unlock()
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
