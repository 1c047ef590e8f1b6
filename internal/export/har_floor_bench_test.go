//go:build unix

package export

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// BenchmarkHARFloor measures, for each profile, in CPU time and in the
// same run, what any HAR export of the tape must do at least against
// `stats` of it (budget: export --format har ≤ 2x stats):
//
//   - stats: the index (OpenIndex), ComputeStats and AddContextCosts, as
//     tape.Yardstick does: 1 by definition, and at least what an export
//     that pairs, orders and times the messages pays;
//   - reread-x: the tape mapped afresh (the index's mapping is gone) and
//     each message's bytes read once more where the index says they are
//     (one vector pass, bytes.Count of its quotes), one goroutine;
//   - escape-x: the same, each message instead escaped into a JSON string
//     (appendHAREscaped, HAR's own escaping) in a reused buffer, written
//     to /dev/null a MiB at a time: a HAR's bodies, without its entries;
//   - har-x: HAR itself (the index included), to /dev/null.
//
// floor-x is 1 + escape-x: where it passes 2, no HAR export that reads
// the tape again meets the budget on this machine.
//
//	go test ./internal/export -run '^$' -bench 'HARFloor/realistic' -benchtime 3x
func BenchmarkHARFloor(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		b.Run(p.Name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), p.Name+".jsonl")
			if _, err := tape.WriteSynth(path, p.Opts); err != nil {
				b.Fatal(err)
			}
			null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
			if err != nil {
				b.Fatal(err)
			}
			defer null.Close()
			var stats, reread, escape, har time.Duration
			buf := make([]byte, 0, 2<<20)
			for b.Loop() {
				var x *tape.Index
				stats += floorCPU(func() {
					if x, err = tape.OpenIndex(path); err != nil {
						b.Fatal(err)
					}
					st := tape.ComputeStats(x, "")
					tape.AddContextCosts(&st, x)
				})
				quotes := 0
				reread += floorCPU(func() {
					floorMessages(b, x, func(raw []byte) { quotes += bytes.Count(raw, []byte{'"'}) })
				})
				escape += floorCPU(func() {
					floorMessages(b, x, func(raw []byte) {
						buf = append(appendHAREscaped(append(buf, '"'), raw), '"', ',')
						if len(buf) >= 1<<20 {
							if _, err := null.Write(buf); err != nil {
								b.Fatal(err)
							}
							buf = buf[:0]
						}
					})
					if _, err := null.Write(buf); err != nil {
						b.Fatal(err)
					}
					buf = buf[:0]
				})
				x.Close()
				if quotes == 0 {
					b.Fatal("read no quote of the tape's messages")
				}
				har += floorCPU(func() {
					x, err := tape.OpenIndex(path)
					if err != nil {
						b.Fatal(err)
					}
					defer x.Close()
					src := Source{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
					if err := HAR(null, src, "bench"); err != nil {
						b.Fatal(err)
					}
				})
			}
			ratio := func(d time.Duration) float64 { return float64(d) / float64(stats) }
			b.ReportMetric(float64(stats.Milliseconds())/float64(b.N), "stats-cpu-ms")
			b.ReportMetric(ratio(reread), "reread-x")
			b.ReportMetric(ratio(escape), "escape-x")
			b.ReportMetric(1+ratio(escape), "floor-x")
			b.ReportMetric(ratio(har), "har-x")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// floorMessages maps x's tape afresh and calls fn with each message's
// bytes (a batch's messages left out), where the index says they are.
func floorMessages(b *testing.B, x *tape.Index, fn func(raw []byte)) {
	f := x.File()
	st, err := f.Stat()
	if err != nil {
		b.Fatal(err)
	}
	data, unmap, err := mmap.Map(f, 0, st.Size(), mmap.Sequential)
	if err != nil {
		b.Fatal(err)
	}
	defer unmap()
	for i := range x.Len() {
		e, size, _ := x.EntryAt(i)
		if e.Kind == tape.KindInvalid || e.Batch != 0 {
			continue
		}
		fn(data[e.Offset : e.Offset+int64(size)])
	}
}

// floorCPU is the CPU time (user and system, every thread of the
// process) f takes.
func floorCPU(f func()) time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	c0 := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	f()
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) - c0
}
