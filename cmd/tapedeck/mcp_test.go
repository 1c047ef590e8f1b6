package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// mcpLibrary puts a fixture tape in a fresh library (XDG_STATE_HOME) and
// returns its path.
func mcpLibrary(t *testing.T) string {
	t.Helper()
	tapes := libraryState(t)
	b, err := os.ReadFile("../../testdata/sdk-everything-2025-06-18.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(tapes, "everything.jsonl")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// tapedeck mcp over stdio, the built binary driven by the go-sdk client:
// the library's tape is listed and read, a path outside it refused.
func TestMCPStdioSDKClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	tp := mcpLibrary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.Command(tapedeck, "mcp")
	cmd.Dir = t.TempDir()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	s, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(ctx, &mcp.CallToolParams{Name: "list_tapes"})
	if err != nil || res.IsError {
		t.Fatalf("list_tapes: %+v %v", res, err)
	}
	tapes, _ := res.StructuredContent.(map[string]any)["tapes"].([]any)
	if len(tapes) != 1 || tapes[0].(map[string]any)["path"] != tp {
		t.Fatalf("list_tapes: %v, expected %s", res.StructuredContent, tp)
	}
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "open_at", Arguments: map[string]any{"tape": tp, "seq": 3}})
	if err != nil || res.IsError || res.StructuredContent.(map[string]any)["command"] != "tapedeck open "+tp+":3" {
		t.Fatalf("open_at: %+v %v", res, err)
	}
	outside := filepath.Join(t.TempDir(), "x.jsonl")
	res, err = s.CallTool(ctx, &mcp.CallToolParams{Name: "tape_stats", Arguments: map[string]any{"tape": outside}})
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "outside the library") {
		t.Fatalf("tape_stats outside the library: %+v %v", res, err)
	}
}

// The TypeScript SDK's client lists tapedeck mcp's tools and calls them;
// it validates each structuredContent against the tool's outputSchema.
func TestMCPTSClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	mcpLibrary(t)
	peers := mcptest.Peers(t)
	script := filepath.Join(peers.Root, "internal", "mcptest", "ts", "mcpclient.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")}, peers.Node, script, tapedeck, "mcp")
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s%s", err, out, stderr)
	}
	want := `init: server tapedeck
tools: check_tape diff_tapes explain_report get_call list_tapes open_at search_tapes tape_stats
output schemas: 8
list_tapes: 1 tape(s), calls 14
tape_stats: 35 messages
outside: refused
`
	if out != want {
		t.Errorf("TypeScript client's transcript:\n%s\nexpected:\n%s", out, want)
	}
}

// --listen takes a loopback address only.
func TestMCPListenLoopbackOnly(t *testing.T) {
	libraryState(t)
	_, errOut, code := runCLI(t, "mcp", "--listen", "0.0.0.0:7799")
	if code != 1 || !strings.Contains(errOut, "not a loopback address") {
		t.Errorf("mcp --listen 0.0.0.0:7799: exit %d, %q", code, errOut)
	}
}
