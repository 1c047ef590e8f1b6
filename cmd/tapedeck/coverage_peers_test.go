package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// TestReplayCoverageClient replays ts-everything-coverage (the TypeScript
// SDK client of internal/mcptest/ts/coverageclient.mjs with
// server-everything: ping, roots/list and roots list_changed,
// logging/setLevel, resources/templates/list, completion/complete,
// resources/subscribe, updated and unsubscribe, resources list_changed,
// elicitation/create in form and URL mode, tasks/list, tasks/cancel, a
// call the client cancelled) to the same client with the server absent:
// it must print what it printed live, and the report must be clean.
func TestReplayCoverageClient(t *testing.T) {
	peers := mcptest.Peers(t)
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	want, err := os.ReadFile(fixture(t, "ts-everything-coverage.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	got, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")},
		peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "coverageclient.mjs"),
		"--stdio", tapedeck, "replay", "--report", report, fixture(t, "ts-everything-coverage.tape.jsonl"))
	if err != nil {
		t.Fatalf("coverageclient over tapedeck replay: %v\nstdout:\n%s\nstderr:\n%s", err, got, stderr)
	}
	if got != string(want) {
		t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Requests, Matched int
		Divergences       []json.RawMessage
		Unused            []json.RawMessage
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	if rep.Requests != 18 || rep.Matched != 18 || len(rep.Divergences) != 0 || len(rep.Unused) != 0 {
		t.Fatalf("report: want 18 requests, 18 matched, no divergence, nothing unused; got\n%s", data)
	}
}

// TestVerifyCoverage verifies ts-everything-coverage against a live
// server-everything: every call passes but the one the recorded client
// cancelled. The server's second roots/list (after the client's
// notifications/roots/list_changed) is asked before the next call goes, as
// recorded, so get-roots-list sees both roots; tasks/list's task ids and
// times are the live server's own.
func TestVerifyCoverage(t *testing.T) {
	peers := mcptest.Peers(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"verify", "--color=never", fixture(t, "ts-everything-coverage.tape.jsonl"), "--"}, peers.EverythingStdio()...),
		strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if err != nil || !strings.Contains(out, "18 calls, 17 passed, 0 failed, 1 skipped") {
		t.Fatalf("the coverage tape against server-everything: %v\n%s", err, out)
	}
	for _, m := range []string{"PASS tasks/list", "PASS tasks/cancel", "PASS tools/call get-roots-list", "PASS completion/complete", "PASS resources/unsubscribe"} {
		if !strings.Contains(out, m) {
			t.Errorf("verify's output lacks %q\n%s", m, out)
		}
	}
}
