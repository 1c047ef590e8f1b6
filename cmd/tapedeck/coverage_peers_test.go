package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

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
	cleanReport(t, data, 18)
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

// TestReplayV2HTTP replays ts-v2-http (the v2 TypeScript SDK client and
// server over Streamable HTTP, 2026-07-28: a tools/call with its
// Mcp-Param-Region header, subscriptions/listen with its
// notifications/subscriptions/acknowledged and a tools and a prompts
// list_changed on the listen stream, closed by notifications/cancelled) to
// the same client: the same transcript (which counts both list_changed), a
// clean report.
func TestReplayV2HTTP(t *testing.T) {
	peers := mcptest.Peers(t)
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	want, err := os.ReadFile(fixture(t, "ts-v2-http.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	srv := mcptest.Start(t, exec.Command(tapedeck, "replay", "--listen", "127.0.0.1:0", "--report", report, fixture(t, "ts-v2-http.tape.jsonl")))
	m, err := mcptest.WaitForOutput(srv, regexp.MustCompile(`at (http://127\.0\.0\.1:\d+/mcp)`), 20*time.Second)
	if err != nil {
		t.Fatalf("tapedeck replay --listen did not start: %v\n%s", err, srv.Output())
	}
	got, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")},
		peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "v2httpclient.mjs"), m[1])
	if err != nil || got != string(want) {
		t.Fatalf("v2httpclient over tapedeck replay: %v\ngot:\n%s\nwant:\n%s\nstderr:\n%s", err, got, want, stderr)
	}
	srv.Stop(5 * time.Second)
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v\n%s", err, srv.Output())
	}
	cleanReport(t, data, 5)
}

// TestVerifyV2HTTP verifies ts-v2-http against a live v2 SDK server: the
// tools/call of deploy passes only with the Mcp-Param-Region header the
// server checks against the body (verify learns the x-mcp-header
// declaration from the tools/list answer, as the SDK's client does); the
// listen request, never answered on the tape, is skipped.
func TestVerifyV2HTTP(t *testing.T) {
	url := mcptest.StartV2HTTPServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--color=never", "--url", url, fixture(t, "ts-v2-http.tape.jsonl")}, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if err != nil || !strings.Contains(out, "5 calls, 4 passed, 0 failed, 1 skipped") || !strings.Contains(out, "PASS tools/call deploy") {
		t.Fatalf("ts-v2-http against the live v2 server: %v\n%s", err, out)
	}
}

// TestReplayURLElicitation replays ts-sdk-url-elicitation (the TypeScript
// SDK 1.32 client and server of internal/mcptest/ts/urlelicitclient.mjs and
// urlelicitserver.mjs: a tools/call during which the server asks a
// URL-mode elicitation/create and, accepted, sends
// notifications/elicitation/complete) to the same client with the server
// absent: the same transcript (the elicitation it accepted, the completion
// it counted), a clean report.
func TestReplayURLElicitation(t *testing.T) {
	peers := mcptest.Peers(t)
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	want, err := os.ReadFile(fixture(t, "ts-sdk-url-elicitation.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(want), "elicitation complete: auth-1") {
		t.Fatalf("the live transcript lacks the completion notification:\n%s", want)
	}
	report := filepath.Join(t.TempDir(), "report.json")
	got, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")},
		peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "urlelicitclient.mjs"),
		"--stdio", tapedeck, "replay", "--report", report, fixture(t, "ts-sdk-url-elicitation.tape.jsonl"))
	if err != nil || got != string(want) {
		t.Fatalf("urlelicitclient over tapedeck replay: %v\ngot:\n%s\nwant:\n%s\nstderr:\n%s", err, got, want, stderr)
	}
	data, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	cleanReport(t, data, 2)
}

// TestVerifyURLElicitation verifies ts-sdk-url-elicitation against the
// live SDK server: verify answers its URL-mode elicitation/create with the
// recorded acceptance, and the tool's answer (sent after the server's
// notifications/elicitation/complete) matches the recorded one.
func TestVerifyURLElicitation(t *testing.T) {
	peers := mcptest.Peers(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"verify", "--color=never", fixture(t, "ts-sdk-url-elicitation.tape.jsonl"), "--"}, peers.URLElicitServer()...),
		strings.NewReader(""), &stdout, &stderr)
	out := stdout.String() + stderr.String()
	if err != nil || !strings.Contains(out, "2 calls, 2 passed, 0 failed") || !strings.Contains(out, "PASS tools/call authorize") {
		t.Fatalf("ts-sdk-url-elicitation against the live SDK server: %v\n%s", err, out)
	}
}

// cleanReport fails unless data, a replay's --report, counts requests
// requests, all matched, with no divergence and nothing unused.
func cleanReport(t *testing.T, data []byte, requests int) {
	t.Helper()
	var rep struct {
		Requests, Matched int
		Divergences       []json.RawMessage
		Unused            []json.RawMessage
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, data)
	}
	if rep.Requests != requests || rep.Matched != requests || len(rep.Divergences) != 0 || len(rep.Unused) != 0 {
		t.Fatalf("report: want %d requests, %d matched, no divergence, nothing unused; got\n%s", requests, requests, data)
	}
}
