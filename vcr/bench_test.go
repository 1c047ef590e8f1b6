package vcr_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/vcr"
)

// BenchmarkReplayTransport: a go-sdk client calling a tool through the
// in-process replay transport, against the same client and an in-memory
// go-sdk server measured in the same run (the budget: within 2x).
func BenchmarkReplayTransport(b *testing.B) {
	ctx := context.Background()
	call := func(cs *mcp.ClientSession) {
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			b.Fatal(err)
		}
	}
	connect := func(t mcp.Transport) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, t, nil)
		if err != nil {
			b.Fatal(err)
		}
		return cs
	}
	// Baseline: the in-memory server.
	live := connect(goServer(b))
	const baseN = 3000
	start := time.Now()
	for range baseN {
		call(live)
	}
	base := time.Since(start) / baseN
	live.Close()
	// Record one call, then replay it in loose mode, the answer reused.
	path := filepath.Join(b.TempDir(), "bench.tape.jsonl")
	rec, err := vcr.New(path, func() mcp.Transport { return goServer(b) }, vcr.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cs := connect(rec)
	call(cs)
	cs.Close()
	if err := rec.Stop(); err != nil {
		b.Fatal(err)
	}
	r, err := vcr.New(path, nil, vcr.Options{Mode: vcr.ReplayOnly, Match: replay.Loose})
	if err != nil {
		b.Fatal(err)
	}
	cs = connect(r)
	b.ResetTimer()
	for b.Loop() {
		call(cs)
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.StopTimer()
	cs.Close()
	r.Stop()
	b.ReportMetric(float64(per)/float64(time.Microsecond), "µs/call")
	b.ReportMetric(float64(per)/float64(base), "x-inmemory-server")
}

// BenchmarkLoad100k: a 100 000-message tape loaded and its first call
// served through the replay transport (the budget: under 200 ms).
func BenchmarkLoad100k(b *testing.B) {
	path := filepath.Join(b.TempDir(), "big.tape.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	t0 := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	ts := func(i int) string { return t0.Add(time.Duration(i) * time.Millisecond).Format(tape.TimeFormat) }
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}},"_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", ts(0))
	fmt.Fprintf(w, `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1"}},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", ts(1))
	fmt.Fprintf(w, `{"jsonrpc":"2.0","method":"notifications/initialized","_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", ts(2))
	for i := 1; i < 50_000; i++ {
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}},"_meta":{"dir":"send","server":"s","ts":%q}}`+"\n", i, ts(2*i+1))
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"Echo: hi"}]},"_meta":{"dir":"recv","server":"s","ts":%q}}`+"\n", i, ts(2*i+2))
	}
	w.Flush()
	f.Close()
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		r, err := vcr.New(path, nil, vcr.Options{Mode: vcr.ReplayOnly, Match: replay.Loose})
		if err != nil {
			b.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, r, nil)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cs.Close()
		r.Stop()
		b.StartTimer()
	}
	per := b.Elapsed() / time.Duration(b.N)
	b.ReportMetric(float64(per)/float64(time.Millisecond), "ms/load+first-call")
	b.ReportMetric(float64(per)/float64(200*time.Millisecond), "budget-ratio")
}
