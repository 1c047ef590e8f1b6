package record_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// jsonEcho answers each POSTed request with a JSON response after delay,
// and a notification with 202.
func jsonEcho(delay time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		i := bytes.Index(body, []byte(`"id":`))
		if i < 0 {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		id := body[i+5 : i+5+bytes.IndexByte(body[i+5:], ',')]
		time.Sleep(delay)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Mcp-Session-Id", "bench")
		io.WriteString(w, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"echo":true}}`)
	}
}

// echoServerEnv, set to a delay, makes the test binary a jsonEcho server
// of that delay (TestMain): it listens on a port of the system's choice
// on the loopback, prints its URL on stdout, and serves until its stdin
// closes.
const echoServerEnv = "TAPEDECK_BENCH_ECHO_SERVER"

// serveEcho is the test binary as a jsonEcho server (echoServerEnv); it
// returns the process's exit code.
func serveEcho(delay string) int {
	d, err := time.ParseDuration(delay)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: expected a duration: %v\n", echoServerEnv, delay, err)
		return 2
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	go http.Serve(ln, jsonEcho(d))
	fmt.Printf("http://%s\n", ln.Addr())
	io.Copy(io.Discard, os.Stdin) // the benchmark closes it, or ends
	return 0
}

// echoProcess starts the test binary as a jsonEcho server of delay in a
// process of its own and returns its URL; it stops with b.
func echoProcess(b *testing.B, delay time.Duration) string {
	cmd, in, out := selfProcess(b, echoServerEnv+"="+delay.String())
	b.Cleanup(func() { in.Close(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		b.Fatalf("the echo server process: expected its URL on stdout, read %q: %v", line, err)
	}
	return strings.TrimSpace(line)
}

// BenchmarkProxyShadow measures what shadowing adds on the client's path
// at the budget's rate, 1,000 requests a second: the same upstream A
// (answering after 200 µs) through two proxies, one recording plainly,
// one recording with --shadow at a B ten times slower (2 ms). The load is
// an open loop, as a real client's is: a request every millisecond, each
// sent at its time whether or not the one before was answered, so a slow
// answer overlaps the next request rather than delaying it. The two
// proxies take turns in blocks of shadowBlock requests, with a rest of
// shadowRest between blocks, longer than B's answer and the shadow's hold
// (ShadowOptions.Hold): what B does for a block's copies (its HTTP
// exchange, the lane's records) happens within that block, between and
// during its own requests, and never spills onto the other proxy's block.
// Interleaving the blocks spreads the machine's changing load over both.
// It reports the client-visible p50 and p99 of both (measured from each
// request's sending to its answer read whole), their ratios
// (shadow/plain), and the lane's records (2 a request B was sent and
// answered). TAPEDECK_BENCH_SHADOW=off runs the second proxy plain too:
// its ratios show the noise of the machine.
//
// (Before, the benchmark was a closed loop alternating one plain and one
// shadow call: B's exchange then overlapped whichever call came next, so
// the measure depended on when the shadow did its work rather than on
// what a client sending at a given rate sees.)
const (
	shadowRate  = 1000 // requests a second, the budget's rate
	shadowBlock = 100  // requests to one proxy before the other takes its turn
	// shadowRest is long enough for B to answer a block's last copies:
	// B sees the client's causal order, so the copies of requests the
	// client sent after A answered the one before go one after the other,
	// each after B's 2 ms answer to the one before (the copies of a block
	// end up to ~50 ms after its last request; with 20 ms they spilled
	// into the other proxy's block).
	shadowRest = 80 * time.Millisecond
)

func BenchmarkProxyShadow(b *testing.B) {
	const aDelay = 200 * time.Microsecond
	if os.Getenv("GOGC") == "" { // as tapedeck record runs
		defer debug.SetGCPercent(debug.SetGCPercent(record.GCPercent))
	}
	var aURL, bURL string
	inProcess := os.Getenv("TAPEDECK_BENCH_PROCESSES") == "none"
	if inProcess {
		up := httptest.NewServer(jsonEcho(aDelay))
		defer up.Close()
		slow := httptest.NewServer(jsonEcho(10 * aDelay))
		defer slow.Close()
		aURL, bURL = up.URL, slow.URL
	} else {
		aURL, bURL = echoProcess(b, aDelay), echoProcess(b, 10*aDelay)
	}
	u, _ := url.Parse(aURL + "/mcp")
	bu, _ := url.Parse(bURL + "/mcp")
	dir := b.TempDir()
	open := func(name string) *os.File {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			b.Fatal(err)
		}
		return f
	}
	fp, fs := open("plain.jsonl"), open("shadow.jsonl")
	defer fp.Close()
	defer fs.Close()
	plainP := &record.Proxy{Upstream: u, Tape: fp, Server: "bench"}
	shadowP := &record.Proxy{Upstream: u, Tape: fs, Server: "bench", Shadow: &record.ShadowOptions{URL: bu, Drain: time.Second}}
	if os.Getenv("TAPEDECK_BENCH_SHADOW") == "off" {
		shadowP.Shadow = nil // the control: two plain proxies, the ratios the machine's noise
	}
	for _, p := range []*record.Proxy{plainP, shadowP} {
		if err := p.Start("bench", "bench"); err != nil {
			b.Fatal(err)
		}
	}
	plain := httptest.NewServer(plainP)
	defer plain.Close()
	shadowed := httptest.NewServer(shadowP)
	defer shadowed.Close()
	var c shadowClient
	if os.Getenv("TAPEDECK_BENCH_PROCESSES") == "servers" || inProcess {
		c = newLocalClient() // the client in the benchmark's process
	} else {
		c = clientProcess(b)
	}
	defer c.close()
	endpoints := []string{plain.URL + "/mcp", shadowed.URL + "/mcp"}
	for _, e := range endpoints {
		if _, err := c.run("init", e, 1); err != nil {
			b.Fatal(err)
		}
	}
	// c paces n requests to an endpoint at shadowRate, open loop, and
	// returns their latencies once all are answered.
	paced := func(endpoint string, n int) []time.Duration {
		out, err := c.run("paced", endpoint, n)
		if err != nil {
			b.Fatal(err)
		}
		return out
	}
	for _, e := range endpoints {
		paced(e, shadowBlock) // warm up: connections, buffers
	}
	lat := make([][]time.Duration, len(endpoints))
	// The recorder's CPU in each proxy's blocks (its tape and, for the
	// second, the shadow; not A's, B's or the client's, in processes of
	// their own): what a block started is done by its end, the rest
	// included.
	cpu := make([]time.Duration, len(endpoints))
	b.ResetTimer()
	for done := 0; done < b.N; done += shadowBlock {
		n := min(shadowBlock, b.N-done)
		for k, e := range endpoints {
			c0 := processCPU()
			lat[k] = append(lat[k], paced(e, n)...)
			cpu[k] += processCPU() - c0
		}
	}
	b.StopTimer()
	if b.Failed() {
		return
	}
	plain.Close()
	shadowed.Close()
	for _, p := range []*record.Proxy{plainP, shadowP} {
		if err := p.Close("bench over"); err != nil {
			b.Fatal(err)
		}
	}
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	p50p, p99p := percentile(lat[0], 0.5), percentile(lat[0], 0.99)
	p50s, p99s := percentile(lat[1], 0.5), percentile(lat[1], 0.99)
	b.ReportMetric(us(p50p), "plain-p50-µs")
	b.ReportMetric(us(p99p), "plain-p99-µs")
	b.ReportMetric(us(p50s), "shadow-p50-µs")
	b.ReportMetric(us(p99s), "shadow-p99-µs")
	b.ReportMetric(us(cpu[0])/float64(b.N), "plain-cpu-µs/req")
	b.ReportMetric(us(cpu[1])/float64(b.N), "shadow-cpu-µs/req")
	b.ReportMetric(float64(p50s)/float64(p50p), "shadow/plain-p50")
	b.ReportMetric(float64(p99s)/float64(p99p), "shadow/plain-p99")
	tp, _ := os.ReadFile(fs.Name())
	b.ReportMetric(float64(bytes.Count(tp, []byte(`"shadow":true,"shadowOf"`))), "lane-records")
	// Copies B never got or never answered, and why: a fair run has none.
	for _, l := range bytes.Split(tp, []byte("\n")) {
		if bytes.Contains(l, []byte(`"method":"`+tape.MethodShadowDropped+`"`)) {
			b.Logf("a copy dropped: %s", l)
		}
	}
	b.ReportMetric(0, "ns/op")
}

// processCPU is the CPU this process used so far, user and system.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// shadowClient is the benchmark's client: in the benchmark's process or in
// one of its own.
type shadowClient interface {
	// run does the initialize (what "init") or n paced calls ("paced") to
	// endpoint and returns their latencies.
	run(what, endpoint string, n int) ([]time.Duration, error)
	close()
}

const (
	shadowInit = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`
	// clientEnv makes the test binary the benchmark's client (TestMain):
	// it reads "WHAT ENDPOINT N" lines on stdin and answers each with a
	// line of the latencies in nanoseconds, or "error: ...".
	clientEnv = "TAPEDECK_BENCH_CLIENT"
)

var shadowPayload = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"` + strings.Repeat("x", 512) + `"}}}`

type localClient struct{ c *http.Client }

func newLocalClient() *localClient {
	return &localClient{c: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}}
}

func (c *localClient) close() { c.c.CloseIdleConnections() }

func (c *localClient) call(endpoint, body string) (time.Duration, error) {
	start := time.Now()
	req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", "bench")
	resp, err := c.c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return time.Since(start), nil
}

func (c *localClient) run(what, endpoint string, n int) ([]time.Duration, error) {
	if what == "init" {
		d, err := c.call(endpoint, shadowInit)
		return []time.Duration{d}, err
	}
	out := make([]time.Duration, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / shadowRate)))
		wg.Go(func() { out[i], errs[i] = c.call(endpoint, shadowPayload) })
	}
	wg.Wait()
	time.Sleep(shadowRest)
	return out, errors.Join(errs...)
}

// serveClient is the test binary as the benchmark's client (clientEnv);
// it returns the process's exit code.
func serveClient() int {
	c := newLocalClient()
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var what, endpoint string
		var n int
		if _, err := fmt.Sscan(in.Text(), &what, &endpoint, &n); err != nil {
			fmt.Fprintf(out, "error: expected WHAT ENDPOINT N, read %q: %v\n", in.Text(), err)
		} else if lat, err := c.run(what, endpoint, n); err != nil {
			fmt.Fprintf(out, "error: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		} else {
			for i, d := range lat {
				if i > 0 {
					out.WriteByte(' ')
				}
				out.WriteString(strconv.FormatInt(int64(d), 10))
			}
			out.WriteByte('\n')
		}
		out.Flush()
	}
	return 0
}

// procClient is the client in a process of its own.
type procClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func clientProcess(b *testing.B) *procClient {
	cmd, in, out := selfProcess(b, clientEnv+"=1")
	return &procClient{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20)}
}

// selfProcess starts the test binary again with env added (TestMain makes
// it the echo server or the client it names), its stdin and stdout piped.
func selfProcess(b *testing.B, env string) (*exec.Cmd, io.WriteCloser, io.ReadCloser) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), env)
	cmd.Stderr = os.Stderr
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
	return cmd, in, out
}

func (c *procClient) close() { c.in.Close(); c.cmd.Wait() }

func (c *procClient) run(what, endpoint string, n int) ([]time.Duration, error) {
	if _, err := fmt.Fprintf(c.in, "%s %s %d\n", what, endpoint, n); err != nil {
		return nil, err
	}
	line, err := c.out.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("the client process: expected a line of latencies, read %q: %w", line, err)
	}
	if rest, ok := strings.CutPrefix(line, "error: "); ok {
		return nil, errors.New(strings.TrimSpace(rest))
	}
	var lat []time.Duration
	for _, f := range strings.Fields(line) {
		ns, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("the client process: expected latencies in nanoseconds, read %q", f)
		}
		lat = append(lat, time.Duration(ns))
	}
	return lat, nil
}
