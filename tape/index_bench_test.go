package tape

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchTape returns a synthetic tape of n messages, made once and kept in the
// temp dir across runs (it is large: about 1.7 KB a message).
func benchTape(b *testing.B, n int) (string, int64) {
	b.Helper()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("tapedeck-bench-%d-v1.jsonl", n))
	if st, err := os.Stat(path); err == nil && st.Size() > 0 {
		return path, st.Size()
	}
	f, err := os.Create(path + ".tmp")
	if err != nil {
		b.Fatal(err)
	}
	size, err := Synthesize(f, SynthOptions{Messages: n, Seed: 1})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path, size
}

// wcLines times `wc -l` on path: the baseline the index build is held to.
func wcLines(b *testing.B, path string) time.Duration {
	b.Helper()
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		out, err := exec.Command("wc", "-l", path).Output()
		if err != nil {
			b.Fatalf("wc -l: %v", err)
		}
		if d := time.Since(start); d < best {
			best = d
		}
		if _, err := strconv.Atoi(strings.Fields(string(out))[0]); err != nil {
			b.Fatalf("wc -l printed %q", out)
		}
	}
	return best
}

// peakRSS reads the process's high-water resident set (VmHWM), in MiB.
func peakRSS() float64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			kb, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

func benchmarkIndex(b *testing.B, n int) {
	path, size := benchTape(b, n)
	wc := wcLines(b, path) // also warms the page cache for both
	var x *Index
	var heapPerMsg float64
	b.SetBytes(size)
	b.ResetTimer()
	var best time.Duration = 1 << 62
	for range b.N {
		if x != nil {
			x.Close()
		}
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		var err error
		x, err = OpenIndex(path)
		if err != nil {
			b.Fatal(err)
		}
		if d := time.Since(start); d < best {
			best = d
		}
		b.StopTimer()
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		heapPerMsg = float64(after.HeapAlloc-before.HeapAlloc) / float64(x.Len())
		b.StartTimer()
	}
	b.StopTimer()
	if x.Len() != n {
		b.Fatalf("indexed %d messages, want %d", x.Len(), n)
	}
	start := time.Now()
	st := ComputeStats(x, "")
	statsTime := time.Since(start)
	if st.Messages != n {
		b.Fatalf("stats counted %d messages, want %d", st.Messages, n)
	}
	x.Close()
	b.ReportMetric(float64(best)/float64(wc), "x_wc-l")
	b.ReportMetric(float64(wc.Milliseconds()), "wc-l_ms")
	b.ReportMetric(float64(size)/1e6/best.Seconds(), "MB/s_best")
	b.ReportMetric(heapPerMsg, "index_B/msg")
	b.ReportMetric(peakRSS(), "peakRSS_MiB")
	b.ReportMetric(float64((best + statsTime).Milliseconds()), "stats_total_ms")
}

// BenchmarkIndex100k indexes a 100 000-message synthetic tape (~170 MB).
func BenchmarkIndex100k(b *testing.B) { benchmarkIndex(b, 100_000) }

// BenchmarkIndex1M indexes a 1 000 000-message synthetic tape (~1.7 GB,
// made once in the temp dir): the target is within 4x of wc -l,
// under 100 bytes of index a message, and stats in under 3 s.
func BenchmarkIndex1M(b *testing.B) { benchmarkIndex(b, 1_000_000) }
