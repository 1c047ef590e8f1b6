package library

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkAppendLine re-indexes one line appended to a large tape
// (tape.Synthesize, 200 000 messages, about 330 MB; skipped under -short):
//
//	go test ./internal/library -run '^$' -bench AppendLine -benchtime 20x
//
// Budget: < 50 ms a line (the whole tape was re-read before).
func BenchmarkAppendLine(b *testing.B) {
	if testing.Short() {
		b.Skip("a 330 MB tape: run without -short")
	}
	dir := b.TempDir()
	p := filepath.Join(dir, "big.jsonl")
	f, err := os.Create(p)
	if err != nil {
		b.Fatal(err)
	}
	size, err := tape.Synthesize(f, tape.SynthOptions{Messages: 200_000})
	if err != nil {
		b.Fatal(err)
	}
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "index.db"), DefaultDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	start := time.Now()
	if _, err := l.Refresh(ctx); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	w := tape.NewWriter(f)
	at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	b.ResetTimer()
	for i := range b.N {
		at = at.Add(time.Millisecond)
		if err := w.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"one more line"}}`),
			tape.Meta{Dir: tape.DirRecv, Server: "synth", Time: at}); err != nil {
			b.Fatal(err)
		}
		rep, err := l.Refresh(ctx)
		if err != nil {
			b.Fatal(err)
		}
		if rep.Appended != 1 {
			b.Fatalf("append %d: %+v, want the tape read from its old end", i, rep)
		}
	}
	b.StopTimer()
	f.Close()
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per.Microseconds())/1000, "ms/line")
	b.Logf("tape %d MB: first index %v; one appended line re-indexed in %v (budget 50 ms)", size>>20, first.Round(time.Millisecond), per.Round(100*time.Microsecond))
}
