package export

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkExport1M: the JSON and OTLP exports of a 1M-message tape
// (333 334 calls), its index built beforehand, in calls a second; the
// baseline in the same run is reading the tape's calls alone
// (tape.ReadCalls). The budget: 200 000 calls a second.
func BenchmarkExport1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	t0 := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	for i := 0; i < 1_000_000; i++ {
		ts := t0.Add(time.Duration(i) * time.Millisecond).Format(tape.TimeFormat)
		id := i / 3
		switch i % 3 {
		case 0:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"n":%d}},"_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", id, id, ts)
		case 1:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", ts)
		case 2:
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"ok"}]},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", id, ts)
		}
	}
	w.Flush()
	f.Close()
	x, err := tape.OpenIndex(path)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	src := Source{Name: "big.jsonl", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	const calls = 333_334
	start := time.Now()
	r, _ := src.Open()
	n := 0
	tape.ReadCalls(r, x, "", func(tape.Call) error { n++; return nil })
	r.Close()
	read := time.Since(start)
	if n != calls {
		b.Fatalf("%d calls", n)
	}
	for _, format := range []string{"json", "otlp"} {
		b.Run(format, func(b *testing.B) {
			for b.Loop() {
				var err error
				if format == "json" {
					err = JSON(io.Discard, src)
				} else {
					_, err = OTLP(context.Background(), io.Discard, src, OTLPOptions{})
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(calls/per.Seconds(), "calls/s")
			b.ReportMetric(calls/per.Seconds()/200_000, "x-budget")
			b.ReportMetric(float64(per)/float64(read), "x-read-calls")
		})
	}
}
