package record

import (
	"testing"
	"time"
)

// TestShadowQueueGathers: copies made ready one after the other while the
// dispatcher waits are not taken one at a time as each becomes ready, but
// together, gather after the first: one wake-up of the dispatcher for
// them all, in their order.
func TestShadowQueueGathers(t *testing.T) {
	const gather = 200 * time.Millisecond
	q := newShadowQueue(8, time.Minute, gather)
	var tickets []uint64
	for _, m := range []string{"a", "b", "c"} {
		tk, ok := q.push(shadowItem{msg: []byte(m)}, false)
		if !ok {
			t.Fatalf("push %s: the queue refused it", m)
		}
		tickets = append(tickets, tk)
	}
	type popped struct {
		msg string
		at  time.Time
	}
	got := make(chan popped, 3)
	go func() {
		for range 3 {
			it, ok := q.pop()
			if !ok {
				close(got)
				return
			}
			got <- popped{string(it.msg), time.Now()}
		}
	}()
	// The dispatcher parked in pop, waiting for the head (a dispatcher
	// still awake takes a ready copy at once: it needs no wake-up).
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	for _, tk := range tickets {
		q.ready(tk)
	}
	var order string
	var first, last time.Time
	for range 3 {
		select {
		case p, ok := <-got:
			if !ok {
				t.Fatal("pop: the queue ended with copies in it")
			}
			order += p.msg
			if first.IsZero() {
				first = p.at
			}
			last = p.at
		case <-time.After(30 * time.Second):
			t.Fatalf("popped %q in 30 s, expected a, b and c", order)
		}
	}
	if order != "abc" {
		t.Errorf("popped %q, expected the copies in their order: abc", order)
	}
	if d := first.Sub(start); d < gather {
		t.Errorf("the first copy was taken %v after it was made ready, expected no sooner than the gathering (%v)", d, gather)
	}
	if d := last.Sub(first); d >= gather {
		t.Errorf("the last copy was taken %v after the first, expected with it (no second gathering of %v)", d, gather)
	}
	q.close()
	if _, ok := q.pop(); ok {
		t.Error("pop after close on an empty queue: expected false")
	}
}
