package record_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/record"
)

// sseEcho answers each POSTed request with an SSE stream of one progress
// notification and the response, like a streamable HTTP server does.
func sseEcho(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	i := bytes.Index(body, []byte(`"id":`))
	id := body[i+5 : i+5+bytes.IndexByte(body[i+5:], ',')]
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Mcp-Session-Id", "bench")
	io.WriteString(w, `event: message`+"\n"+`data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`+"\n\n")
	w.(http.Flusher).Flush()
	io.WriteString(w, "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":"+string(id)+",\"result\":{\"echo\":true}}\n\n")
}

// BenchmarkProxySSE measures requests answered with SSE streams (a
// progress notification and the response) through four paths to the same
// upstream, in the same run:
//
//   - direct: the client to the upstream;
//   - rp: a plain httputil.ReverseProxy, recording nothing: the cost of the
//     extra HTTP hop itself;
//   - rawrec: the same with a trivial recorder that appends the raw request
//     body and each raw chunk of the answer to a file before forwarding it:
//     the floor any recording proxy meets on this machine;
//   - proxy: tapedeck's record.Proxy, tape on disk.
//
// Latency is one request at a time, the paths taken in turn; allocations
// are counted a request for the whole process; throughput is
// 8 concurrent clients, in alternating rounds, reported as medians of the
// per-round ratios (the machine is shared and drifts). The two floors use
// the Proxy's default transport settings and pool its copy buffers
// as it does, so that the gap between them and the proxy is the
// recording's own.
func BenchmarkProxySSE(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(sseEcho))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	dir := b.TempDir()
	f, err := os.Create(filepath.Join(dir, "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	raw, err := os.Create(filepath.Join(dir, "raw.bin"))
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	proxy := httptest.NewServer(&record.Proxy{Upstream: u, Tape: f, Server: "bench"})
	defer proxy.Close()
	rp := httptest.NewServer(floorProxy(u, nil))
	defer rp.Close()
	rawrec := httptest.NewServer(floorProxy(u, &lockedWriter{new(sync.Mutex), raw}))
	defer rawrec.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	payload := strings.Repeat("x", 1024)
	call := func(endpoint string, id int) time.Duration {
		start := time.Now()
		body := `{"jsonrpc":"2.0","id":` + strings.Repeat("1", 1+id%3) + `,"method":"tools/call","params":{"data":"` + payload + `"}}`
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	const (
		direct = iota
		plain
		floor
		tapedeck
	)
	endpoints := []string{up.URL + "/mcp", rp.URL + "/mcp", rawrec.URL + "/mcp", proxy.URL + "/mcp"}
	for i := range 200 {
		for _, e := range endpoints {
			call(e, i)
		}
	}
	lat := make([][]time.Duration, len(endpoints))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, e := range endpoints {
			lat[k] = append(lat[k], call(e, i))
		}
	}
	rate := func(endpoint string) float64 {
		n := max(b.N, 5000)
		var wg sync.WaitGroup
		start := time.Now()
		for w := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := w; i < n; i += 8 {
					call(endpoint, i)
				}
			}()
		}
		wg.Wait()
		return float64(n) / time.Since(start).Seconds()
	}
	rates := make([][]float64, len(endpoints))
	for range 5 {
		for k, e := range endpoints {
			rates[k] = append(rates[k], rate(e))
		}
	}
	// Allocations a request, whole process (client and upstream included):
	// the difference between two paths is theirs.
	allocs := func(endpoint string) float64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range 1000 {
			call(endpoint, i)
		}
		runtime.ReadMemStats(&after)
		return float64(after.Mallocs-before.Mallocs) / 1000
	}
	b.ReportMetric(allocs(endpoints[floor]), "rawrec-allocs/req")
	b.ReportMetric(allocs(endpoints[tapedeck]), "proxy-allocs/req")
	b.StopTimer()
	ratio := func(i, base int) float64 {
		r := make([]float64, len(rates[i]))
		for k := range r {
			r[k] = rates[i][k] / rates[base][k]
		}
		return median(r)
	}
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	added := func(k int, q float64) float64 { return us(percentile(lat[k], q) - percentile(lat[direct], q)) }
	b.ReportMetric(us(percentile(lat[direct], 0.5)), "direct-p50-µs")
	b.ReportMetric(added(plain, 0.5), "rp-added-p50-µs")
	b.ReportMetric(added(floor, 0.5), "rawrec-added-p50-µs")
	b.ReportMetric(added(tapedeck, 0.5), "added-p50-µs")
	b.ReportMetric(added(tapedeck, 0.99), "added-p99-µs")
	b.ReportMetric(median(rates[direct]), "direct-req/s")
	b.ReportMetric(ratio(plain, direct), "rp/direct")
	b.ReportMetric(ratio(floor, direct), "rawrec/direct")
	b.ReportMetric(ratio(tapedeck, direct), "proxy/direct")
	b.ReportMetric(ratio(tapedeck, floor), "proxy/rawrec")
	b.ReportMetric(0, "ns/op")
}

// floorProxy is a plain reverse proxy to u with the Proxy's settings (its
// default transport, pooled copy buffers); with a tape, it appends each raw request body and
// each raw chunk of each answer to it before forwarding them: the least a
// recording proxy can do.
func floorProxy(u *url.URL, tape io.Writer) *httputil.ReverseProxy {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableCompression = true
	t.MaxIdleConnsPerHost = 64
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme, pr.Out.URL.Host, pr.Out.Host = u.Scheme, u.Host, u.Host
		},
		Transport:     t,
		FlushInterval: -1,
		BufferPool:    new(copyBuffers),
	}
	if tape != nil {
		rewrite := rp.Rewrite
		rp.Rewrite = func(pr *httputil.ProxyRequest) {
			rewrite(pr)
			if pr.Out.Body != nil {
				pr.Out.Body = teeBody{pr.Out.Body, tape}
			}
		}
		rp.ModifyResponse = func(resp *http.Response) error {
			resp.Body = teeBody{resp.Body, tape}
			return nil
		}
	}
	return rp
}

// copyBuffers lends a reverse proxy its copy buffers, as the Proxy does.
type copyBuffers struct{ pool sync.Pool }

func (c *copyBuffers) Get() []byte {
	if b, ok := c.pool.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 32<<10)
}

func (c *copyBuffers) Put(b []byte) { c.pool.Put(&b) }

// teeBody writes what is read from a body to a tape before handing it out.
type teeBody struct {
	io.ReadCloser
	tape io.Writer
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	if n > 0 {
		if _, werr := t.tape.Write(p[:n]); werr != nil {
			return n, werr
		}
	}
	return n, err
}

// BenchmarkProxyMemory runs the recording proxy in-process over a long
// session of POSTs answered with SSE streams (TAPEDECK_BENCH_HTTP_MESSAGES
// requests, default 200 000, each a request, a progress notification and
// a response on the tape) by 4 concurrent clients, and reports the heap in
// use after 10 000 requests and at the end. Run it with -benchtime=1x.
func BenchmarkProxyMemory(b *testing.B) {
	total := 200_000
	if v, err := strconv.Atoi(os.Getenv("TAPEDECK_BENCH_HTTP_MESSAGES")); err == nil && v > 10_000 {
		total = v
	}
	up := httptest.NewServer(http.HandlerFunc(sseEcho))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	for range b.N {
		var sink countingDiscard
		var mu sync.Mutex
		proxy := httptest.NewServer(&record.Proxy{Upstream: u, Tape: lockedWriter{&mu, &sink}, Server: "bench"})
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
		body := `{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"data":"` + strings.Repeat("y", 100) + `"}}`
		run := func(n int) {
			var wg sync.WaitGroup
			for w := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < n; i += 4 {
						req, _ := http.NewRequest("POST", proxy.URL+"/mcp", strings.NewReader(body))
						req.Header.Set("Content-Type", "application/json")
						req.Header.Set("Accept", "application/json, text/event-stream")
						resp, err := client.Do(req)
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, resp.Body)
						resp.Body.Close()
					}
				}()
			}
			wg.Wait()
		}
		heap := func() float64 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			return float64(ms.HeapInuse) / 1024
		}
		run(10_000)
		early := heap()
		run(total - 10_000)
		late := heap()
		client.CloseIdleConnections()
		proxy.Close()
		b.ReportMetric(early, "heap-10k-KiB")
		b.ReportMetric(late, fmt.Sprintf("heap-%dk-KiB", total/1000))
		b.ReportMetric(late/early, "heap-ratio")
		b.ReportMetric(float64(sink.n)/float64(total), "tape-B/req")
	}
}

// lockedWriter serializes writes from the proxy's handlers.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
