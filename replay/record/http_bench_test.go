package record_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay/record"
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

// BenchmarkProxySSE compares requests answered with SSE streams through the
// recording proxy (tape on disk) and directly, in the same run: latency of
// one request at a time, and throughput with 8 concurrent clients.
func BenchmarkProxySSE(b *testing.B) {
	up := httptest.NewServer(http.HandlerFunc(sseEcho))
	defer up.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	f, err := os.Create(filepath.Join(b.TempDir(), "bench.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	proxy := httptest.NewServer(&record.Proxy{Upstream: u, Tape: f, Server: "bench"})
	defer proxy.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
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
	direct, proxied := up.URL+"/mcp", proxy.URL+"/mcp"
	for i := range 200 {
		call(direct, i)
		call(proxied, i)
	}
	var d, p []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, call(direct, i))
		p = append(p, call(proxied, i))
	}
	rate := func(endpoint string) float64 {
		n := max(b.N, 2000)
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
	dr, pr := rate(direct), rate(proxied)
	b.StopTimer()
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	b.ReportMetric(us(percentile(d, 0.5)), "direct-p50-µs")
	b.ReportMetric(us(percentile(p, 0.5)-percentile(d, 0.5)), "added-p50-µs")
	b.ReportMetric(us(percentile(p, 0.99)-percentile(d, 0.99)), "added-p99-µs")
	b.ReportMetric(dr, "direct-req/s")
	b.ReportMetric(pr/dr, "proxy/direct")
	b.ReportMetric(0, "ns/op")
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
