package export

import (
	"slices"
	"sort"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Streaming a HAR: an entry is written once no message left on the tape
// can change it (the builder's maps no longer hold it: its answer came)
// or start an entry before it (the index knows every message's time).

// sortHAREntries sorts entries in start order (creation order among equal
// starts): the HAR's order.
func sortHAREntries(entries []*harEntry) {
	sort.SliceStable(entries, func(i, j int) bool {
		if !entries[i].start.Equal(entries[j].start) {
			return entries[i].start.Before(entries[j].start)
		}
		return entries[i].order < entries[j].order
	})
}

func (h *harBuilder) setOpen(k int, en *harEntry) {
	if old := h.open[k]; old != nil {
		old.held--
	}
	h.open[k] = en
	en.held++
}

// openRequest keeps request e's entry en open for its answer. A stdio
// request that no message after it answers (none on the tape, or its
// answer recorded before it) stays open as before (flush ends it) but is
// done at once, its comment what flush would make it, so that it holds
// back no entry after it.
func (h *harBuilder) openRequest(e tape.Entry, en *harEntry, hm tape.HTTPMeta) {
	h.setOpen(e.Seq, en)
	if !hm.HTTP && h.x.Pair(e.Seq).Partner < e.Seq {
		en.unanswered = true
		en.held--
		en.Comment += " (no answer on the tape)"
	}
}

func (h *harBuilder) unsetOpen(k int) {
	if en := h.open[k]; en != nil {
		if !en.unanswered {
			en.held--
		}
		delete(h.open, k)
	}
}

func (h *harBuilder) setStream(k int64, en *harEntry) {
	if old := h.streams[k]; old != nil {
		old.held--
	}
	h.streams[k] = en
	en.held++
}

// harBlock is how many messages share an entry of harLaterTimes.
const harBlock = 256

// harLaterTimes returns, for each block of harBlock messages of x, the
// earliest time of the messages from the block's start to the tape's end
// (a zero time, the earliest there is, for a message without one): no
// entry made from those messages starts before it.
func harLaterTimes(x *tape.Index) []time.Time {
	n := x.Len()
	later := make([]time.Time, (n+harBlock-1)/harBlock)
	for k := len(later) - 1; k >= 0; k-- {
		var t time.Time
		has := false
		if k+1 < len(later) {
			t, has = later[k+1], true
		}
		for i := k * harBlock; i < min(n, (k+1)*harBlock); i++ {
			if e := x.Entry(i); !has || e.Time.Before(t) {
				t, has = e.Time, true
			}
		}
		later[k] = t
	}
	return later
}

// emitDone hands emit, in start order, the entries that no message from
// seq on can change or start an entry before (later from harLaterTimes),
// and keeps the others; seq past the last message emits all that no map
// holds. It says false when emit did.
func (h *harBuilder) emitDone(later []time.Time, seq int, emit func([]*harEntry) bool) bool {
	pending := h.entries
	sortHAREntries(pending)
	k := 0
	for k < len(pending) && pending[k].held == 0 {
		if b := seq / harBlock; b < len(later) && later[b].Before(pending[k].start) {
			break // a message left may start an entry before it
		}
		k++
	}
	ok := true
	if k > 0 {
		ok = emit(slices.Clone(pending[:k]))
	}
	h.entries = append(pending[:0], pending[k:]...)
	clear(pending[len(h.entries):])
	h.nextTry = max(harChunk, 2*len(h.entries))
	return ok
}
