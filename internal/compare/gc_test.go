package compare

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestGCPolicySwitches: GCPolicy starts with GOGC off under gcLimit and, once
// a collection finds more live than gcLimit/1.35, runs at GOGC=35 with no
// limit (so the collector never runs harder than GOGC=35 would).
func TestGCPolicySwitches(t *testing.T) {
	oldPercent := debug.SetGCPercent(100)
	oldLimit := debug.SetMemoryLimit(-1)
	oldGCLimit := gcLimit
	t.Cleanup(func() {
		gcLimit = oldGCLimit
		debug.SetGCPercent(oldPercent)
		debug.SetMemoryLimit(oldLimit)
	})
	percent := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }

	gcLimit = 1 << 40 // far above this test's heap: no switch
	GCPolicy()
	if p, l := percent(), debug.SetMemoryLimit(-1); p != -1 || l != gcLimit {
		t.Fatalf("after GCPolicy: GOGC=%d, limit %d; want -1 (off) and %d", p, l, gcLimit)
	}
	runtime.GC()
	runtime.GC()
	time.Sleep(20 * time.Millisecond)
	if p := percent(); p != -1 {
		t.Fatalf("small live heap: GOGC=%d after a collection, want -1 (off) still", p)
	}

	// A live heap above the (lowered) limit's 1/1.35: the next collection's
	// watch drops the limit and sets GOGC=35.
	gcLimit = 32 << 20
	GCPolicy()
	live := make([]byte, 40<<20)
	for i := range live {
		live[i] = byte(i)
	}
	deadline := time.Now().Add(5 * time.Second)
	for percent() != gcLatePercent && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(live)
	if p, l := percent(), debug.SetMemoryLimit(-1); p != gcLatePercent || l != math.MaxInt64 {
		t.Fatalf("live heap 40 MiB over a 32 MiB limit: GOGC=%d, limit %d; want %d and no limit", p, l, gcLatePercent)
	}
}
