// Command sdkserver is a small deterministic MCP server built on the official
// Go SDK, for tapedeck's tests. It serves over stdio by default, or over
// streamable HTTP at /mcp with --listen.
//
// Tools:
//
//	echo {message}      returns "Echo: <message>"
//	add {a, b}          returns "<a> + <b> = <sum>" and structured {"sum": N}
//	answer {}           returns "the answer is 42" (variant A) or 43 (variants B and C; C revises its description)
//	fail {}             a tool error: isError result "fail: this tool always fails"
//	slow {ms, steps}    sleeps ms in steps, sending progress (when asked) and
//	                    info log messages (when a level is set); returns "slept <ms> ms in <steps> steps"
//	roots {}            asks the client for its roots (a roots/list request for
//	                    clients before 2026-07-28, an input_required result for
//	                    later ones) and lists them
//
// Usage:
//
//	sdkserver [--listen ADDR [--stateless]] [--variant A|B] [--name NAME]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "sdkserver:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("sdkserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "", "serve streamable HTTP at http://`ADDR`/mcp (e.g. 127.0.0.1:8080) instead of stdio")
	variant := fs.String("variant", envOr("SDKSERVER_VARIANT", "A"), "answer variant `A|B|C`: the answer tool returns 42 for A, 43 for B and C; C also revises its description (env SDKSERVER_VARIANT)")
	name := fs.String("name", "sdkserver", "server `name` in the initialize result")
	stateless := fs.Bool("stateless", false, "with --listen: serve statelessly (no Mcp-Session-Id, no GET stream); the Go SDK's\nHTTP server offers protocol 2026-07-28 only in this mode, 2025-11-25 otherwise")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: sdkserver [flags]\n\nA deterministic MCP server on the Go SDK, for tests.\nTools: echo, add, answer, fail, slow, roots.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *variant != "A" && *variant != "B" && *variant != "C" {
		return fmt.Errorf("--variant %q: want A, B or C", *variant)
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	newServer := func() *mcp.Server { return newServer(*name, *variant, logger) }

	if *listen == "" {
		return newServer().Run(ctx, &mcp.StdioTransport{})
	}
	server := newServer()
	handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server },
		&mcp.StreamableHTTPOptions{Stateless: *stateless})
	mux := http.NewServeMux()
	mux.Handle("/mcp", handler)
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	// The bound address: --listen 127.0.0.1:0 lets the system pick a port.
	fmt.Fprintf(stderr, "sdkserver: listening on http://%s/mcp\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		// Standalone SSE streams never go idle: give requests a moment, then
		// cut what is left rather than keep a test waiting.
		shutdown, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
		defer cancel()
		if err := srv.Shutdown(shutdown); err != nil {
			return srv.Close()
		}
		return nil
	}
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

type echoIn struct {
	Message string `json:"message" jsonschema:"the message to echo"`
}

type addIn struct {
	A float64 `json:"a" jsonschema:"first number"`
	B float64 `json:"b" jsonschema:"second number"`
}

type addOut struct {
	Sum float64 `json:"sum"`
}

type slowIn struct {
	MS    int `json:"ms,omitempty" jsonschema:"total milliseconds to sleep (default 200)"`
	Steps int `json:"steps,omitempty" jsonschema:"number of steps, one progress notification each (default 2)"`
}

type empty struct{}

func text(format string, a ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, a...)}}}
}

// answerC is variant C's input of the answer tool: one optional field more.
type answerC struct {
	Detail bool `json:"detail,omitempty" jsonschema:"explain the answer"`
}

func newServer(name, variant string, logger *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1.0.0"}, &mcp.ServerOptions{Logger: logger})

	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "Echoes back the message"},
		func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
			return text("Echo: %s", in.Message), nil, nil
		})

	mcp.AddTool(s, &mcp.Tool{Name: "add", Description: "Adds two numbers"},
		func(_ context.Context, _ *mcp.CallToolRequest, in addIn) (*mcp.CallToolResult, addOut, error) {
			sum := in.A + in.B
			return text("%g + %g = %g", in.A, in.B, sum), addOut{Sum: sum}, nil
		})

	answer := func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		if variant == "B" || variant == "C" {
			return text("the answer is 43"), nil, nil
		}
		return text("the answer is 42"), nil, nil
	}
	if variant == "C" {
		// A revised description and input schema: a "rug pull" for the
		// drift and diff tests.
		mcp.AddTool(s, &mcp.Tool{Name: "answer", Description: "Returns the answer, revised (variant C)"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ answerC) (*mcp.CallToolResult, any, error) {
				return answer(ctx, req, nil)
			})
	} else {
		mcp.AddTool(s, &mcp.Tool{Name: "answer", Description: "Returns the answer (changes with --variant)"},
			func(ctx context.Context, req *mcp.CallToolRequest, _ empty) (*mcp.CallToolResult, any, error) {
				return answer(ctx, req, nil)
			})
	}

	mcp.AddTool(s, &mcp.Tool{Name: "fail", Description: "Always fails with a tool error"},
		func(context.Context, *mcp.CallToolRequest, empty) (*mcp.CallToolResult, any, error) {
			return nil, nil, errors.New("fail: this tool always fails")
		})

	mcp.AddTool(s, &mcp.Tool{Name: "slow", Description: "Sleeps, reporting progress and logging each step"},
		func(ctx context.Context, req *mcp.CallToolRequest, in slowIn) (*mcp.CallToolResult, any, error) {
			if in.MS <= 0 {
				in.MS = 200
			}
			if in.Steps <= 0 {
				in.Steps = 2
			}
			token := req.Params.GetProgressToken()
			for i := 1; i <= in.Steps; i++ {
				select {
				case <-ctx.Done():
					return nil, nil, ctx.Err()
				case <-time.After(time.Duration(in.MS/in.Steps) * time.Millisecond):
				}
				if token != nil {
					if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
						ProgressToken: token, Progress: float64(i), Total: float64(in.Steps),
						Message: fmt.Sprintf("step %d of %d", i, in.Steps),
					}); err != nil {
						return nil, nil, err
					}
				}
				if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{
					Level: "info", Logger: "sdkserver", Data: fmt.Sprintf("slow: step %d of %d", i, in.Steps),
				}); err != nil {
					return nil, nil, err
				}
			}
			return text("slept %d ms in %d steps", in.MS, in.Steps), nil, nil
		})

	// roots is written in the multi round-trip style: the SDK turns the input
	// request into a roots/list request for older clients, and into an
	// input_required result (then a retry with inputResponses) for 2026-07-28 ones.
	s.AddTool(&mcp.Tool{Name: "roots", Description: "Lists the client's roots", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			resp, ok := req.Params.InputResponses["roots"]
			if !ok {
				return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"roots": &mcp.ListRootsParams{}}}, nil
			}
			list, ok := resp.(*mcp.ListRootsResult)
			if !ok {
				return nil, fmt.Errorf("roots: input response is %T, want *mcp.ListRootsResult", resp)
			}
			var uris []string
			for _, r := range list.Roots {
				uris = append(uris, r.URI)
			}
			slices.Sort(uris)
			return text("%d root(s): %s", len(uris), strings.Join(uris, " ")), nil
		})
	return s
}
