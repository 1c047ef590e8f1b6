package compare

import (
	"math"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
)

// A comparison holds two tapes' indexes and calls at once. Under Go's
// default policy (the heap grows to twice what was live at the last
// collection) two realistic 1M-message tapes would need twice their live
// heap; diff used to run the collector at GOGC=35 throughout, which costs
// a collection each time the heap grows by a third, even while it is a few
// megabytes (~35 ms CPU of a 100 000-message diff's ~380 ms).
//
// GCPolicy leaves the collector off under a heap limit (Go collects when
// the process's memory reaches it), until a collection finds the live heap
// large enough that the limit would leave less room than GOGC=35 does:
// from then on GOGC=35 with no limit, the policy diff had before. So the
// collector never runs more often than GOGC=35 would make it (no cliff
// when a larger pair of tapes' live heap passes the limit: the limit is
// gone by then), and the heap's peak is at most the larger of the limit
// and GOGC=35's. A diff whose allocations stay under the limit (two
// 100 000-message tapes: ~120 MB RSS) collects nothing.
var (
	// gcLimit is the heap limit while the live heap is small: two
	// realistic 1M-message tapes peak at 386-418 MB RSS under GOGC=35.
	// A variable for the tests.
	gcLimit int64 = 256 << 20
)

// gcLatePercent is GOGC once the live heap passes gcLimit/1.35 (less an
// eighth of the limit for the memory that is not heap: the limit counts
// all the runtime's).
const gcLatePercent = 35

// GCPolicy sets the collector's policy for a comparison of large tapes
// (see gcLimit); the process's own setting (GOGC in the environment) is
// the caller's to honour, by not calling it.
func GCPolicy() {
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(gcLimit)
	armGCWatch()
}

// gcSentinel is garbage from the moment it is made: its finalizer runs
// after each collection that finds it, and makes it reachable again until
// the policy has switched (the runtime's own idiom for a per-GC callback).
type gcSentinel struct {
	_ *int // a pointer, so that the tiny allocator does not batch it
	_ [16]byte
}

func armGCWatch() {
	runtime.SetFinalizer(&gcSentinel{}, gcWatch)
}

var liveSample = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// gcWatch runs after a collection: when what it found live would have
// less than GOGC=35's room under the limit, the limit goes and GOGC=35
// comes back; otherwise it waits for the next collection.
func gcWatch(s *gcSentinel) {
	metrics.Read(liveSample)
	if liveSample[0].Value.Kind() == metrics.KindUint64 {
		live := liveSample[0].Value.Uint64()
		if live*(100+gcLatePercent)/100 >= uint64(gcLimit-gcLimit/8) {
			debug.SetGCPercent(gcLatePercent)
			debug.SetMemoryLimit(math.MaxInt64)
			return
		}
	}
	runtime.SetFinalizer(s, gcWatch)
}
