package importer

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// BenchmarkImportFloor measures, for each import format and profile, in
// CPU time and in the same run, what any importer of that source must do
// at least against `stats` of the tape it writes (budget: an import ≤ 2x
// stats of the result):
//
//   - read-x: read the source once (read(2) into one reused buffer,
//     counting its lines; for jaeger, the query API's answer received over
//     HTTP and dropped);
//   - valid-x: check that the source is JSON (jsonscan.Valid, the
//     importers' own validator, on each line or on the whole document),
//     from memory;
//   - write-over-x: write the result's bytes over an existing file of that
//     size (as BenchmarkImport* writes each run's tape over the last);
//   - write-new-x: write them to a new file (what `import -o` does);
//   - import-x: the import itself, written over an existing file.
//
// floor-x is read-x + valid-x + write-new-x, the least `import -o NEW`
// can cost: where it passes 2, no importer of that source meets the
// budget on this machine; floor-over-x is read-x + valid-x +
// write-over-x, the least the import benchmarks' own runs can cost. On
// this machine (a VM whose free memory the host takes back) a new file
// costs 1–6x the same bytes written over a file (perf: the copy into the
// page cache, copy_folio_from_iter_atomic, is 80% of it): its page cache
// is memory touched for the first time.
//
//	go test ./internal/importer -run '^$' -bench 'ImportFloor/.*/realistic' -benchtime 3x
func BenchmarkImportFloor(b *testing.B) {
	formats := []struct {
		name string
		mk   func(tb testing.TB, src, dst string)
	}{
		{"mcpsnoop", snoopLog},
		{"gh-aw", ghawLog},
		{"inspector", inspectorExport},
		{"otlp", otlpExport},
		{"har", harExport},
		{"jaeger", func(tb testing.TB, src, dst string) { jaegerAnswer(tb, src, dst, true) }},
	}
	for _, fm := range formats {
		for _, p := range tape.BenchProfiles() {
			b.Run(fm.name+"/"+p.Name, func(b *testing.B) {
				imp, out, log, url := importBench(b, p, fm.name, fm.mk)
				dir := filepath.Dir(out)
				format := fm.name
				imp(out)
				result, err := os.ReadFile(out)
				if err != nil {
					b.Fatal(err)
				}
				over := filepath.Join(dir, "over.jsonl")
				writeFile(b, over, result, false)
				source, err := os.ReadFile(log)
				if err != nil {
					b.Fatal(err)
				}
				lined := format == "mcpsnoop" || format == "gh-aw" || format == "otlp"
				var stats, read, valid, wnew, wover, im time.Duration
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					stats += cpuOf(func() {
						x, err := tape.OpenIndex(out)
						if err != nil {
							b.Fatal(err)
						}
						st := tape.ComputeStats(x, "")
						tape.AddContextCosts(&st, x)
						x.Close()
					})
					read += cpuOf(func() { readSource(b, log, url) })
					valid += cpuOf(func() { validSource(b, source, lined) })
					fresh := filepath.Join(dir, "new"+strconv.Itoa(i))
					wnew += cpuOf(func() { writeFile(b, fresh, result, true) })
					os.Remove(fresh)
					wover += cpuOf(func() { writeFile(b, over, result, false) })
					im += cpuOf(func() { imp(out) })
				}
				b.StopTimer()
				x := func(d time.Duration) float64 { return float64(d) / float64(stats) }
				b.ReportMetric(float64(stats.Milliseconds())/float64(b.N), "stats-cpu-ms")
				b.ReportMetric(x(read), "read-x")
				b.ReportMetric(x(wover), "write-over-x")
				b.ReportMetric(x(wnew), "write-new-x")
				b.ReportMetric(x(valid), "valid-x")
				b.ReportMetric(x(read+valid+wnew), "floor-x")
				b.ReportMetric(x(read+valid+wover), "floor-over-x")
				b.ReportMetric(x(im), "import-x")
				b.ReportMetric(float64(len(result)>>20), "tape-MiB")
				b.ReportMetric(0, "ns/op")
			})
		}
	}
}

// cpuOf is the CPU time (user and system, every thread of the process)
// f takes.
func cpuOf(f func()) time.Duration {
	c0 := rusageCPU()
	f()
	return rusageCPU() - c0
}

// readSource reads the import's source once: the file through one reused
// buffer, counting its lines, or the Jaeger answer over HTTP from url.
func readSource(b *testing.B, log, url string) {
	buf := make([]byte, 1<<20)
	var in io.ReadCloser
	if url != "" {
		res, err := http.Get(url + "/api/traces?service=bench")
		if err != nil {
			b.Fatal(err)
		}
		in = res.Body
	} else {
		f, err := os.Open(log)
		if err != nil {
			b.Fatal(err)
		}
		in = f
	}
	defer in.Close()
	n := 0
	for {
		k, err := in.Read(buf)
		n += bytes.Count(buf[:k], []byte{'\n'})
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
	}
}

// validSource checks the source is JSON: each line of it, or the whole.
func validSource(b *testing.B, source []byte, lined bool) {
	if !lined {
		if !jsonscan.Valid(source) {
			b.Fatal("the source is not JSON")
		}
		return
	}
	for rest := source; len(rest) > 0; {
		line := rest
		if i := bytes.IndexByte(rest, '\n'); i >= 0 {
			line, rest = rest[:i], rest[i+1:]
		} else {
			rest = nil
		}
		if len(line) > 0 && !jsonscan.Valid(line) {
			b.Fatalf("a line of the source is not JSON: %.80s", line)
		}
	}
}

// writeFile writes data to path in 1 MiB writes: a new file (exclusive),
// or over the file there.
func writeFile(b *testing.B, path string, data []byte, fresh bool) {
	flag := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	if fresh {
		flag = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	for len(data) > 0 {
		k := min(len(data), 1<<20)
		if _, err := f.Write(data[:k]); err != nil {
			b.Fatal(err)
		}
		data = data[k:]
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// rusageCPU is the process's user and system CPU time so far.
func rusageCPU() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
