package record_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
)

// TestMcporterReplaysShimTape records mcporter's own call through the shim
// into mcporter's recordings directory, then has mcporter replay it with no
// server at all (the stdio command is /bin/false): the output must match,
// and a different call must be refused as a mismatch.
func TestMcporterReplaysShimTape(t *testing.T) {
	peers := mcptest.Peers(t)
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	home := t.TempDir()
	tapePath := filepath.Join(home, ".mcporter", "recordings", "shim.ndjson")
	mcporter := func(env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, peers.Mcporter, args...)
		cmd.Dir = home
		cmd.Env = append(append(os.Environ(), "HOME="+home), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	stdio := []string{"call", "--stdio", shim}
	for _, a := range append([]string{"record", "-o", tapePath, "--server", "everything", "--"}, peers.EverythingStdio()...) {
		stdio = append(stdio, "--stdio-arg", a)
	}
	live, err := mcporter(nil, append(stdio, "--name", "everything", "echo", "message=hello")...)
	if err != nil || !strings.Contains(live, "Echo: hello") {
		t.Fatalf("live call through the shim: %v\n%s", err, live)
	}
	tapeSummary(t, tapePath)
	replay := []string{"call", "--stdio", "/bin/false", "--name", "everything", "echo"}
	replayed, err := mcporter([]string{"MCPORTER_REPLAY=shim"}, append(replay, "message=hello")...)
	if err != nil || replayed != live {
		t.Fatalf("mcporter replay: %v\ngot:\n%s\nwant:\n%s", err, replayed, live)
	}
	other, err := mcporter([]string{"MCPORTER_REPLAY=shim"}, append(replay, "message=other")...)
	if err == nil || !strings.Contains(other, "Replay mismatch") {
		t.Errorf("a call not on the tape: %v\n%s\nwant a replay mismatch", err, other)
	}
}

// TestMcporterReplaysProxyTape does the same over streamable HTTP: mcporter
// calls server-everything through the recording proxy, then replays the
// proxy's tape against an address where nothing listens.
func TestMcporterReplaysProxyTape(t *testing.T) {
	peers := mcptest.Peers(t)
	upstream := mcptest.StartEverythingHTTP(t)
	proxied, path := startProxy(t, upstream, func(p *record.Proxy) { p.Server = "everything" })
	home := t.TempDir()
	mcporter := func(env []string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, peers.Mcporter, args...)
		cmd.Dir = home
		cmd.Env = append(append(os.Environ(), "HOME="+home), env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	live, err := mcporter(nil, "call", "--http-url", proxied, "--allow-http", "--name", "everything", "echo", "message=hello")
	if err != nil || !strings.Contains(live, "Echo: hello") {
		t.Fatalf("live call through the proxy: %v\n%s", err, live)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(home, ".mcporter", "recordings", "proxy.ndjson")
	if err := os.MkdirAll(filepath.Dir(rec), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(rec, data, 0o600); err != nil {
		t.Fatal(err)
	}
	nowhere := "http://127.0.0.1:" + strconv.Itoa(mcptest.FreePort(t)) + "/mcp"
	replayed, err := mcporter([]string{"MCPORTER_REPLAY=proxy"}, "call", "--http-url", nowhere, "--allow-http", "--name", "everything", "echo", "message=hello")
	if err != nil || replayed != live {
		t.Fatalf("mcporter replay of the proxy's tape: %v\ngot:\n%s\nwant:\n%s\ntape:\n%s", err, replayed, live, data)
	}
}
