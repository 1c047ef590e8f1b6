package mcptest

import (
	"bufio"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// mark3labs/mcp-go (go.mod pins the version) as a test peer: its own
// example programs, unmodified, and the test programs of this package's cmd
// directory built on it.
const (
	// MCPGoEverythingPackage is mcp-go's example server (stdio by default;
	// its HTTP mode listens on the fixed :8080, so HTTP tests use
	// MCPGoServerPackage).
	MCPGoEverythingPackage = "github.com/mark3labs/mcp-go/examples/everything"
	// MCPGoSimpleClientPackage is mcp-go's example client: --stdio "COMMAND
	// ARGS" or --http URL; it prints the server's name, tools and
	// resources.
	MCPGoSimpleClientPackage = "github.com/mark3labs/mcp-go/examples/simple_client"
	// MCPGoClientPackage is a scripted mcp-go client printing a
	// deterministic transcript (cmd/mcpgoclient).
	MCPGoClientPackage = "github.com/tapedeck/tapedeck/internal/mcptest/cmd/mcpgoclient"
	// MCPGoServerPackage is an mcp-go Streamable HTTP server that listens
	// on a port of the kernel's choosing and prints its URL
	// (cmd/mcpgoserver).
	MCPGoServerPackage = "github.com/tapedeck/tapedeck/internal/mcptest/cmd/mcpgoserver"
)

// StartMCPGoServerHTTP builds cmd/mcpgoserver, starts it on 127.0.0.1:0
// with extra arguments, and returns the endpoint URL it printed. The server
// is stopped at test cleanup.
func StartMCPGoServerHTTP(t testing.TB, args ...string) string {
	t.Helper()
	bin := BuildBinary(t, MCPGoServerPackage)
	cmd := exec.Command(bin, append([]string{"--listen", "127.0.0.1:0"}, args...)...)
	r, w := io.Pipe()
	cmd.Stdout = w
	t.Cleanup(func() { w.Close() }) // runs after Start's cleanup has ended the server
	p := Start(t, cmd)
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		if sc.Scan() {
			url <- strings.TrimSpace(sc.Text())
		}
		close(url)
		io.Copy(io.Discard, r) // whatever follows, so the server never blocks
	}()
	select {
	case u, ok := <-url:
		if ok && strings.HasPrefix(u, "http://127.0.0.1:") {
			return u
		}
		t.Fatalf("mcptest: mcpgoserver printed %q, want its URL\n%s", u, p.Output())
	case <-time.After(15 * time.Second):
		t.Fatalf("mcptest: mcpgoserver printed no URL in 15s\n%s", p.Output())
	}
	return ""
}
