package record_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/record"
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

// BenchmarkProxyShadow measures what shadowing adds on the client's path:
// the same upstream A (answering after 200 µs) through two proxies taken
// in turn, one recording plainly, one recording with --shadow at a B ten
// times slower (2 ms). B falls behind at once (the client asks faster than
// B answers): the copies past its bounded queue and in-flight limit are
// dropped, never waited for. It reports the client-visible p50 and p99 of
// both, their ratios (shadow/plain), and the lane's records.
// TAPEDECK_BENCH_SHADOW=off runs the second proxy plain too: its ratios
// show the noise of the machine.
func BenchmarkProxyShadow(b *testing.B) {
	const aDelay = 200 * time.Microsecond
	up := httptest.NewServer(jsonEcho(aDelay))
	defer up.Close()
	slow := httptest.NewServer(jsonEcho(10 * aDelay))
	defer slow.Close()
	u, _ := url.Parse(up.URL + "/mcp")
	bu, _ := url.Parse(slow.URL + "/mcp")
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
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	defer client.CloseIdleConnections()
	call := func(endpoint, body string) time.Duration {
		start := time.Now()
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", "bench")
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return time.Since(start)
	}
	endpoints := []string{plain.URL + "/mcp", shadowed.URL + "/mcp"}
	for _, e := range endpoints {
		call(e, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}`)
	}
	payload := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"data":"` + strings.Repeat("x", 512) + `"}}}`
	for range 100 {
		for _, e := range endpoints {
			call(e, payload)
		}
	}
	lat := make([][]time.Duration, len(endpoints))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for k, e := range endpoints {
			lat[k] = append(lat[k], call(e, payload))
		}
	}
	b.StopTimer()
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
	b.ReportMetric(float64(p50s)/float64(p50p), "shadow/plain-p50")
	b.ReportMetric(float64(p99s)/float64(p99p), "shadow/plain-p99")
	tp, _ := os.ReadFile(fs.Name())
	b.ReportMetric(float64(bytes.Count(tp, []byte(`"shadow":true,"shadowOf"`))), "lane-records")
	b.ReportMetric(0, "ns/op")
}
