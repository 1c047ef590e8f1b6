package record_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// startEverythingSSE starts server-everything in legacy HTTP+SSE mode
// (2024-11-05) and returns its /sse URL. internal/mcptest has helpers for
// the stdio and streamable HTTP modes only.
func startEverythingSSE(t *testing.T) string {
	t.Helper()
	peers := mcptest.Peers(t)
	port := mcptest.FreePort(t)
	cmd := exec.Command(peers.Node, peers.Everything, "sse")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	p := mcptest.Start(t, cmd)
	if err := mcptest.WaitForPort(p, port, 15*time.Second); err != nil {
		t.Fatalf("server-everything sse: %v\n%s", err, p.Output())
	}
	return fmt.Sprintf("http://127.0.0.1:%d/sse", port)
}

// legacySession runs a few calls with the go-sdk's legacy SSE client and
// returns a transcript.
func legacySession(t *testing.T, endpoint string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "legacy", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.SSEClientTransport{Endpoint: endpoint}, nil)
	if err != nil {
		t.Fatalf("connect %s: %v", endpoint, err)
	}
	defer cs.Close()
	var b strings.Builder
	fmt.Fprintf(&b, "protocol %s\n", cs.InitializeResult().ProtocolVersion)
	for _, args := range []map[string]any{{"message": "one"}, {"message": "two"}} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "echo: %s\n", res.Content[0].(*mcp.TextContent).Text)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(&b, "sum: %s\n", res.Content[0].(*mcp.TextContent).Text)
	return b.String()
}

// TestProxyLegacySSE records the go-sdk's legacy HTTP+SSE client with
// server-everything in sse mode: the endpoint event is rewritten so the
// client posts through the proxy, and the tape pairs every request.
func TestProxyLegacySSE(t *testing.T) {
	upstream := startEverythingSSE(t)
	proxied, path := startProxy(t, upstream, nil)
	direct := legacySession(t, upstream)
	through := legacySession(t, proxied)
	if direct != through {
		t.Errorf("legacy transcript through the proxy differs.\nthrough:\n%s\ndirect:\n%s", through, direct)
	}
	m := tapeSummary(t, path)
	wantMethods(t, m, "send initialize", "send tools/call", "lifecycle $http/endpoint")
	if m["send tools/call"] != 3 {
		t.Errorf("tape has %d tools/call, want 3", m["send tools/call"])
	}
}
