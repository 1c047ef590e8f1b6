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

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
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
		writeJSON(w, http.StatusOK, jsonrpc.SpliceID(resp, []byte(gjson.GetBytes(body, "id").Raw)))
	})
}

// httpRoundTrips posts n requests one at a time, the i-th calling key
// key(i), and returns the time taken.
func httpRoundTrips(tb testing.TB, c *http.Client, url string, n int, pad string, key func(int) int) time.Duration {
	start := time.Now()
	for i := 0; i < n; i++ {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(benchRequest(i+1, key(i), pad)))
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
// runs in loose mode. params=same: a tape holding the call once, every
// request identical, so the engine's caches (keys of raw params, recorded
// answers) always hit: the best case. params=distinct: a tape of 4 096
// different calls, each request another one in an order that revisits a
// call only after 4 096 others, so the caches (1 024 entries) always miss:
// each request is a canonicalization and hash of its params, a keyed
// lookup, a read of the recorded answer from the tape, and an id splice.
func BenchmarkReplayHTTP(b *testing.B) {
	const calls = 4096
	for _, bc := range []struct {
		name     string
		distinct bool
		key      func(int) int
	}{
		{"params=same", false, func(int) int { return 0 }},
		{"params=distinct", true, func(i int) int { return (i * 2741) % calls }}, // 2741 is prime: a permutation
	} {
		b.Run(bc.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.tape.jsonl")
			n := 2
			if bc.distinct {
				n = 2 * calls
			}
			writeSyntheticTape(b, path, n, 1024, bc.distinct)
			pad := strings.Repeat("x", 1024)
			resp := []byte(`{"jsonrpc":"2.0","id":0,"result":{"content":[{"type":"text","text":"answer 0"}]}}`)

			x, err := tape.OpenIndex(path)
			if err != nil {
				b.Fatal(err)
			}
			defer x.Close()
			e, err := NewEngine(x, EngineOptions{Mode: Loose})
			if err != nil {
				b.Fatal(err)
			}
			h := handlerFor(b, e, HTTPOptions{})
			defer h.Close()
			rep := httptest.NewServer(h)
			defer rep.Close()
			base := httptest.NewServer(trivialHTTP(resp))
			defer base.Close()
			c := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
			defer c.CloseIdleConnections()

			httpRoundTrips(b, c, base.URL+"/mcp", 200, pad, bc.key) // warm up
			// Serve every call once: the keyed index is filled, as in a
			// long replay; what is timed is the steady state.
			httpRoundTrips(b, c, rep.URL+"/mcp", max(200, n/2), pad, func(i int) int { return bc.key(i) % max(1, n/2) })
			b.ResetTimer()
			var tBase, tRep time.Duration
			for i := 0; i < b.N; i++ {
				k := bc.key(i)
				tBase += httpRoundTrips(b, c, base.URL+"/mcp", 1, pad, func(int) int { return k })
				tRep += httpRoundTrips(b, c, rep.URL+"/mcp", 1, pad, func(int) int { return k })
			}
			b.StopTimer()
			b.ReportMetric(float64(tRep.Nanoseconds())/float64(b.N), "replay-ns/roundtrip")
			b.ReportMetric(float64(tBase.Nanoseconds())/float64(b.N), "trivial-ns/roundtrip")
			b.ReportMetric(float64(tRep)/float64(tBase), "roundtrip-ratio")
		})
	}
}
