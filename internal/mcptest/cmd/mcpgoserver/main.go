// Command mcpgoserver is a small MCP server built on mark3labs/mcp-go's
// Streamable HTTP transport, for tapedeck's tests. mcp-go's own
// examples/everything serves HTTP only on the fixed port 8080, so this
// program serves the part of it the tests use (the tools echo, add and
// longRunningOperation, the prompt simple_prompt, the resource
// test://static/resource, with the same answers) on a port of the kernel's
// choosing: it listens on --listen (default 127.0.0.1:0) and prints its
// endpoint URL, http://HOST:PORT/mcp, as the first line on stdout.
//
// It keeps sessions (Mcp-Session-Id, validated) unless --stateless.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	"github.com/mark3labs/mcp-go/server"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:0", "listen on `ADDR`")
	stateless := flag.Bool("stateless", false, "issue no Mcp-Session-Id")
	flag.Parse()
	if err := run(*listen, *stateless); err != nil {
		fmt.Fprintln(os.Stderr, "mcpgoserver:", err)
		os.Exit(1)
	}
}

func run(listen string, stateless bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	var opts []server.StreamableHTTPOption
	if stateless {
		opts = append(opts, server.WithStateLess(true))
	} else {
		opts = append(opts, server.WithStateful(true))
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", server.NewStreamableHTTPServer(newServer(), opts...))
	srv := &http.Server{Handler: mux}
	fmt.Printf("http://%s/mcp\n", ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}

// newServer builds the server: names and answers as in mcp-go's
// examples/everything.
func newServer() *server.MCPServer {
	s := server.NewMCPServer("mcpgoserver", "1.0.0",
		server.WithResourceCapabilities(true, true),
		server.WithPromptCapabilities(true),
		server.WithToolCapabilities(true),
		server.WithLogging(),
	)
	s.AddResource(mcp.NewResource("test://static/resource", "Static Resource", mcp.WithMIMEType("text/plain")),
		func(context.Context, mcp.ReadResourceRequest) ([]mcp.ResourceContents, error) {
			return []mcp.ResourceContents{mcp.TextResourceContents{URI: "test://static/resource", MIMEType: "text/plain", Text: "This is a sample resource"}}, nil
		})
	s.AddPrompt(mcp.NewPrompt("simple_prompt", mcp.WithPromptDescription("A simple prompt")),
		func(context.Context, mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{
				Description: "A simple prompt without arguments",
				Messages:    []mcp.PromptMessage{{Role: mcp.RoleUser, Content: mcp.NewTextContent("This is a simple prompt without arguments.")}},
			}, nil
		})
	s.AddTool(mcp.NewTool("echo", mcp.WithDescription("Echoes back the input"), mcp.WithString("message", mcp.Description("Message to echo"), mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			message, ok := req.GetArguments()["message"].(string)
			if !ok {
				return mcp.NewToolResultError("invalid message argument: expected string"), nil
			}
			return mcp.NewToolResultText("Echo: " + message), nil
		})
	s.AddTool(mcp.NewTool("add", mcp.WithDescription("Adds two numbers"), mcp.WithNumber("a", mcp.Required()), mcp.WithNumber("b", mcp.Required())),
		func(_ context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			a, ok1 := req.GetArguments()["a"].(float64)
			b, ok2 := req.GetArguments()["b"].(float64)
			if !ok1 || !ok2 {
				return mcp.NewToolResultError("invalid number arguments: expected numeric values for 'a' and 'b'"), nil
			}
			return mcp.NewToolResultText(fmt.Sprintf("The sum of %f and %f is %f.", a, b, a+b)), nil
		})
	s.AddTool(mcp.NewTool("longRunningOperation", mcp.WithDescription("Demonstrates a long running operation with progress updates"),
		mcp.WithNumber("duration", mcp.DefaultNumber(10)), mcp.WithNumber("steps", mcp.DefaultNumber(5))),
		longRunningOperation)
	return s
}

func longRunningOperation(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	duration, _ := req.GetArguments()["duration"].(float64)
	steps, _ := req.GetArguments()["steps"].(float64)
	var token mcp.ProgressToken
	if req.Params.Meta != nil {
		token = req.Params.Meta.ProgressToken
	}
	srv := server.ServerFromContext(ctx)
	for i := 1; i <= int(steps); i++ {
		time.Sleep(time.Duration(duration / steps * float64(time.Second)))
		if token == nil {
			continue
		}
		err := srv.SendNotificationToClient(ctx, "notifications/progress", map[string]any{
			"progress": i, "total": int(steps), "progressToken": token,
			"message": fmt.Sprintf("Server progress %v%%", int(float64(i)*100/steps)),
		})
		if err != nil {
			return nil, fmt.Errorf("failed to send notification: %w", err)
		}
	}
	return mcp.NewToolResultText(fmt.Sprintf("Long running operation completed. Duration: %f seconds, Steps: %d.", duration, int(steps))), nil
}
