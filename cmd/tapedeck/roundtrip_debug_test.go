package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// "tapedeck verify" and "tapedeck debug" read what "tapedeck record
// --upstream" wrote from clients of other SDKs over Streamable HTTP with
// sessions: verify finds the live server answering as recorded, and the
// debugger, in a real terminal, gives each client what it saw live and
// shows no divergence.
func TestDebugHTTPRoundTrip(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	sdkClient := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	mcpgoClient := mcptest.BuildBinary(t, mcptest.MCPGoClientPackage)
	everything := func(t *testing.T) string { return mcptest.StartEverythingHTTP(t) }
	for _, c := range []struct {
		name     string
		upstream func(t *testing.T) string
		run      func(t *testing.T, url string) string
		same     func(live, got string) bool
	}{
		{"go-sdk", everything, func(t *testing.T, url string) string {
			out, stderr, err := runPeer(t, nil, sdkClient, "--name", "everything", "--roots", "--url", url)
			if err != nil {
				t.Fatalf("go-sdk client against %s: %v\n%s%s", url, err, out, stderr)
			}
			return out
		}, func(a, b string) bool { return a == b }},
		{"typescript", everything, func(t *testing.T, url string) string { return tsClient(t, "--url", url) }, sameExceptProgress},
		// mcp-go's client in the era with sessions, against mcp-go's server
		// (its script calls that server's tools).
		{"mcp-go", func(t *testing.T) string { return mcptest.StartMCPGoServerHTTP(t) }, func(t *testing.T, url string) string {
			return runClient(t, mcpgoClient, "--protocol", "2025-11-25", "--url", url)
		}, sameExceptProgress},
	} {
		t.Run(c.name, func(t *testing.T) {
			upstream := c.upstream(t)
			live := c.run(t, upstream)
			rec := filepath.Join(t.TempDir(), "rec.jsonl")
			proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", rec)
			through := c.run(t, proxied)
			stopRecord()
			if !sameUpToLostProgress(through, live) {
				t.Fatalf("through the recorder:\n%s\nlive:\n%s", through, live)
			}
			// verify drives the live server with the tape and finds it
			// answering as recorded.
			if out, err := exec.Command(tapedeck, "verify", "--color=never", rec, "--url", upstream).CombinedOutput(); err != nil || !strings.Contains(string(out), "PASS") {
				t.Errorf("verify against the live server: %v\n%s", err, out)
			}

			tt := startTmux(t, tapedeck, "debug", rec, "--listen", "127.0.0.1:0")
			url := "http://" + tt.debugAddr() + "/mcp"
			got := c.run(t, url)
			if !c.same(through, got) {
				t.Errorf("against the debugger:\n%s\nrecorded:\n%s\nscreen:\n%s", got, through, tt.screen())
			}
			n := tapeLen(t, rec)
			s := tt.waitFor(5*time.Second, fmt.Sprintf("%d/%d", n, n))
			if strings.Contains(s, "DIVERGED") {
				t.Errorf("the debugger shows a divergence:\n%s", s)
			}
			// The run ends (DELETE, or quiet after the tape's end) having
			// followed the tape.
			tt.waitFor(5*time.Second, "run 1 · before: 1 ✓ 0 ✗")
			tt.keys("q")
			tt.waitExit(5 * time.Second)
		})
	}
}

// tapeLen returns how many messages the tape at path holds.
func tapeLen(t *testing.T, path string) int {
	t.Helper()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	return x.Len()
}
