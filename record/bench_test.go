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
	"sync"
	"syscall"
	"testing"
	"time"

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
	once   sync.Once
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
	b.Cleanup(p.stop)
	return p
}

// stop ends a peer before its test does: its input closed, the process
// waited for (killed after 5 s).
func (p *peer) stop() { p.once.Do(p.end) }

func (p *peer) end() {
	p.raw.Close()
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-done
	}
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

// window is how many requests the throughput benchmark keeps in flight,
// as a client with many calls outstanding does (issue 23's setup).
const window = 64

// windowed sends n requests, never more than window unanswered, while
// reading the n answers, and returns the rate in messages per second.
func (p *peer) windowed(b *testing.B, n int, payload string) float64 {
	start := time.Now()
	tokens := make(chan struct{}, window)
	for range window {
		tokens <- struct{}{}
	}
	errc := make(chan error, 1)
	go func() {
		for i := range n {
			select {
			case <-tokens:
			default:
				if err := p.in.Flush(); err != nil {
					errc <- err
					return
				}
				<-tokens
			}
			p.in.Write(request(i, payload))
		}
		errc <- p.in.Flush()
	}()
	for range n {
		if _, err := p.out.ReadSlice('\n'); err != nil {
			b.Fatal(err)
		}
		tokens <- struct{}{}
	}
	if err := <-errc; err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// BenchmarkStdioLatency measures one 1 KiB request/response round trip
// directly to the echo server, through the bare relay (floorrelay -: the
// server started as the shim starts it, bytes copied both ways, nothing
// parsed) and through the shim (the tapedeck binary, tape on disk), in
// turn, and reports the latency the shim adds over the relay (the budget:
// +20 µs p50) and over a direct connection.
func BenchmarkStdioLatency(b *testing.B) {
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	relay := mcptest.BuildBinary(b, floorRelayPackage)
	direct := startPeer(b, echo)
	bare := startPeer(b, relay, "-", echo)
	shim := startPeer(b, tapedeck, "record", "-o", filepath.Join(b.TempDir(), "bench.jsonl"), "--", echo)
	var old *peer // TAPEDECK_OLD_BIN: another tapedeck binary, in the same rounds
	if bin := os.Getenv("TAPEDECK_OLD_BIN"); bin != "" {
		old = startPeer(b, bin, "record", "-o", filepath.Join(b.TempDir(), "old.jsonl"), "--", echo)
	}
	payload := strings.Repeat("x", 1024)
	for i := range 100 { // warm up every path
		direct.roundTrip(b, request(i, payload))
		bare.roundTrip(b, request(i, payload))
		shim.roundTrip(b, request(i, payload))
		if old != nil {
			old.roundTrip(b, request(i, payload))
		}
	}
	var d, r, s, o []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msg := request(i, payload)
		d = append(d, direct.roundTrip(b, msg))
		r = append(r, bare.roundTrip(b, msg))
		s = append(s, shim.roundTrip(b, msg))
		if old != nil {
			o = append(o, old.roundTrip(b, msg))
		}
	}
	b.StopTimer()
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	if old != nil {
		b.ReportMetric(us(percentile(o, 0.5)-percentile(r, 0.5)), "old-over-relay-p50-µs")
	}
	b.ReportMetric(us(percentile(d, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(percentile(r, 0.5)), "relay-p50-µs")
	b.ReportMetric(us(percentile(s, 0.5)), "shim-p50-µs")
	b.ReportMetric(us(percentile(s, 0.5)-percentile(r, 0.5)), "over-relay-p50-µs")
	b.ReportMetric(us(percentile(s, 0.99)-percentile(r, 0.99)), "over-relay-p99-µs")
	b.ReportMetric(us(percentile(s, 0.5)-percentile(d, 0.5)), "over-direct-p50-µs")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkStdioThroughput sends 1 KiB requests with 64 in flight (n per
// round, at least 100 000) through several relays of the same echo server,
// in turn, 3 rounds, and reports each one's rate as a fraction of another's,
// as medians over the rounds (the machine is shared and drifts):
//
//   - shim/relay: tapedeck record, tape on disk, against the bare relay
//     (floorrelay -: started as the shim starts its server, with the same
//     pipes, copying bytes both ways and parsing nothing), the budget
//     (0.93);
//   - relay/direct: what the hop itself costs;
//   - shim-devnull/relay: the shim with the tape going to /dev/null (the
//     gap to shim/relay is the filesystem);
//   - floor-MODE/relay: floorrelay -mode=MODE writing what it reads to a
//     file before forwarding it, each mode a way to write the tape (one
//     write(2) a chunk, one a line, 16 KiB reads, pwrite(2) into a
//     preallocated file, memcpy into a mapped preallocated file (its pages
//     faulted in as written, or ahead by a goroutine), a writer
//     goroutine pipelined with the reader): the bound any recording shim
//     meets on this machine is the best of them;
//   - old-shim/relay, when TAPEDECK_OLD_BIN names another tapedeck binary
//     (the code before a change), measured in the same rounds.
//
// TAPEDECK_BENCH_ROUNDS=N runs N rounds instead of 3 and logs each
// contender's rate and its ratio to the relay round by round.
//
// Every contender that writes a tape is started afresh on a new file each
// round (a process, a file and its reserve), so that the figures measure
// the recorders and the page cache, not the disk's writeback of gigabytes.
func BenchmarkStdioThroughput(b *testing.B) {
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	floor := mcptest.BuildBinary(b, floorRelayPackage)
	dir := b.TempDir()
	type contender struct {
		name string
		argv func(tape string) []string // nil tape: writes none
		tape bool
		p    *peer
	}
	cs := []*contender{
		{name: "direct", argv: func(string) []string { return []string{echo} }},
		{name: "relay", argv: func(string) []string { return []string{floor, "-", echo} }},
		{name: "shim", tape: true, argv: func(t string) []string { return []string{tapedeck, "record", "-o", t, "--", echo} }},
		{name: "shim-devnull", argv: func(string) []string {
			return []string{tapedeck, "record", "-o", os.DevNull, "--append", "--", echo}
		}},
	}
	if old := os.Getenv("TAPEDECK_OLD_BIN"); old != "" {
		cs = append(cs, &contender{name: "old-shim", tape: true, argv: func(t string) []string { return []string{old, "record", "-o", t, "--", echo} }})
	}
	for _, mode := range []string{"chunk", "line", "small", "prealloc", "pwrite", "mmap", "mmap-ahead", "pipeline", "pipeline-prealloc"} {
		cs = append(cs, &contender{name: "floor-" + mode, tape: true, argv: func(t string) []string {
			return []string{floor, "-mode=" + mode, t, echo}
		}})
	}
	payload := strings.Repeat("x", 1024)
	n := max(b.N, 100_000)
	start := func(c *contender, round int) {
		if c.p != nil {
			c.p.stop()
		}
		t := filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", c.name, round))
		c.p = startPeer(b, c.argv(t)...)
		c.p.windowed(b, 2000, payload)
		if round > 0 {
			os.Remove(filepath.Join(dir, fmt.Sprintf("%s-%d.jsonl", c.name, round-1)))
		}
	}
	for _, c := range cs {
		start(c, 0)
	}
	rates := make([][]float64, len(cs))
	rounds := 3
	if r, err := strconv.Atoi(os.Getenv("TAPEDECK_BENCH_ROUNDS")); err == nil && r > 0 {
		rounds = r
	}
	b.ResetTimer()
	for round := range rounds {
		for i, c := range cs {
			if c.tape && round > 0 {
				b.StopTimer()
				start(c, round)
				b.StartTimer()
			}
			rates[i] = append(rates[i], c.p.windowed(b, n, payload))
		}
	}
	b.StopTimer()
	index := func(name string) int {
		return slices.IndexFunc(cs, func(c *contender) bool { return c.name == name })
	}
	ratio := func(i, base int) float64 {
		r := make([]float64, len(rates[i]))
		for k := range r {
			r[k] = rates[i][k] / rates[base][k]
		}
		return median(r)
	}
	relay := index("relay")
	b.ReportMetric(median(rates[index("direct")]), "direct-msg/s")
	b.ReportMetric(median(rates[relay]), "relay-msg/s")
	b.ReportMetric(median(rates[index("shim")]), "shim-msg/s")
	b.ReportMetric(ratio(relay, index("direct")), "relay/direct")
	for i, c := range cs[2:] {
		b.ReportMetric(ratio(i+2, relay), c.name+"/relay")
	}
	if os.Getenv("TAPEDECK_BENCH_ROUNDS") != "" {
		for i, c := range cs {
			var each []string
			for k := range rates[i] {
				each = append(each, fmt.Sprintf("%.2f", rates[i][k]/rates[relay][k]))
			}
			b.Logf("%s: %.0f msg/s, /relay median %.3f, rounds %s", c.name, median(rates[i]), ratio(i, relay), strings.Join(each, " "))
		}
	}
	b.ReportMetric(0, "ns/op")
}

func median(x []float64) float64 {
	s := slices.Clone(x)
	slices.Sort(s)
	return s[len(s)/2]
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
