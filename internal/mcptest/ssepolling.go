package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

var ssePollingLine = regexp.MustCompile(`ssepolling: mcp (http://\S+/mcp)`)

// StartSSEPollingServer starts ts/ssepollingserver.mjs, the TypeScript
// SDK's SSE polling example (its "long-task" closes the POST's stream
// after the priming event; the client resumes with Last-Event-ID on a
// GET), listening on a loopback port the system picks, and returns its
// MCP endpoint and process (the test's cleanup stops it).
func StartSSEPollingServer(t testing.TB) (string, *Process) {
	t.Helper()
	peers := Peers(t)
	cmd := exec.Command(peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "ssepollingserver.mjs"))
	cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(peers.Root, ".peers"))
	p := Start(t, cmd)
	m, err := WaitForOutput(p, ssePollingLine, 20*time.Second)
	if err != nil {
		t.Fatalf("mcptest: ssepollingserver.mjs did not start: %v", err)
	}
	return m[1], p
}
