package library

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// The large benchmarks (skipped under -short):
//
//	go test ./internal/library -run '^$' -bench . -benchtime 1x
//
// BenchmarkIndex1M indexes 1 000 synthetic tapes of 1 000 messages each
// (tape.Synthesize, about 1.5 GB) into a fresh index, then refreshes it
// with nothing changed; it reports both times and the index's size as a
// share of the tapes', and the first search, which indexes the text.
// BenchmarkSearch looks for a term 10 of the tapes hold, in an index whose
// text is indexed (it logs what the first search cost); BenchmarkList lists 10 000 small tapes.

const needle = "zanzibarquokka"

// synthDir writes n tapes of msgs messages each into dir; every
// hundredth tape also gets a call whose arguments hold needle.
func synthDir(tb testing.TB, dir string, n, msgs int) int64 {
	tb.Helper()
	var total int64
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("synth-%05d.jsonl", i))
		f, err := os.Create(p)
		if err != nil {
			tb.Fatal(err)
		}
		w, err := tape.Synthesize(f, tape.SynthOptions{Messages: msgs, Seed: uint64(i), Servers: []string{fmt.Sprintf("server%d", i%7)}, Start: start.Add(time.Duration(i) * time.Minute)})
		if err != nil {
			tb.Fatal(err)
		}
		total += w
		if i%100 == 0 {
			tw := tape.NewWriter(f)
			at := start.Add(time.Duration(i)*time.Minute + time.Hour)
			m1 := []byte(`{"jsonrpc":"2.0","id":"needle","method":"tools/call","params":{"name":"search","arguments":{"query":"where is the ` + needle + `"}}}`)
			m2 := []byte(`{"jsonrpc":"2.0","id":"needle","result":{"content":[{"type":"text","text":"not found"}],"isError":true}}`)
			if err := tw.Write(m1, tape.Meta{Dir: tape.DirSend, Server: "needle", Time: at}); err != nil {
				tb.Fatal(err)
			}
			if err := tw.Write(m2, tape.Meta{Dir: tape.DirRecv, Server: "needle", Time: at.Add(time.Millisecond)}); err != nil {
				tb.Fatal(err)
			}
		}
		st, _ := f.Stat()
		total += st.Size() - w
		if err := f.Close(); err != nil {
			tb.Fatal(err)
		}
	}
	return total
}

func dbSize(tb testing.TB, path string) int64 {
	var n int64
	for _, s := range []string{"", "-wal"} {
		if st, err := os.Stat(path + s); err == nil {
			n += st.Size()
		}
	}
	return n
}

func BenchmarkIndex1M(b *testing.B) {
	if testing.Short() {
		b.Skip("1 000 tapes, 1 000 000 messages: run without -short")
	}
	tapes := b.TempDir()
	start := time.Now()
	size := synthDir(b, tapes, 1000, 1000)
	b.Logf("wrote 1 000 tapes, %.2f GB, in %v", float64(size)/1e9, time.Since(start).Round(time.Millisecond))
	b.ResetTimer()
	for i := range b.N {
		state := filepath.Join(b.TempDir(), fmt.Sprint(i))
		db := filepath.Join(state, "index.db")
		l, err := Open(Options{Path: db, DefaultDir: tapes})
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		rep, err := l.Refresh(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		first := time.Since(t0)
		if rep.Indexed != 1000 || rep.Messages < 1_000_000 {
			b.Fatalf("indexed %+v", rep)
		}
		t1 := time.Now()
		rep2, err := l.Refresh(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		again := time.Since(t1)
		if rep2.Indexed != 0 {
			b.Fatalf("second refresh indexed %+v", rep2)
		}
		t2 := time.Now()
		hits, err := l.Search(Query{Text: needle}) // indexes the text
		if err != nil || len(hits) != 10 {
			b.Fatalf("search: %d hits, %v", len(hits), err)
		}
		firstSearch := time.Since(t2)
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		idx := dbSize(b, db)
		b.ReportMetric(first.Seconds(), "s-first")
		b.ReportMetric(again.Seconds()*1000, "ms-unchanged")
		b.ReportMetric(float64(idx)/float64(size)*100, "%index/tapes")
		b.ReportMetric(float64(rep.Messages)/first.Seconds(), "msgs/s")
		b.ReportMetric(firstSearch.Seconds(), "s-first-search")
		b.Logf("first %v (%d messages, %.0f msgs/s; budget 60s), first search (the text) %v, unchanged %v (budget 1s), index %.1f MB = %.1f%% of %.2f GB of tapes (budget 30%%)",
			first.Round(time.Millisecond), rep.Messages, float64(rep.Messages)/first.Seconds(), firstSearch.Round(time.Millisecond), again.Round(time.Millisecond),
			float64(idx)/1e6, float64(idx)/float64(size)*100, float64(size)/1e9)
	}
}

func BenchmarkSearch(b *testing.B) {
	if testing.Short() {
		b.Skip("1 000 tapes: run without -short")
	}
	tapes := b.TempDir()
	synthDir(b, tapes, 1000, 1000)
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "index.db"), DefaultDir: tapes})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	// The first search indexes the text; the budget is for an indexed
	// library.
	t0 := time.Now()
	if hits, err := l.Search(Query{Text: needle}); err != nil || len(hits) != 10 {
		b.Fatalf("first search: %d hits, %v", len(hits), err)
	}
	b.Logf("first search (indexes the text of 1 000 000 messages): %v", time.Since(t0).Round(time.Millisecond))
	for _, bc := range []struct {
		name string
		q    Query
		want int
	}{
		{"term", Query{Text: needle}, 10},
		{"term+filters", Query{Text: needle, Tool: "search", Status: "error"}, 10},
		{"prefix", Query{Text: "zanzibar*"}, 10},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				// What tapedeck search does: refresh (nothing changed), query, snippets.
				if _, err := l.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				hits, err := l.Search(bc.q)
				if err != nil || len(hits) != bc.want {
					b.Fatalf("%d hits, %v", len(hits), err)
				}
				if !strings.Contains(hits[0].Snippet, "»zanzibar") {
					b.Fatalf("snippet %q", hits[0].Snippet)
				}
			}
		})
	}
}

func BenchmarkList10k(b *testing.B) {
	if testing.Short() {
		b.Skip("10 000 tapes: run without -short")
	}
	tapes := b.TempDir()
	synthDir(b, tapes, 10_000, 20)
	l, err := Open(Options{Path: filepath.Join(b.TempDir(), "index.db"), DefaultDir: tapes})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	if _, err := l.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		// What tapedeck ls does: refresh (nothing changed), list.
		if _, err := l.Refresh(context.Background()); err != nil {
			b.Fatal(err)
		}
		ts, err := l.Tapes()
		if err != nil || len(ts) != 10_000 {
			b.Fatalf("%d tapes, %v", len(ts), err)
		}
	}
}

// BenchmarkBigTape: the library with one big tape of each benchmark
// profile (tape.BenchProfiles): the first index (tapedeck ls on a new
// tape: facts only), the first search after it (which indexes the text),
// a refresh after one line appended and a search after it (the new
// line's text), each against `stats` of the same bytes in the same run.
// Budgets: first index ≤ 2x stats, one appended line re-indexed in
// < 50 ms. x-stats is the first index's wall time; x-stats-cpu covers
// the whole iteration; index-/text-x-stats-cpu are the first index's and
// the text pass's CPU time over that of a stats run (getrusage).
//
//	go test ./internal/library -run '^$' -bench BigTape -benchtime 1x
func BenchmarkBigTape(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		dir := b.TempDir()
		path := filepath.Join(dir, p.Name+".jsonl")
		if _, err := tape.WriteSynth(path, p.Opts); err != nil {
			b.Fatal(err)
		}
		b.Run(p.Name, func(b *testing.B) {
			y := tape.Yardstick{Path: path}
			var appended, search, text time.Duration
			var statsCPU, indexCPU, textCPU time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				c0 := cpuTime()
				x, err := tape.OpenIndex(path)
				if err != nil {
					b.Fatal(err)
				}
				st := tape.ComputeStats(x, "")
				tape.AddContextCosts(&st, x)
				x.Close()
				statsCPU += cpuTime() - c0
				l, err := Open(Options{Path: filepath.Join(b.TempDir(), "index.db"), DefaultDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				c0 = cpuTime()
				b.StartTimer()
				if _, err := l.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				indexCPU += cpuTime() - c0
				c0 = cpuTime()
				t0 := time.Now()
				if _, err := l.Search(Query{Text: "wombat"}); err != nil {
					b.Fatal(err)
				}
				text += time.Since(t0)
				textCPU += cpuTime() - c0
				f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
				if err != nil {
					b.Fatal(err)
				}
				tw := tape.NewWriter(f)
				at := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second)
				if err := tw.Write([]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"`+needle+`"}}`), tape.Meta{Dir: tape.DirRecv, Server: "synth", Time: at}); err != nil {
					b.Fatal(err)
				}
				f.Close()
				t0 = time.Now()
				rep, err := l.Refresh(context.Background())
				if err != nil || rep.Indexed != 1 {
					b.Fatalf("refresh after one line: %+v, %v", rep, err)
				}
				appended += time.Since(t0)
				t0 = time.Now()
				if hits, err := l.Search(Query{Text: needle}); err != nil || len(hits) == 0 || !hits[0].Time.Equal(at) {
					b.Fatalf("search after one line: %v, %v; want the line of %v first", hits, err, at)
				}
				search += time.Since(t0)
				l.Close()
				b.StartTimer()
			}
			y.Report(b, b.Elapsed(), b.N)
			b.ReportMetric(float64(indexCPU)/float64(statsCPU), "index-x-stats-cpu")
			b.ReportMetric(float64(text)/float64(y.Stats), "text-x-stats")
			b.ReportMetric(float64(textCPU)/float64(statsCPU), "text-x-stats-cpu")
			b.ReportMetric(float64(appended.Milliseconds())/float64(b.N), "ms-one-line")
			b.ReportMetric(float64(appended)/float64(y.Stats), "one-line-x-stats")
			b.ReportMetric(float64(search.Milliseconds())/float64(b.N), "ms-search-after-line")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
