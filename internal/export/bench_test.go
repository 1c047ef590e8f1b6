package export

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkExport: each export of the two benchmark tapes
// (tape.BenchProfiles: a million small messages; the realistic profile,
// TAPEDECK_BENCH_MESSAGES=1000000 for the 1.9 GB), the index built
// as the command does, in calls a second and as a ratio to `stats` of the
// same bytes (x-stats) and to counting its lines (x-wc-l), measured in the
// same run. Budget: json, har and otlp ≤ 2× stats.
//
//	go test ./internal/export -run '^$' -bench Export -benchtime 3x
func BenchmarkExport(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		path := filepath.Join(b.TempDir(), p.Name+".jsonl")
		if _, err := tape.WriteSynth(path, p.Opts); err != nil {
			b.Fatal(err)
		}
		calls := 0
		for _, f := range []string{"json", "har", "otlp", "html"} {
			b.Run(p.Name+"/"+f, func(b *testing.B) {
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
					src := Source{Name: "t.jsonl", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
					switch f {
					case "json":
						err = JSON(io.Discard, src)
					case "har":
						err = HAR(io.Discard, src, "bench")
					case "html":
						err = HTML(io.Discard, src, "bench")
					case "otlp":
						calls, err = OTLP(context.Background(), io.Discard, src, OTLPOptions{})
					}
					x.Close()
					if err != nil {
						b.Fatal(err)
					}
				}
				per := b.Elapsed() / time.Duration(b.N)
				y.Report(b, b.Elapsed(), b.N)
				if calls > 0 {
					b.ReportMetric(float64(calls)/per.Seconds(), "calls/s")
				}
			})
		}
	}
}
