package compare

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// writeTape writes n messages (calls, progress, answers) to path; every
// 10 000th answer says "changed" when changed is set, and one call in
// 50 000 is left out.
func writeTape(b *testing.B, path string, n int, changed bool) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	for i := 0; i < n; i++ {
		ts := t0.Add(time.Duration(i) * time.Millisecond).Format(tape.TimeFormat)
		id := i / 3
		if changed && id%50000 == 7 {
			continue
		}
		switch i % 3 {
		case 0:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":%d}},"_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", id, id, ts)
		case 1:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", ts)
		case 2:
			text := "ok"
			if changed && id%10000 == 0 {
				text = "changed"
			}
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":%q}]},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", id, text, ts)
		}
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
}

// sides indexes the two tapes at once, as tapedeck diff does.
func sides(b *testing.B, pa, pb string) (Side, Side) {
	var sb Side
	var errB error
	done := make(chan struct{})
	go func() { defer close(done); sb, errB = OpenSide(pb) }()
	sa, err := OpenSide(pa)
	<-done
	if err != nil || errB != nil {
		b.Fatal(err, errB)
	}
	return sa, sb
}

// BenchmarkDiff1M: two 1M-message tapes that differ in a few answers and
// calls, indexed and compared; the budget is 5 s and 300 MB. The
// baseline, measured in the same run, is indexing the two tapes alone.
func BenchmarkDiff1M(b *testing.B) {
	dir := b.TempDir()
	pa, pb := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	writeTape(b, pa, 1_000_000, false)
	writeTape(b, pb, 1_000_000, true)
	// The baseline: indexing both tapes, as diff does first (at once).
	start := time.Now()
	sa, sb := sides(b, pa, pb)
	base := time.Since(start)
	sa.Index.Close()
	sb.Index.Close()
	b.ResetTimer()
	var r Report
	for b.Loop() {
		sa, sb := sides(b, pa, pb)
		var err error
		r, err = Compare(sa, sb, Options{LatencyRatio: 1000})
		if err != nil {
			b.Fatal(err)
		}
		sa.Index.Close()
		sb.Index.Close()
	}
	per := b.Elapsed() / time.Duration(b.N)
	if got := len(r.Servers[0].Calls); got != 41 {
		b.Fatalf("%d differences, want 34 changed answers and 7 calls left out (41)", got)
	}
	b.ReportMetric(float64(per)/float64(time.Second), "s/diff")
	b.ReportMetric(float64(per)/float64(5*time.Second), "budget-ratio")
	b.ReportMetric(float64(per)/float64(base), "x-index-only")
	b.ReportMetric(peakRSS(), "peak-RSS-MB")
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
