package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// taskClient runs internal/mcptest/ts/taskclient.mjs (the TypeScript SDK's
// task APIs) with args and returns its transcript.
func taskClient(t *testing.T, args ...string) string {
	t.Helper()
	peers := mcptest.Peers(t)
	root := mcptest.RepoRoot(t)
	script := filepath.Join(root, "internal", "mcptest", "ts", "taskclient.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(root, ".peers")}, append([]string{peers.Node, script}, args...)...)
	if err != nil {
		t.Fatalf("task client %v: %v\n%s%s", args, err, out, stderr)
	}
	return out
}

// TestReplayTaskPolledDifferently: a task recorded from server-everything
// (simulate-research-query, 3 polls at 300 ms through "tapedeck record")
// replays, with the server gone, to the same client polling fewer, more,
// faster and slower than recorded, at once and at the recorded speed:
// each prints what the live run printed and the report is clean. Before,
// a client polling less got -32090 on its tasks/result, and keyed replay
// reported the polls it did not make unused.
func TestReplayTaskPolledDifferently(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	dir := t.TempDir()
	tapePath := filepath.Join(dir, "task.jsonl")
	live := taskClient(t, append([]string{"--polls", "3", "--interval", "300", "--stdio", tapedeck, "record", "-o", tapePath, "--"}, peers.EverythingStdio()...)...)
	if !strings.Contains(live, "result: # Research Report") {
		t.Fatalf("the live run did not get the report:\n%s", live)
	}
	for _, tt := range []struct {
		name  string
		flags []string
	}{
		{"result at once", []string{"--polls", "0"}},
		{"fewer, faster", []string{"--polls", "1", "--interval", "50"}},
		{"more, faster", []string{"--polls", "12", "--interval", "50"}},
		{"more, slower", []string{"--polls", "12", "--interval", "700"}},
		{"more, faster, recorded speed", []string{"--polls", "12", "--interval", "100", "--speed"}},
		{"keyed", []string{"--polls", "6", "--interval", "50", "--match"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			flags, replayFlags := tt.flags, []string{}
			switch flags[len(flags)-1] {
			case "--speed":
				flags, replayFlags = flags[:len(flags)-1], []string{"--speed", "1"}
			case "--match":
				flags, replayFlags = flags[:len(flags)-1], []string{"--match", "keyed"}
			}
			report := filepath.Join(t.TempDir(), "report.json")
			args := append(append([]string{}, flags...), "--stdio", tapedeck, "replay", "--report", report)
			args = append(append(args, replayFlags...), tapePath)
			got := taskClient(t, args...)
			if got != live {
				t.Errorf("replayed transcript:\n%s\nlive:\n%s", got, live)
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
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatal(err)
			}
			if len(r.Divergences) != 0 || len(r.Unused) != 0 || r.Requests != r.Matched {
				t.Errorf("report not clean: %s", data)
			}
		})
	}
}

// TestReplayClientTask: trigger-sampling-request-async, where the server
// has the client run the sampling as a task and polls it, recorded through
// "tapedeck record", replays with the server gone to the TypeScript SDK's
// client finishing its task sooner and later than recorded: the same
// transcript (task ids masked), a clean report. Before, the client's own
// task id and times were divergences (exit 1).
func TestReplayClientTask(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	tapePath := filepath.Join(t.TempDir(), "sampling.jsonl")
	live := taskClient(t, append([]string{"--scenario", "sampling", "--interval", "500", "--stdio", tapedeck, "record", "-o", tapePath, "--"}, peers.EverythingStdio()...)...)
	if !strings.Contains(live, "[COMPLETED]") {
		t.Fatalf("the live run did not complete:\n%s", live)
	}
	for _, interval := range []string{"50", "1500"} {
		t.Run(interval, func(t *testing.T) {
			report := filepath.Join(t.TempDir(), "report.json")
			got := taskClient(t, "--scenario", "sampling", "--interval", interval, "--stdio", tapedeck, "replay", "--report", report, tapePath)
			if got != live {
				t.Errorf("replayed transcript:\n%s\nlive:\n%s", got, live)
			}
			data, err := os.ReadFile(report)
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Divergences []json.RawMessage
				Unused      []json.RawMessage
			}
			if err := json.Unmarshal(data, &r); err != nil || len(r.Divergences) != 0 || len(r.Unused) != 0 {
				t.Errorf("report not clean (%v): %s", err, data)
			}
		})
	}
}
