package mcptest_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

func TestPeers(t *testing.T) {
	t.Parallel()
	p := mcptest.Peers(t)
	for _, f := range []string{p.Node, p.Everything, p.Mcporter} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(p.Root, "go.mod")); err != nil {
		t.Errorf("Root %s has no go.mod: %v", p.Root, err)
	}
}

// wantTranscript compares got with a committed transcript in testdata/.
func wantTranscript(t *testing.T, name string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(transcriptPath(t, name))
	if err != nil {
		t.Fatalf("transcript missing (remake with go test ./internal/mcptest -run TestFixtures -update): %v", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("transcript differs from testdata/%s.transcript.txt\ngot:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestSDKClientEverythingStdio(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	args := append([]string{"--name", "everything", "--"}, mcptest.Peers(t).EverythingStdio()...)
	first := runClient(t, client, args...)
	second := runClient(t, client, args...)
	if !bytes.Equal(first, second) {
		t.Errorf("two runs differ\nfirst:\n%s\nsecond:\n%s", first, second)
	}
	wantTranscript(t, "sdk-everything-discover", first)
}

func TestSDKClientEverythingForcedInitialize(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tape := filepath.Join(t.TempDir(), "tape.jsonl")
	args := append([]string{"--name", "everything", "--protocol", "2025-06-18", "--steps", "init,tools,echo", "--tape", tape, "--"},
		mcptest.Peers(t).EverythingStdio()...)
	out := runClient(t, client, args...)
	if !bytes.Contains(out, []byte("init: protocol 2025-06-18,")) {
		t.Errorf("transcript does not show protocol 2025-06-18:\n%s", out)
	}
	data, err := os.ReadFile(tape)
	if err != nil {
		t.Fatal(err)
	}
	sent := methods(checkTape(t, data), "send")
	if len(sent) == 0 || sent[0] != "initialize" || slices.Contains(sent, "server/discover") {
		t.Errorf("client sent %v, want initialize first and no server/discover", sent)
	}
}

func TestSDKClientDiscoverProbe(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tape := filepath.Join(t.TempDir(), "tape.jsonl")
	args := append([]string{"--name", "everything", "--steps", "init", "--tape", tape, "--"}, mcptest.Peers(t).EverythingStdio()...)
	runClient(t, client, args...)
	data, err := os.ReadFile(tape)
	if err != nil {
		t.Fatal(err)
	}
	entries := checkTape(t, data)
	sent := methods(entries, "send")
	if want := []string{"server/discover", "initialize", "notifications/initialized"}; !slices.Equal(sent, want) {
		t.Errorf("client sent %v, want %v", sent, want)
	}
	if got := methods(entries, "lifecycle"); !slices.Equal(got, []string{"$transport/start", "$transport/close"}) {
		t.Errorf("lifecycle records %v", got)
	}
}

func TestSDKClientEverythingHTTP(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	url := mcptest.StartEverythingHTTP(t)
	tape := filepath.Join(t.TempDir(), "tape.jsonl")
	out := runClient(t, client, "--name", "everything", "--roots", "--url", url, "--tape", tape)
	wantTranscript(t, "sdk-everything-http", out)
	data, err := os.ReadFile(tape)
	if err != nil {
		t.Fatal(err)
	}
	entries := checkTape(t, data)
	var sessions, statuses int
	for _, e := range entries {
		if _, ok := e.raw["_meta"]; !ok {
			continue
		}
		meta := string(e.raw["_meta"])
		if strings.Contains(meta, `"session":"`) {
			sessions++
		}
		if strings.Contains(meta, `"status":`) {
			statuses++
		}
	}
	if sessions == 0 || statuses == 0 {
		t.Errorf("HTTP tape has %d lines with a session and %d with a status, want some of each", sessions, statuses)
	}
	if !slices.Contains(methods(entries, "recv"), "roots/list") {
		t.Errorf("no server roots/list request on the HTTP tape (standalone SSE stream missing?)")
	}
}

func TestSDKServerVariants(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	a := runClient(t, client, "--name", "sdk", "--roots", "--", server)
	wantTranscript(t, "sdk-sdkserver", a)
	b := runClient(t, client, "--name", "sdk", "--roots", "--", server, "--variant", "B")
	wantB := bytes.Replace(a, []byte("the answer is 42"), []byte("the answer is 43"), 1)
	if !bytes.Equal(b, wantB) {
		t.Errorf("variant B transcript:\n%s\nwant variant A's with answer 43:\n%s", b, wantB)
	}
}

func TestSDKServerHTTP(t *testing.T) {
	t.Parallel()
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)

	// Stateless, the Go SDK's HTTP server speaks 2026-07-28, as over stdio,
	// but rejects logging/setLevel (the client sends it without the identity
	// _meta) and sends JSON-RPC errors with HTTP 400.
	out := runClient(t, client, "--name", "sdk", "--roots", "--url", mcptest.StartSDKServerHTTP(t, "--stateless"))
	wantTranscript(t, "sdk-sdkserver-http-stateless", out)

	// With sessions it offers 2025-11-25 at most; the rest is the same.
	out = runClient(t, client, "--name", "sdk", "--roots", "--url", mcptest.StartSDKServerHTTP(t))
	out = bytes.Replace(out, []byte("protocol 2025-11-25,"), []byte("protocol 2026-07-28,"), 1)
	wantTranscript(t, "sdk-sdkserver", out)
}

func TestSDKClientHelp(t *testing.T) {
	t.Parallel()
	for _, pkg := range []string{mcptest.SDKClientPackage, mcptest.SDKServerPackage} {
		out, err := exec.Command(mcptest.BuildBinary(t, pkg), "--help").CombinedOutput()
		if err != nil {
			t.Errorf("%s --help: %v\n%s", pkg, err, out)
		}
		if !bytes.Contains(out, []byte("Usage")) {
			t.Errorf("%s --help prints no usage:\n%s", pkg, out)
		}
	}
}

// TestMcporterRecordFormat guards what testdata/README.md says about
// mcporter's recordings: where they go, their modes and their lines.
func TestMcporterRecordFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "tape.jsonl")
	mcporterFixture("echo", "message:hi")(t, path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := checkTape(t, data)
	if got, want := methods(entries, "send"), []string{"initialize", "notifications/initialized", "tools/call"}; !slices.Equal(got, want) {
		t.Errorf("mcporter sent %v, want %v", got, want)
	}
	first, last := entries[0], entries[len(entries)-1]
	if first.Method != "$transport/start" || last.Method != "$transport/close" {
		t.Errorf("first and last lines are %q and %q, want $transport/start and $transport/close", first.Method, last.Method)
	}
	if string(entries[1].ID) != "0" {
		t.Errorf("mcporter's first request id is %s, want 0", entries[1].ID)
	}
}

func TestStartStopsProcessGroup(t *testing.T) {
	t.Parallel()
	// A parent that ignores SIGTERM with a child: Stop must still end both.
	p := mcptest.Start(t, exec.Command("sh", "-c", `trap "" TERM; sleep 30 & echo started; wait`))
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(p.Output(), "started") {
		if time.Now().After(deadline) {
			t.Fatalf("child did not start: %q", p.Output())
		}
		time.Sleep(10 * time.Millisecond)
	}
	start := time.Now()
	p.Stop(200 * time.Millisecond)
	if exited, _ := p.Exited(); !exited {
		t.Errorf("process still running after Stop")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Stop took %v", d)
	}
}
