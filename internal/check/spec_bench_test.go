package check

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkSpecVsStats times what `tapedeck check --spec` does (index,
// then every check and spec rule) against what `tapedeck stats` does
// (index, then ComputeStats) on a synthetic tape of 200,000 messages and on
// each bulk benchmark tape (tape.BenchProfiles: small, and the realistic
// one issue 26's budget names; TAPEDECK_BENCH_MESSAGES=1000000 for its 1M
// size), and reports the ratio (budget: 3), the best of 3 runs each. Run:
// go test ./internal/check -run '^$' -bench SpecVsStats -benchtime 1x.
func BenchmarkSpecVsStats(b *testing.B) {
	synth := filepath.Join(b.TempDir(), "synth.jsonl")
	f, err := os.Create(synth)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tape.Synthesize(f, tape.SynthOptions{Messages: 200_000, Seed: 1, Servers: []string{"a", "b"}}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	b.Run("synth200k", func(b *testing.B) { specVsStats(b, synth) })
	for _, p := range tape.BenchProfiles() {
		path := filepath.Join(b.TempDir(), p.Name+".jsonl")
		if _, err := tape.WriteSynth(path, p.Opts); err != nil {
			b.Fatal(err)
		}
		b.Run(p.Name, func(b *testing.B) { specVsStats(b, path) })
	}
}

func specVsStats(b *testing.B, path string) {
	best := func(run func(x *tape.Index)) time.Duration {
		d := time.Duration(1 << 62)
		for range 3 {
			start := time.Now()
			x, err := tape.OpenIndex(path)
			if err != nil {
				b.Fatal(err)
			}
			run(x)
			x.Close()
			d = min(d, time.Since(start))
		}
		return d
	}
	b.ResetTimer()
	for range b.N {
		stats := best(func(x *tape.Index) { tape.ComputeStats(x, "") })
		plain := best(func(x *tape.Index) { mustTape(b, path, x, Options{FailOn: DefaultFailOn}) })
		findings := 0
		spec := best(func(x *tape.Index) {
			findings = len(mustTape(b, path, x, Options{Spec: true, FailOn: DefaultFailOn}))
		})
		ratio := float64(spec) / float64(stats)
		b.ReportMetric(ratio, "spec/stats")
		b.ReportMetric(float64(plain)/float64(stats), "check/stats")
		b.Logf("%s: stats %s, check %s, check --spec %s (%d findings): %.2f× stats (budget 3×)", filepath.Base(path), stats, plain, spec, findings, ratio)
		if ratio > 3 {
			b.Errorf("check --spec took %.2f× stats, over the 3× budget", ratio)
		}
	}
}
