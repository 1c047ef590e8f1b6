package tape

import (
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkStats: what tapedeck stats does on each benchmark tape
// (BenchProfiles), against counting its lines (x-wc-l; budget: 4x) in the
// same run; x-stats is 1 by definition, a check that the yardstick is the
// same work. x-wc-l-cpu is the ratio of CPU times (stats on 2 cores may
// take more CPU than wall time; other load leaves CPU time alone).
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
			var workCPU, linesCPU time.Duration
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				c0 := processCPU()
				for range 3 { // three, for the CPU clock's 10 ms ticks
					if _, _, err := countLines(path); err != nil {
						b.Fatal(err)
					}
				}
				c := processCPU() - c0
				linesCPU += c / 3
				y.measureCPU += c // not the work's: out of x-stats-cpu
				b.StartTimer()
				c0 = processCPU()
				x, err := OpenIndex(path)
				if err != nil {
					b.Fatal(err)
				}
				st := ComputeStats(x, "")
				AddContextCosts(&st, x)
				x.Close()
				workCPU += processCPU() - c0
			}
			y.Report(b, b.Elapsed(), b.N)
			if linesCPU > 0 {
				b.ReportMetric(float64(workCPU)/float64(linesCPU), "x-wc-l-cpu")
			}
			b.ReportMetric(float64(b.Elapsed()/time.Duration(b.N))/float64(time.Millisecond), "ms")
		})
	}
}
