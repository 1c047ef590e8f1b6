package importer

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/benchsrc"
	"github.com/tapedeck/tapedeck/internal/export"
	"github.com/tapedeck/tapedeck/tape"
)

// snoopLog, ghawLog and inspectorExport write the messages of the tape
// at src to dst as an mcpsnoop session log, a gh-aw gateway log and an
// MCP Inspector history export (internal/benchsrc).
func snoopLog(tb testing.TB, src, dst string)        { benchSource(tb, "mcpsnoop", src, dst) }
func ghawLog(tb testing.TB, src, dst string)         { benchSource(tb, "gh-aw", src, dst) }
func inspectorExport(tb testing.TB, src, dst string) { benchSource(tb, "inspector", src, dst) }

func benchSource(tb testing.TB, format, src, dst string) {
	tb.Helper()
	if err := benchsrc.Write(format, src, dst); err != nil {
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
			imp, out, _, _ := importBench(b, p, format, mk)
			imp(out) // the tape stats is timed on
			b.ResetTimer()
			y := tape.Yardstick{Path: out}
			for b.Loop() {
				b.StopTimer()
				if err := y.Measure(); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				imp(out)
			}
			y.Report(b, b.Elapsed(), b.N)
		})
	}
}

// importBench makes the source of an import of format (mk, from profile
// p's tape) in b's temporary directory, serving it over HTTP for jaeger,
// and returns a function that imports it to a tape at a path (over the
// file there), the path of the import benchmarks' tape, the source's and,
// for jaeger, the URL serving it.
func importBench(b *testing.B, p tape.BenchProfile, format string, mk func(tb testing.TB, src, dst string)) (imp func(out string), out, log, url string) {
	dir := b.TempDir()
	src := filepath.Join(dir, "src.jsonl")
	log, out = filepath.Join(dir, "source"), filepath.Join(dir, "out.jsonl")
	if _, err := tape.WriteSynth(src, p.Opts); err != nil {
		b.Fatal(err)
	}
	mk(b, src, log)
	os.Remove(src)
	var srv *httptest.Server
	if format == "jaeger" {
		srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.ServeFile(w, r, log) }))
		b.Cleanup(srv.Close)
		url = srv.URL
	}
	return func(out string) {
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
	}, out, log, url
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
