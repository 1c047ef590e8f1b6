package tape

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// TestMergeRuns checks that merging sorted runs gives what sorting their
// concatenation gives, for any number of runs (empty ones among them):
// a server's total latencies are merged from its methods' sorted ones.
func TestMergeRuns(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		var ls []time.Duration
		var runs []int
		for range r.IntN(9) {
			run := make([]time.Duration, r.IntN(20))
			for i := range run {
				run[i] = time.Duration(r.IntN(50) - 10)
			}
			slices.Sort(run)
			ls = append(ls, run...)
			runs = append(runs, len(run))
		}
		want := slices.Sorted(slices.Values(ls))
		got := mergeRuns(slices.Clone(ls), runs)
		if !slices.Equal(got, want) {
			t.Fatalf("trial %d, runs %v: merged %v, expected %v", trial, runs, got, want)
		}
	}
}
