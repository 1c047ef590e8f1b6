package check

import (
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkCheck: tapedeck check of each benchmark tape (tape.BenchProfiles)
// with a baseline of its own definitions, the index built as the command
// does, against `stats` of the same bytes in the same run.
//
//	go test ./internal/check -run '^$' -bench Check -benchtime 3x
func BenchmarkCheck(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		path := filepath.Join(b.TempDir(), p.Name+".jsonl")
		if _, err := tape.WriteSynth(path, p.Opts); err != nil {
			b.Fatal(err)
		}
		b.Run(p.Name, func(b *testing.B) {
			y := tape.Yardstick{Path: path}
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				x, err := tape.OpenIndex(path)
				if err != nil {
					b.Fatal(err)
				}
				base := NewBaseline(x)
				mustTape(b, "t.jsonl", x, Options{FailOn: []string{"error"}, ExpectTools: []string{"echo", "search"}, Baseline: &base})
				x.Close()
			}
			y.Report(b, b.Elapsed(), b.N)
		})
	}
}
