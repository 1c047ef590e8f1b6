package record_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// benchRules writes a rules file of 20 rules that the echo benchmark's
// messages (method "echo" requests and their answers) never match: tool
// calls by name, other methods, notifications, and expressions guarded by
// a method, as a real fault file holds; with modify, a 21st rule that
// changes every echo request's params.
func benchRules(b *testing.B, dir string, modify bool) string {
	src, err := os.ReadFile("../rules/testdata/nomatch20.yaml")
	if err != nil {
		b.Fatal(err)
	}
	if modify {
		src = append(src, "  - name: modify-echo\n    match: {phase: request, method: echo}\n    action: modify\n    set: {/params/tag: injected}\n"...)
	}
	path := filepath.Join(dir, fmt.Sprintf("rules-%v.yaml", modify))
	if err := os.WriteFile(path, src, 0o644); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkStdioRules measures the shim under a rules file against the
// shim without one, in the same run, alternately: the round-trip p50 with
// 20 rules none of which matches (as a ratio to the plain shim's, and the
// microseconds added, as the median of paired differences), the same with
// one matching modify, and pipelined
// throughput with the 20 rules as a ratio to the plain shim's (medians of
// alternating rounds).
func BenchmarkStdioRules(b *testing.B) {
	tapedeck := mcptest.BuildBinary(b, tapedeckPackage)
	echo := mcptest.BuildBinary(b, echoServerPackage)
	dir := b.TempDir()
	none, modify := benchRules(b, dir, false), benchRules(b, dir, true)
	tapes := []string{filepath.Join(dir, "plain.jsonl"), filepath.Join(dir, "rules.jsonl"), filepath.Join(dir, "modify.jsonl")}
	peers := []*peer{
		startPeer(b, tapedeck, "record", "-o", tapes[0], "--", echo),
		startPeer(b, tapedeck, "record", "--rules", none, "-o", tapes[1], "--", echo),
		startPeer(b, tapedeck, "record", "--rules", modify, "-o", tapes[2], "--", echo),
	}
	payload := strings.Repeat("x", 1024)
	for i := range 200 {
		for _, p := range peers {
			p.roundTrip(b, request(i, payload))
		}
	}
	lat := make([][]time.Duration, len(peers))
	b.ResetTimer()
	n := max(b.N, 6000)
	for i := range n {
		msg := request(i, payload)
		// Each peer takes each place in the order equally often: the one
		// measured right after another pays for its wind-down.
		for j := range peers {
			k := (i + j) % len(peers)
			lat[k] = append(lat[k], peers[k].roundTrip(b, msg))
		}
	}
	var rates [2][]float64
	for round := range 6 {
		for j := range 2 {
			k := (round + j) % 2
			rates[k] = append(rates[k], peers[k].pipeline(b, 50_000, payload))
		}
		for _, t := range tapes {
			if err := os.Truncate(t, 0); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.StopTimer()
	us := func(x time.Duration) float64 { return float64(x) / float64(time.Microsecond) }
	p50 := func(k int) time.Duration { return percentile(lat[k], 0.5) }
	r := make([]float64, len(rates[0]))
	for k := range r {
		r[k] = rates[1][k] / rates[0][k]
	}
	b.ReportMetric(us(p50(0)), "shim-p50-µs")
	b.ReportMetric(float64(p50(1))/float64(p50(0)), "rules20/shim-p50")
	// The median of paired differences (the same request through both,
	// one right after the other) drifts less than a difference of p50s.
	paired := func(k int) time.Duration {
		d := make([]time.Duration, len(lat[k]))
		for i := range d {
			d[i] = lat[k][i] - lat[0][i]
		}
		return percentile(d, 0.5)
	}
	b.ReportMetric(us(paired(1)), "rules20-added-µs")
	b.ReportMetric(us(paired(2)), "modify-added-µs")
	b.ReportMetric(median(r), "rules20/shim-msg/s")
	b.ReportMetric(0, "ns/op")
}
