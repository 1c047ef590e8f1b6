package compare

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// sides indexes the two tapes as tapedeck diff does: one after the other
// (each index's workers use both cores), their calls' keys and answers'
// hashes computed by the indexes (OpenSideKeyed).
func sides(b *testing.B, pa, pb string, o Options) (Side, Side) {
	k := NewKeys(o)
	sa, err := OpenSideKeyed(pa, k)
	if err != nil {
		b.Fatal(err)
	}
	sb, err := OpenSideKeyed(pb, k)
	if err != nil {
		b.Fatal(err)
	}
	return sa, sb
}

// BenchmarkDiff: two tapes of each benchmark profile (tape.BenchProfiles:
// a million small messages; the realistic profile, TAPEDECK_BENCH_MESSAGES=
// 1000000 for the 1.9 GB) that differ in a few answers (one call in
// 10 000) and calls (one in 50 000 left out), indexed and compared as
// tapedeck diff does, against `stats` of one tape (x-stats) and counting
// its lines (x-wc-l) in the same run. Budget: ≤ 3× stats of one.
//
//	go test ./internal/compare -run '^$' -bench Diff -benchtime 3x
func BenchmarkDiff(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		dir := b.TempDir()
		pa, pb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
		if _, err := tape.WriteSynth(pa, p.Opts); err != nil {
			b.Fatal(err)
		}
		ob := p.Opts
		ob.ChangeEvery, ob.DropEvery = 10_000, 50_000
		if _, err := tape.WriteSynth(pb, ob); err != nil {
			b.Fatal(err)
		}
		b.Run(p.Name, func(b *testing.B) {
			var r Report
			y := tape.Yardstick{Path: pa}
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				o := Options{LatencyRatio: 1000, LatencyAbs: time.Hour}
				sa, sb := sides(b, pa, pb, o)
				var err error
				r, err = Compare(sa, sb, o)
				if err != nil {
					b.Fatal(err)
				}
				sa.Index.Close()
				sb.Index.Close()
			}
			calls := r.Servers[0].CallsA
			want := (calls+9_999)/10_000 + calls/50_000
			if got := r.Differences(); got < want-2 || got > want+2 {
				b.Fatalf("%d differences among %d calls, want about %d (one call in 10 000 changed, one in 50 000 left out)", got, calls, want)
			}
			y.Report(b, b.Elapsed(), b.N)
			b.ReportMetric(peakRSS(), "peak-RSS-MB")
		})
	}
}

func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return float64(ms.Sys) / (1 << 20)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}
