package replay

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// trivialHTTP answers every POST from memory: the recorded response with
// the request's id spliced in, as JSON. It is the baseline.
func trivialHTTP(resp []byte) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		writeJSON(w, http.StatusOK, spliceID(resp, []byte(gjson.GetBytes(body, "id").Raw)))
	})
}

// httpRoundTrips posts n requests one at a time and returns the time taken.
func httpRoundTrips(tb testing.TB, c *http.Client, url string, n int, pad string) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchRequest(i+1, 0, pad)))
		if err != nil {
			tb.Fatal(err)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		resp, err := c.Do(req)
		if err != nil {
			tb.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(body, []byte(`"result"`)) {
			tb.Fatalf("round trip %d: %v %s %.200s", i, err, resp.Status, body)
		}
	}
	return time.Since(start)
}

// BenchmarkReplayHTTP measures the Streamable HTTP replay server against a
// trivial net/http handler answering from memory, both on loopback TCP
// with the same keep-alive client and 1 KiB params, in one run. The replay
// runs in loose mode over a tape holding the call once, so each request is
// a body classification, a keyed lookup, a lazy read of the recorded
// response and an id splice, under the handler's lock.
func BenchmarkReplayHTTP(b *testing.B) {
	path := filepath.Join(b.TempDir(), "one.tape.jsonl")
	writeSyntheticTape(b, path, 2, 1024, false)
	pad := strings.Repeat("x", 1024)
	resp := []byte(`{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"answer 0"}]}}`)

	x, err := tape.OpenIndex(path)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	e, err := NewEngine(x, Options{Mode: Loose})
	if err != nil {
		b.Fatal(err)
	}
	h := NewHTTPHandler(e, HTTPOptions{})
	defer h.Close()
	rep := httptest.NewServer(h)
	defer rep.Close()
	base := httptest.NewServer(trivialHTTP(resp))
	defer base.Close()
	c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer c.CloseIdleConnections()

	httpRoundTrips(b, c, base.URL+"/mcp", 200, pad) // warm up
	httpRoundTrips(b, c, rep.URL+"/mcp", 200, pad)
	b.ResetTimer()
	var tBase, tRep time.Duration
	for i := 0; i < b.N; i++ {
		tBase += httpRoundTrips(b, c, base.URL+"/mcp", 1, pad)
		tRep += httpRoundTrips(b, c, rep.URL+"/mcp", 1, pad)
	}
	b.StopTimer()
	b.ReportMetric(float64(tRep.Nanoseconds())/float64(b.N), "replay-ns/roundtrip")
	b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "trivial-ns/roundtrip")
	b.ReportMetric(float64(tRep)/float64(tBase), "roundtrip-ratio")
}
