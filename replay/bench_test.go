package replay

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// writeSyntheticTape writes a tape of n messages for server "bench": n/2
// tools/call requests whose params hold paramBytes of text and a counter
// (distinct when distinct is true), each followed by its response.
func writeSyntheticTape(tb testing.TB, path string, n, paramBytes int, distinct bool) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", paramBytes)
	ts := t0
	for i := 0; i < n/2; i++ {
		k := i
		if !distinct {
			k = 0
		}
		stamp := ts.Format("2006-01-02T15:04:05.000Z")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"k":%d,"pad":"%s"}},"_meta":{"dir":"send","server":"bench","ts":"%s"}}`+"\n", i, k, pad, stamp)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"answer %d"}]},"_meta":{"dir":"recv","server":"bench","ts":"%s"}}`+"\n", i, k, stamp)
		ts = ts.Add(time.Millisecond)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

func benchRequest(id int, k int, pad string) []byte {
	return fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"k":%d,"pad":"%s"}}}`+"\n", id, k, pad)
}

// pipeServer is a server at the end of two OS pipes, as a stdio server is.
type pipeServer struct {
	toServer   *os.File
	fromServer *bufio.Reader
	done       chan error
	closeAll   func()
}

// With blocking true the server's end of its stdin is a pipe in blocking
// mode, as a stdio server gets it from most clients when it does not make
// it non-blocking itself (cmd/tapedeck does): the runtime cannot poll it.
func startPipeServer(tb testing.TB, blocking bool, serve func(r io.Reader, w io.Writer) error) *pipeServer {
	inR, inW, err := os.Pipe()
	if blocking {
		inR, inW, err = blockingPipe()
	}
	if err != nil {
		tb.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		tb.Fatal(err)
	}
	s := &pipeServer{toServer: inW, fromServer: bufio.NewReaderSize(outR, 1<<20), done: make(chan error, 1)}
	go func() {
		s.done <- serve(inR, outW)
		outW.Close()
	}()
	s.closeAll = func() {
		inW.Close()
		<-s.done
		inR.Close()
		outR.Close()
	}
	return s
}

// trivialServer answers every request line from memory: the recorded
// response with the request's id spliced in. It is the baseline.
func trivialServer(resp []byte) func(r io.Reader, w io.Writer) error {
	return func(r io.Reader, w io.Writer) error {
		br := bufio.NewReaderSize(r, 64<<10)
		bw := bufio.NewWriterSize(w, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if err != nil {
				return bw.Flush()
			}
			id := gjson.GetBytes(line, "id").Raw
			bw.Write(jsonrpc.SpliceID(resp, []byte(id)))
			bw.WriteByte('\n')
			if br.Buffered() == 0 {
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		}
	}
}

func replayServer(tb testing.TB, path string, mode Mode) func(r io.Reader, w io.Writer) error {
	x, err := tape.OpenIndex(path)
	if err != nil {
		tb.Fatal(err)
	}
	e, err := NewEngine(x, EngineOptions{Mode: mode})
	if err != nil {
		tb.Fatal(err)
	}
	return func(r io.Reader, w io.Writer) error {
		defer x.Close()
		return ServeStdio(context.Background(), e, r, w, StdioOptions{})
	}
}

// roundTrips sends n requests one at a time and returns the time taken.
func roundTrips(tb testing.TB, s *pipeServer, n int, pad string) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := s.toServer.Write(benchRequest(i+1, 0, pad)); err != nil {
			tb.Fatal(err)
		}
		line, err := s.fromServer.ReadSlice('\n')
		if err != nil || !strings.Contains(string(line), `"result"`) {
			tb.Fatalf("round trip %d: %v %.200s", i, err, line)
		}
	}
	return time.Since(start)
}

// pipelined sends n requests without waiting while reading the n responses.
func pipelined(tb testing.TB, s *pipeServer, n int, pad string) time.Duration {
	start := time.Now()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		w := bufio.NewWriterSize(s.toServer, 1<<20)
		for i := 0; i < n; i++ {
			w.Write(benchRequest(i+1, 0, pad))
		}
		w.Flush()
	}()
	for i := 0; i < n; i++ {
		line, err := s.fromServer.ReadSlice('\n')
		if err != nil || !strings.Contains(string(line), `"result"`) {
			tb.Fatalf("pipelined response %d: %v %.200s", i, err, line)
		}
	}
	wg.Wait()
	return time.Since(start)
}

// BenchmarkReplayStdio measures tapedeck's stdio replay server against a
// trivial in-memory server over the same OS pipes, with 1 KiB params, in one
// run: round-trip latency and pipelined throughput, as ratios of the
// replay's to the trivial server's (the targets: roundtrip-ratio under
// 1.5, pipelined-ratio as close to 1 as it gets). The replay runs in loose
// mode over a tape holding the call once, so each request is a full keyed
// lookup (canonical 1 KiB params hashed), a lazy read of the recorded
// response from the file and an id splice.
//
// stdin=polled is the server's stdin as cmd/tapedeck serves it when it is
// a pipe or a socket (made non-blocking, read in the serving goroutine);
// stdin=blocking is a blocking stdin it could not make so, read by a
// goroutine that hands each read over.
func BenchmarkReplayStdio(b *testing.B) {
	for _, blocking := range []bool{false, true} {
		name := "stdin=polled"
		if blocking {
			name = "stdin=blocking"
		}
		b.Run(name, func(b *testing.B) { benchReplayStdio(b, blocking) })
	}
}

func benchReplayStdio(b *testing.B, blocking bool) {
	path := filepath.Join(b.TempDir(), "one.tape.jsonl")
	writeSyntheticTape(b, path, 2, 1024, false)
	pad := strings.Repeat("x", 1024)
	resp := []byte(`{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"answer 0"}]}}`)

	base := startPipeServer(b, blocking, trivialServer(resp))
	defer base.closeAll()
	rep := startPipeServer(b, blocking, replayServer(b, path, Loose))
	defer rep.closeAll()
	roundTrips(b, base, 100, pad) // warm up
	roundTrips(b, rep, 100, pad)

	b.ResetTimer()
	var tBase, tRep time.Duration
	for i := 0; i < b.N; i++ {
		tBase += roundTrips(b, base, 1, pad)
		tRep += roundTrips(b, rep, 1, pad)
	}
	b.StopTimer()
	n := max(b.N, 20000)
	pBase := pipelined(b, base, n, pad)
	pRep := pipelined(b, rep, n, pad)
	b.ReportMetric(float64(tRep.Nanoseconds())/float64(b.N), "replay-ns/roundtrip")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "trivial-ns/roundtrip")
	b.ReportMetric(float64(tRep)/float64(tBase), "roundtrip-ratio")
	b.ReportMetric(float64(n)/pRep.Seconds(), "replay-req/s-pipelined")
	b.ReportMetric(float64(n)/pBase.Seconds(), "trivial-req/s-pipelined")
	// The trivial server's throughput over the replay's: how many times
	// longer the replay takes for the same pipelined requests.
	b.ReportMetric(float64(pRep)/float64(pBase), "pipelined-ratio")
}

// BenchmarkKeyedMatch measures one keyed lookup and answer (engine only, no
// I/O) on tapes of 1 000 and 1 000 000 messages: the cost must not grow
// with the tape. The keyed index is filled before timing.
func BenchmarkKeyedMatch(b *testing.B) {
	dir := b.TempDir()
	var per [2]float64
	for j, n := range []int{1000, 1_000_000} {
		path := filepath.Join(dir, fmt.Sprintf("t%d.tape.jsonl", n))
		writeSyntheticTape(b, path, n, 16, true)
		x, err := tape.OpenIndex(path)
		if err != nil {
			b.Fatal(err)
		}
		e, err := NewEngine(x, EngineOptions{Mode: Loose})
		if err != nil {
			b.Fatal(err)
		}
		pad := strings.Repeat("x", 16)
		e.Receive(benchRequest(1, -1, pad), t0) // unknown: fills the whole keyed index
		reqs := make([][]byte, 1000)
		for i := range reqs {
			reqs[i] = benchRequest(i+2, (i*7919)%(n/2), pad)
		}
		// Serve each call once before timing: the first serve of a call
		// also walks the tape's order up to it (a one-time, amortized cost).
		for _, r := range reqs {
			e.Receive(r, t0)
		}
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				out := e.Receive(reqs[i%len(reqs)], t0)
				if len(out) != 1 || out[0].Divergence != nil {
					b.Fatalf("lookup %d: %q", i, texts(out))
				}
			}
			per[j] = float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if j == 1 && per[0] > 0 {
				b.ReportMetric(per[1]/per[0], "vs-1k-ratio")
			}
		})
		x.Close()
		os.Remove(path)
	}
}

// BenchmarkStartup1M measures opening a 1 000 000-message tape and serving
// its first request (target: under 2 s).
func BenchmarkStartup1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.tape.jsonl")
	writeSyntheticTape(b, path, 1_000_000, 64, true)
	pad := strings.Repeat("x", 64)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		x, err := tape.OpenIndex(path)
		if err != nil {
			b.Fatal(err)
		}
		e, err := NewEngine(x, EngineOptions{})
		if err != nil {
			b.Fatal(err)
		}
		out := e.Receive(benchRequest(1, 0, pad), t0)
		if len(out) != 1 || out[0].Divergence != nil {
			b.Fatalf("first request: %q", texts(out))
		}
		x.Close()
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/start")
}
