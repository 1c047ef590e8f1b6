package library

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
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
// share of the tapes'. BenchmarkSearch looks for a term 10 of the tapes
// hold; BenchmarkList lists 10 000 small tapes.

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
		hits, err := l.Search(Query{Text: needle})
		if err != nil || len(hits) != 10 {
			b.Fatalf("search: %d hits, %v", len(hits), err)
		}
		if err := l.Close(); err != nil {
			b.Fatal(err)
		}
		idx := dbSize(b, db)
		b.ReportMetric(first.Seconds(), "s-first")
		b.ReportMetric(again.Seconds()*1000, "ms-unchanged")
		b.ReportMetric(float64(idx)/float64(size)*100, "%index/tapes")
		b.ReportMetric(float64(rep.Messages)/first.Seconds(), "msgs/s")
		b.Logf("first %v (%d messages, %.0f msgs/s; budget 60s), unchanged %v (budget 1s), index %.1f MB = %.1f%% of %.2f GB of tapes (budget 30%%)",
			first.Round(time.Millisecond), rep.Messages, float64(rep.Messages)/first.Seconds(), again.Round(time.Millisecond),
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
// tape), a refresh after one line appended, and a search, each against
// `stats` of the same bytes in the same run. Budgets: first index ≤ 2x
// stats, one appended line re-indexed in < 50 ms. Here x-stats-cpu
// covers the whole iteration (first index, the one-line refresh, search).
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
			var appended, search time.Duration
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				l, err := Open(Options{Path: filepath.Join(b.TempDir(), "index.db"), DefaultDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if _, err := l.Refresh(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
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
				t0 := time.Now()
				rep, err := l.Refresh(context.Background())
				if err != nil || rep.Indexed != 1 {
					b.Fatalf("refresh after one line: %+v, %v", rep, err)
				}
				appended += time.Since(t0)
				t0 = time.Now()
				if _, err := l.Search(Query{Text: needle}); err != nil {
					b.Fatal(err)
				}
				search += time.Since(t0)
				l.Close()
				b.StartTimer()
			}
			y.Report(b, b.Elapsed(), b.N)
			b.ReportMetric(float64(appended.Milliseconds())/float64(b.N), "ms-one-line")
			b.ReportMetric(float64(appended)/float64(y.Stats), "one-line-x-stats")
			b.ReportMetric(float64(search.Milliseconds())/float64(b.N), "ms-search")
		})
	}
}
