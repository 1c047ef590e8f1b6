package importer

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/export"
	"github.com/tapedeck/tapedeck/tape"
)

// snoopLog writes the messages of the tape at src as an mcpsnoop session
// log (one envelope a line, nanosecond times) to dst.
func snoopLog(tb testing.TB, src, dst string) {
	writeBenchFile(tb, dst, func(w *bufio.Writer) {
		var b []byte
		eachWire(tb, src, func(seq int, e tape.Entry) {
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
		})
	})
}

// writeBenchFile creates dst and has fill write it through one buffer.
func writeBenchFile(tb testing.TB, dst string, fill func(w *bufio.Writer)) {
	f, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	fill(w)
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkImportMCPSnoop: import --from mcpsnoop of a log made from each
// benchmark tape (tape.BenchProfiles), against `stats` of the tape it
// writes, in the same run. Budget: ≤ 2x stats of the result.
//
//	go test ./internal/importer -run '^$' -bench ImportMCPSnoop -benchtime 3x
func BenchmarkImportMCPSnoop(b *testing.B) { benchImport(b, "mcpsnoop", snoopLog) }

// BenchmarkImportGHAW: import --from gh-aw of an rpc-messages.jsonl made
// from each benchmark tape, against `stats` of the result (budget 2x).
func BenchmarkImportGHAW(b *testing.B) { benchImport(b, "gh-aw", ghawLog) }

// BenchmarkImportInspector: import --from inspector of a history export
// made from each benchmark tape (one entry a message, answers unfolded),
// against `stats` of the result (budget 2x).
func BenchmarkImportInspector(b *testing.B) { benchImport(b, "inspector", inspectorExport) }

// BenchmarkImportOTLP: import --from otlp of `export --format otlp
// --with-bodies` of each benchmark tape (the tape carried whole in span
// events), against `stats` of the result (budget 2x).
func BenchmarkImportOTLP(b *testing.B) { benchImport(b, "otlp", otlpExport) }

// BenchmarkImportHAR: import --from har of `export --format har` of each
// benchmark tape (stdio://SERVER/ entries), against `stats` of the result
// (budget 2x).
func BenchmarkImportHAR(b *testing.B) { benchImport(b, "har", harExport) }

// BenchmarkImportJaeger: import --from jaeger of Jaeger's query API answer
// (served by a local HTTP server) holding the spans of `export --format
// otlp --with-bodies` of each benchmark tape, against `stats` of the
// result (budget 2x).
func BenchmarkImportJaeger(b *testing.B) {
	benchImport(b, "jaeger", func(tb testing.TB, src, dst string) { jaegerAnswer(tb, src, dst, true) })
}

// benchImport times importing format from a source made by mk from each
// benchmark tape, against the yardstick of the tape the import writes.
func benchImport(b *testing.B, format string, mk func(tb testing.TB, src, dst string)) {
	for _, p := range tape.BenchProfiles() {
		// The source is made inside b.Run, so that -bench '/realistic'
		// makes only that one.
		b.Run(p.Name, func(b *testing.B) {
			dir := b.TempDir()
			src, log, out := filepath.Join(dir, "src.jsonl"), filepath.Join(dir, "source"), filepath.Join(dir, "out.jsonl")
			if _, err := tape.WriteSynth(src, p.Opts); err != nil {
				b.Fatal(err)
			}
			mk(b, src, log)
			os.Remove(src)
			var srv *httptest.Server
			if format == "jaeger" {
				srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, log) }))
				defer srv.Close()
			}
			imp := func(b *testing.B) {
				if srv != nil {
					importJaeger(b, srv.URL, out)
					return
				}
				in, err := os.Open(log)
				if err != nil {
					b.Fatal(err)
				}
				defer in.Close()
				f, err := os.Create(out)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := Import(format, in, f, Options{}); err != nil {
					b.Fatal(err)
				}
				if err := f.Close(); err != nil {
					b.Fatal(err)
				}
			}
			imp(b) // the tape stats is timed on
			b.ResetTimer()
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

// importJaeger imports the answer of the query API at base to out, as
// import --from jaeger --service bench does.
func importJaeger(b *testing.B, base, out string) {
	f, err := os.Create(out)
	if err != nil {
		b.Fatal(err)
	}
	q := JaegerQuery{Service: "bench", Start: time.Unix(0, 0), End: time.Now()}
	if _, err := JaegerContext(context.Background(), http.DefaultClient, base, q, f, Options{}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// eachWire calls f with each wire record of the tape at src and its
// 1-based place.
func eachWire(tb testing.TB, src string, f func(seq int, e tape.Entry)) {
	in, err := os.Open(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer in.Close()
	rd := tape.NewReader(in)
	for seq := 1; ; seq++ {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			tb.Fatal(err)
		}
		if e.IsWire() {
			f(seq, e)
		}
	}
}

// ghawLog writes the messages of the tape at src as a gh-aw gateway log
// (rpc-messages.jsonl, nanosecond times) to dst.
func ghawLog(tb testing.TB, src, dst string) {
	writeBenchFile(tb, dst, func(w *bufio.Writer) {
		var b []byte
		eachWire(tb, src, func(seq int, e tape.Entry) {
			dir, typ := "OUT", "REQUEST"
			if e.Dir == tape.DirRecv {
				dir = "IN"
			}
			if e.Kind == tape.KindResponse {
				typ = "RESPONSE"
			}
			b = append(b[:0], `{"timestamp":"`...)
			b = e.Time.Add(time.Duration(seq%1000)*time.Microsecond).AppendFormat(b, time.RFC3339Nano)
			b = append(b, `","direction":"`...)
			b = append(b, dir...)
			b = append(b, `","type":"`...)
			b = append(b, typ...)
			b = append(b, `","server_id":"`...)
			b = append(b, e.Server...)
			b = append(b, `","payload":`...)
			b = append(b, tape.StripMeta(e.Raw)...)
			b = append(b, "}\n"...)
			w.Write(b)
		})
	})
}

// inspectorExport writes the messages of the tape at src as an MCP
// Inspector history export (one entry a message, millisecond times) to
// dst.
func inspectorExport(tb testing.TB, src, dst string) {
	writeBenchFile(tb, dst, func(w *bufio.Writer) {
		w.WriteString("[")
		var b []byte
		first := true
		eachWire(tb, src, func(seq int, e tape.Entry) {
			dir, origin := "request", "client"
			switch e.Kind {
			case tape.KindResponse:
				dir = "response"
			case tape.KindNotification:
				dir = "notification"
			}
			if e.Dir == tape.DirRecv {
				origin = "server"
			}
			b = b[:0]
			if !first {
				b = append(b, ',')
			}
			first = false
			b = append(b, "\n  {\"id\":\"e"...)
			b = strconv.AppendInt(b, int64(seq), 10)
			b = append(b, `","timestamp":"`...)
			b = e.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
			b = append(b, `","direction":"`...)
			b = append(b, dir...)
			b = append(b, `","origin":"`...)
			b = append(b, origin...)
			b = append(b, `","message":`...)
			b = append(b, tape.StripMeta(e.Raw)...)
			b = append(b, '}')
			w.Write(b)
		})
		w.WriteString("\n]\n")
	})
}

// harExport writes `export --format har` of the tape at src to dst.
func harExport(tb testing.TB, src, dst string) {
	x, err := tape.OpenIndex(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer x.Close()
	f, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	s := export.Source{Name: "bench", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(src) }}
	if err := export.HAR(f, s, "bench"); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// otlpExport writes `export --format otlp --with-bodies` of the tape at
// src to dst.
func otlpExport(tb testing.TB, src, dst string) { otlpExportWith(tb, src, dst, true) }

func otlpExportWith(tb testing.TB, src, dst string, bodies bool) {
	x, err := tape.OpenIndex(src)
	if err != nil {
		tb.Fatal(err)
	}
	defer x.Close()
	f, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	s := export.Source{Name: "bench", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(src) }}
	if _, err := export.OTLP(context.Background(), w, s, export.OTLPOptions{WithBodies: bodies}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}
