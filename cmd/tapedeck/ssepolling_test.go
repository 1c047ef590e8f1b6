package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// pollingClient runs internal/mcptest/ts/pollingclient.mjs (the TypeScript
// SDK's Streamable HTTP client calling the SSE polling example's
// long-task) against url and returns its transcript.
func pollingClient(t *testing.T, url string) string {
	t.Helper()
	peers := mcptest.Peers(t)
	root := mcptest.RepoRoot(t)
	script := filepath.Join(root, "internal", "mcptest", "ts", "pollingclient.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(root, ".peers")}, peers.Node, script, "--url", url)
	if err != nil {
		t.Fatalf("polling client: %v\n%s%s", err, out, stderr)
	}
	return out
}

// httpExchanges returns the params of a tape's $http/exchange records.
func httpExchanges(t *testing.T, path string) []gjson.Result {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []gjson.Result
	for _, line := range strings.Split(string(data), "\n") {
		if gjson.Get(line, "method").String() == "$http/exchange" {
			out = append(out, gjson.Get(line, "params"))
		}
	}
	return out
}

// resumedPOST reports whether a tape's exchanges show a POST's stream
// closed with no message after an event, and a GET resuming from it.
func resumedPOST(ex []gjson.Result) bool {
	for _, p := range ex {
		if p.Get("method").String() != "POST" || !p.Get("messages").Exists() || p.Get("messages").Int() != 0 || p.Get("lastEvent").String() == "" {
			continue
		}
		for _, q := range ex {
			if q.Get("method").String() == "GET" && q.Get("lastEventId").String() == p.Get("lastEvent").String() {
				return true
			}
		}
	}
	return false
}

// TestReplaySSEPolling: the TypeScript SDK's SSE polling example (SEP-1699)
// closes the POST's stream of long-task after its priming event; the SDK's
// client resumes it on a GET with Last-Event-ID and gets the result there,
// after 4 log notifications on the standalone GET stream. Recorded through
// "tapedeck record --upstream" and replayed with the server gone, the
// client prints what it printed live (the result after the 4 logs, every
// time), the report is clean, and the replay, itself recorded through the
// proxy, shows the client resuming the POST's stream with Last-Event-ID.
// Before, replay answered on the POST's stream and never broke it, and the
// result could come before the logs.
func TestReplaySSEPolling(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	upstream, srv := mcptest.StartSSEPollingServer(t)
	dir := t.TempDir()
	tapePath := filepath.Join(dir, "polling.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
	live := pollingClient(t, proxied)
	stopRecord()
	srv.Stop(3 * time.Second)
	want := "log info: Progress: 100% - Complete!\nresult: Long task completed successfully!\nresumption tokens: yes"
	if !strings.Contains(live, want) {
		t.Fatalf("the live run did not end with %q:\n%s", want, live)
	}
	if !resumedPOST(httpExchanges(t, tapePath)) {
		t.Fatalf("the recording shows no POST stream closed after its priming event and resumed with Last-Event-ID")
	}

	for i := range 4 {
		report := filepath.Join(t.TempDir(), "report.json")
		replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", "--report", report, tapePath)
		got := pollingClient(t, replayed)
		out := stopReplay()
		if got != live {
			t.Fatalf("replay %d transcript:\n%s\nlive:\n%s\nreplay:\n%s", i, got, live, out)
		}
		data, err := os.ReadFile(report)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Requests, Matched int
			Divergences       []json.RawMessage
			Unused            []json.RawMessage
		}
		if err := json.Unmarshal(data, &r); err != nil || len(r.Divergences) != 0 || len(r.Unused) != 0 || r.Requests != r.Matched || r.Requests == 0 {
			t.Errorf("replay %d: report not clean (%v): %s", i, err, data)
		}
	}

	// The replay recorded: the client resumed the POST's stream.
	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
	again := filepath.Join(dir, "replayed.jsonl")
	proxied, stopRecord = startTapedeck(t, tapedeck, "record", "--upstream", replayed, "--listen", "127.0.0.1:0", "-o", again)
	got := pollingClient(t, proxied)
	stopRecord()
	stopReplay()
	if got != live {
		t.Fatalf("replay through the recorder:\n%s\nlive:\n%s", got, live)
	}
	if ex := httpExchanges(t, again); !resumedPOST(ex) {
		t.Errorf("the replay, recorded, shows no POST stream broken after its priming event and resumed with Last-Event-ID: %v", ex)
	}
}
