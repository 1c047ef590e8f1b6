package tape

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStats: what tapedeck stats does on each benchmark tape
// (BenchProfiles), against counting its lines (x-wc-l; budget: 4x) in the
// same run; x-stats is 1 by definition, a check that the yardstick is the
// same work.
//
//	go test ./tape -run '^$' -bench 'Stats$' -benchtime 3x
func BenchmarkStats(b *testing.B) {
	for _, p := range BenchProfiles() {
		path := filepath.Join(b.TempDir(), p.Name+".jsonl")
		if _, err := WriteSynth(path, p.Opts); err != nil {
			b.Fatal(err)
		}
		b.Run(p.Name, func(b *testing.B) {
			y := Yardstick{Path: path}
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				x, err := OpenIndex(path)
				if err != nil {
					b.Fatal(err)
				}
				st := ComputeStats(x, "")
				AddContextCosts(&st, x)
				x.Close()
			}
			y.Report(b, b.Elapsed(), b.N)
			b.ReportMetric(float64(b.Elapsed()/time.Duration(b.N))/float64(time.Millisecond), "ms")
		})
	}
}
