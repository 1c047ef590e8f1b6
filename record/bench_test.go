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

	"golang.org/x/sys/unix"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
)

// peer is a running line-based server: direct, or behind the shim.
type peer struct {
	in     *bufio.Writer
	out    *bufio.Reader
	cmd    *exec.Cmd
	raw    io.WriteCloser
	rawOut io.ReadCloser
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
	p := &peer{in: bufio.NewWriterSize(in, 1<<20), out: bufio.NewReaderSize(out, 1<<20), cmd: cmd, raw: in, rawOut: out}
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

// BenchmarkStdioThroughput pipelines 1 KiB requests (n per round, at least
// 100 000) through several relays of the same echo server and reports each
// one's rate as a fraction of the direct rate, as medians over alternating
// rounds (the machine is shared and drifts):
//
//   - shim/direct: tapedeck record, tape on disk;
//   - shim-devnull/direct: the same with the tape going to /dev/null (the
//     gap to shim/direct is the filesystem taking about 2.3 KB a round trip);
//   - floor/direct: testdata/floorrelay, which only writes each chunk it
//     reads to a file before forwarding it, with the same 1 MiB pipes: the
//     bound any recording shim meets on this machine;
//   - shim/direct-1MiB: against a direct connection whose client pipes are
//     enlarged too, as the shim enlarges them (F_SETPIPE_SZ): the shim's
//     cost with the pipe sizes made equal.
//
// Tapes are truncated between rounds, so that the figures measure the
// recorders and the page cache, not the disk's writeback of gigabytes.
func BenchmarkStdioThroughput(b *testing.B) {
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	floor := mcptest.BuildBinary(b, floorRelayPackage)
	dir := b.TempDir()
	shimTape, floorTape := filepath.Join(dir, "shim.jsonl"), filepath.Join(dir, "floor.jsonl")
	contenders := []struct {
		name string
		p    *peer
	}{
		{"direct", startPeer(b, echo)},
		{"shim", startPeer(b, tapedeck, "record", "-o", shimTape, "--", echo)},
		{"shim-devnull", startPeer(b, tapedeck, "record", "-o", os.DevNull, "--append", "--", echo)},
		{"floor", startPeer(b, floor, floorTape, echo)},
		{"direct-1MiB", startPeer(b, echo)},
	}
	contenders[4].p.growPipes(b)
	payload := strings.Repeat("x", 1024)
	n := max(b.N, 100_000)
	for _, c := range contenders {
		c.p.pipeline(b, 2000, payload)
	}
	rates := make([][]float64, len(contenders))
	b.ResetTimer()
	for range 5 {
		for i, c := range contenders {
			rates[i] = append(rates[i], c.p.pipeline(b, n, payload))
		}
		for _, path := range []string{shimTape, floorTape} {
			if err := os.Truncate(path, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	ratio := func(i, base int) float64 {
		r := make([]float64, len(rates[i]))
		for k := range r {
			r[k] = rates[i][k] / rates[base][k]
		}
		return median(r)
	}
	b.ReportMetric(median(rates[0]), "direct-msg/s")
	b.ReportMetric(median(rates[1]), "shim-msg/s")
	b.ReportMetric(ratio(1, 0), "shim/direct")
	b.ReportMetric(ratio(2, 0), "shim-devnull/direct")
	b.ReportMetric(ratio(3, 0), "floor/direct")
	b.ReportMetric(ratio(1, 4), "shim/direct-1MiB")
	b.ReportMetric(ratio(3, 4), "floor/direct-1MiB")
	b.ReportMetric(0, "ns/op")
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
}

// growPipes gives the peer's pipes 1 MiB buffers, as the shim gives its own.
func (p *peer) growPipes(b *testing.B) {
	for _, f := range []any{p.raw, p.rawOut} {
		if x, ok := f.(interface{ Fd() uintptr }); ok {
			if _, err := unix.FcntlInt(x.Fd(), unix.F_SETPIPE_SZ, 1<<20); err != nil {
				b.Fatalf("F_SETPIPE_SZ: %v", err)
			}
		}
	}
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
