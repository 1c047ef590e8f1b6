package record_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay/record"
)

// peer is a running line-based server: direct, or behind the shim.
type peer struct {
	in  *bufio.Writer
	out *bufio.Reader
	cmd *exec.Cmd
	raw io.WriteCloser
}

func startPeer(b *testing.B, argv ...string) *peer {
	b.Helper()
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &peer{in: bufio.NewWriterSize(in, 1<<20), out: bufio.NewReaderSize(out, 1<<20), cmd: cmd, raw: in}
	b.Cleanup(func() {
		p.raw.Close()
		done := make(chan struct{})
		go func() { p.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	return p
}

func request(id int, payload string) []byte {
	return []byte(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"echo","params":{"data":"` + payload + `"}}` + "\n")
}

func (p *peer) roundTrip(b *testing.B, msg []byte) time.Duration {
	start := time.Now()
	p.in.Write(msg)
	if err := p.in.Flush(); err != nil {
		b.Fatal(err)
	}
	if _, err := p.out.ReadSlice('\n'); err != nil {
		b.Fatal(err)
	}
	return time.Since(start)
}

// pipeline sends n requests while reading the n answers, and returns the
// rate in messages per second.
func (p *peer) pipeline(b *testing.B, n int, payload string) float64 {
	start := time.Now()
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			p.in.Write(request(i, payload))
		}
		errc <- p.in.Flush()
	}()
	for range n {
		if _, err := p.out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

func percentile(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func benchPeers(b *testing.B) (direct, shim *peer) {
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	direct = startPeer(b, echo)
	shim = startPeer(b, tapedeck, "record", "-o", filepath.Join(b.TempDir(), "bench.jsonl"), "--", echo)
	return direct, shim
}

// BenchmarkStdioLatency measures one request/response round trip through
// the shim (the tapedeck binary, tape on disk) and directly to the same echo
// server, alternately, and reports the latency the shim adds.
func BenchmarkStdioLatency(b *testing.B) {
	direct, shim := benchPeers(b)
	payload := strings.Repeat("x", 1024)
	for i := range 100 { // warm up both paths
		direct.roundTrip(b, request(i, payload))
		shim.roundTrip(b, request(i, payload))
	}
	var d, s []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msg := request(i, payload)
		d = append(d, direct.roundTrip(b, msg))
		s = append(s, shim.roundTrip(b, msg))
	}
	b.StopTimer()
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	b.ReportMetric(us(percentile(d, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(percentile(s, 0.5)), "shim-p50-µs")
	b.ReportMetric(us(percentile(s, 0.5)-percentile(d, 0.5)), "added-p50-µs")
	b.ReportMetric(us(percentile(s, 0.99)-percentile(d, 0.99)), "added-p99-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkStdioThroughput pipelines 1 KiB requests through the shim and
// directly, and reports the shim's rate as a fraction of the direct one.
// A second shim writes its tape to /dev/null: the gap between the two is
// the cost of the filesystem taking every message (about 2.3 KB of tape per
// round trip), the rest is the shim's own.
func BenchmarkStdioThroughput(b *testing.B) {
	direct, shim := benchPeers(b)
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	null := startPeer(b, tapedeck, "record", "-o", os.DevNull, "--append", "--", echo)
	payload := strings.Repeat("x", 1024)
	n := max(b.N, 1000)
	for _, p := range []*peer{direct, shim, null} {
		p.pipeline(b, 1000, payload)
	}
	b.ResetTimer()
	dr := direct.pipeline(b, n, payload)
	sr := shim.pipeline(b, n, payload)
	nr := null.pipeline(b, n, payload)
	dr2 := direct.pipeline(b, n, payload) // again, so a drift of the shared machine shows
	b.StopTimer()
	d := (dr + dr2) / 2
	b.ReportMetric(d, "direct-msg/s")
	b.ReportMetric(sr, "shim-msg/s")
	b.ReportMetric(sr/d, "shim/direct")
	b.ReportMetric(nr/d, "shim-devnull/direct")
	b.ReportMetric(0, "ns/op")
}

// countingDiscard is a tape destination that keeps nothing.
type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(b []byte) (int, error) { c.n += int64(len(b)); return len(b), nil }

// BenchmarkStdioMemory runs record.Stdio in-process over a long pipelined
// session (TAPEDECK_BENCH_MESSAGES, default 1 000 000 messages of 100
// bytes) and reports the heap in use after 10 000 messages and at the end.
// Run it with -benchtime=1x.
func BenchmarkStdioMemory(b *testing.B) {
	echo := mcptest.BuildBinary(b, echoServerPackage)
	total := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("TAPEDECK_BENCH_MESSAGES")); err == nil && v > 10_000 {
		total = v
	}
	for range b.N {
		clientW, shimIn := io.Pipe()
		shimOut, clientR := io.Pipe()
		var sink countingDiscard
		s := &record.Stdio{Command: echo, Tape: &sink, Server: "echo"}
		done := make(chan error, 1)
		go func() {
			_, err := s.Run(context.Background(), clientW, clientR, io.Discard)
			clientR.Close()
			done <- err
		}()
		p := &peer{in: bufio.NewWriterSize(shimIn, 64<<10), out: bufio.NewReaderSize(shimOut, 64<<10)}
		payload := strings.Repeat("y", 100)
		heap := func() float64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return float64(ms.HeapInuse) / 1024
		}
		p.pipeline(b, 10_000, payload)
		early := heap()
		p.pipeline(b, total-10_000, payload)
		late := heap()
		shimIn.Close()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(early, "heap-10k-KiB")
		b.ReportMetric(late, fmt.Sprintf("heap-%dk-KiB", total/1000))
		b.ReportMetric(late/early, "heap-ratio")
		b.ReportMetric(float64(sink.n)/float64(2*total), "tape-B/msg")
	}
}
