package importer

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// snoopLog writes the messages of the tape at src as an mcpsnoop session
// log (one envelope a line, nanosecond times) to dst.
func snoopLog(tb testing.TB, src, dst string) {
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	f, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	rd := tape.NewReader(in)
	var b []byte
	for seq := 1; ; seq++ {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			tb.Fatal(err)
		}
		if !e.IsWire() {
			continue
		}
		dir := "c2s"
		if e.Dir == tape.DirRecv {
			dir = "s2c"
		}
		b = append(b[:0], `{"session_id":"s1","server_label":"`...)
		b = append(b, e.Server...)
		b = append(b, `","seq":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `,"ts":"`...)
		b = e.Time.Add(time.Duration(seq%1000)*time.Microsecond).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","direction":"`...)
		b = append(b, dir...)
		b = append(b, `","transport":"stdio","raw":`...)
		b = append(b, tape.StripMeta(e.Raw)...)
		b = append(b, "}\n"...)
		w.Write(b)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// BenchmarkImportMCPSnoop: import --from mcpsnoop of a log made from each
// benchmark tape (tape.BenchProfiles), against `stats` of the tape it
// writes, in the same run. Budget: ≤ 2x stats of the result.
//
//	go test ./internal/importer -run '^$' -bench ImportMCPSnoop -benchtime 3x
func BenchmarkImportMCPSnoop(b *testing.B) {
	for _, p := range tape.BenchProfiles() {
		dir := b.TempDir()
		src, log, out := filepath.Join(dir, "src.jsonl"), filepath.Join(dir, "snoop.jsonl"), filepath.Join(dir, "out.jsonl")
		if _, err := tape.WriteSynth(src, p.Opts); err != nil {
			b.Fatal(err)
		}
		snoopLog(b, src, log)
		os.Remove(src)
		imp := func(b *testing.B) {
			in, err := os.Open(log)
			if err != nil {
				b.Fatal(err)
			}
			defer in.Close()
			f, err := os.Create(out)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := Import("mcpsnoop", in, f, Options{}); err != nil {
				b.Fatal(err)
			}
			if err := f.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(p.Name, func(b *testing.B) {
			imp(b) // the tape stats is timed on
			y := tape.Yardstick{Path: out}
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				imp(b)
			}
			y.Report(b, b.Elapsed(), b.N)
		})
	}
}
