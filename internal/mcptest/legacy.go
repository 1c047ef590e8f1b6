package mcptest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StartEverythingSSE starts server-everything in legacy HTTP+SSE mode
// (2024-11-05) on a free loopback port and returns its /sse URL. The server
// is stopped at test cleanup.
func StartEverythingSSE(t testing.TB) string {
	t.Helper()
	return startEverything(t, "sse", "/sse")
}

// LegacyTranscript runs a few calls (echo twice, get-sum) with the go-sdk's
// legacy HTTP+SSE client against endpoint and returns what it printed.
func LegacyTranscript(t testing.TB, endpoint string) string {
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
	for _, call := range []mcp.CallToolParams{
		{Name: "echo", Arguments: map[string]any{"message": "one"}},
		{Name: "echo", Arguments: map[string]any{"message": "two"}},
		{Name: "get-sum", Arguments: map[string]any{"a": 2, "b": 3}},
	} {
		res, err := cs.CallTool(ctx, &call)
		if err != nil {
			t.Fatalf("%s: %v", call.Name, err)
		}
		fmt.Fprintf(&b, "%s: %s\n", call.Name, res.Content[0].(*mcp.TextContent).Text)
	}
	return b.String()
}

// SyncBuffer is a bytes.Buffer that one goroutine (a process's output, a
// relay) writes while the test reads it.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what was written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
