// Command mcpgoclient is a small MCP client built on mark3labs/mcp-go, for
// tapedeck's tests: a peer of another SDK than sdkclient's. It connects to
// one server, runs a fixed script against it and prints a deterministic
// transcript of what came back, so a test can compare runs with and without
// tapedeck's recorder or a replay in between.
//
// Run mcpgoclient --help for its flags and the steps of the script.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "mcpgoclient:", err)
		os.Exit(1)
	}
}

const usage = `Usage:
  mcpgoclient [flags] -- COMMAND [ARG...]   a stdio server, started as a child process
  mcpgoclient [flags] --url URL             a Streamable HTTP server

The script, in order (--steps picks a subset); the tool, prompt and resource
names are those of mcp-go's examples/everything server (and cmd/mcpgoserver):
  init       initialize (or the SDK's server/discover probe): protocol, server
             name and version, capability keys
  tools      tools/list: the sorted tool names
  echo       tools/call echo {message}
  sum        tools/call add {a:2,b:3}
  progress   tools/call longRunningOperation {duration:0.3,steps:3} with a
             progressToken: the progress notifications, then the result
  error      tools/call of an unknown tool with no arguments (mcp-go leaves
             "arguments" out; a JSON-RPC error), then resources/read of an
             unknown URI
  toolerror  tools/call echo {} (a tool error: isError)
  prompts    prompts/list, then prompts/get simple_prompt
  resources  resources/list (first page), then resources/read of the first

The steps init, tools, echo, sum, error and resources send the requests of
sdkclient's steps of those names against the same server, so that a tape of
one replays to the other.

Flags:
`

var allSteps = []string{"init", "tools", "echo", "sum", "progress", "error", "toolerror", "prompts", "resources"}

type options struct {
	url      string
	argv     []string
	protocol string
	message  string
	steps    []string
	timeout  time.Duration
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("mcpgoclient", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o options
	fs.StringVar(&o.url, "url", "", "connect to the Streamable HTTP server at `URL`")
	fs.StringVar(&o.protocol, "protocol", "", "protocol `version` to pin; empty means the SDK's default, which probes\nserver/discover (2026-07-28) first and falls back to initialize; a version\nbefore 2026-07-28 sends initialize directly (over HTTP: a session)")
	fs.StringVar(&o.message, "message", "hi", "the echo `message`")
	steps := fs.String("steps", strings.Join(allSteps, ","), "comma-separated `steps` to run")
	fs.DurationVar(&o.timeout, "timeout", 60*time.Second, "give up after `duration`")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.argv = fs.Args()
	switch {
	case o.url != "" && len(o.argv) > 0:
		return errors.New("give --url or a command, not both")
	case o.url == "" && len(o.argv) == 0:
		fs.Usage()
		return errors.New("no server: give --url or a command after --")
	}
	for _, s := range strings.Split(*steps, ",") {
		s = strings.TrimSpace(s)
		if !slices.Contains(allSteps, s) {
			return fmt.Errorf("--steps: unknown step %q (known: %s)", s, strings.Join(allSteps, ","))
		}
		o.steps = append(o.steps, s)
	}

	ctx, cancel := context.WithTimeout(ctx, o.timeout)
	defer cancel()
	s, err := connect(ctx, o, stdout)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer s.c.Close()
	for _, step := range o.steps {
		if err := s.run(ctx, step); err != nil {
			return fmt.Errorf("step %s: %w", step, err)
		}
	}
	return nil
}

// session is the connected client and what its notifications brought.
type session struct {
	o    options
	out  io.Writer
	c    *client.Client
	init *mcp.InitializeResult

	mu       sync.Mutex
	progress map[string][]string // by progress token: "progress/total"
	changed  chan struct{}       // closed and replaced on every notification
}

func connect(ctx context.Context, o options, out io.Writer) (*session, error) {
	var t transport.Interface
	if o.url != "" {
		h, err := transport.NewStreamableHTTP(o.url)
		if err != nil {
			return nil, err
		}
		t = h
	} else {
		// The server's stderr is not read: it is no part of the transcript.
		t = transport.NewStdio(o.argv[0], nil, o.argv[1:]...)
	}
	var copts []client.ClientOption
	if o.protocol != "" {
		copts = append(copts, client.WithProtocolVersion(o.protocol))
	}
	s := &session{o: o, out: out, c: client.NewClient(t, copts...), progress: map[string][]string{}, changed: make(chan struct{})}
	if err := s.c.Start(ctx); err != nil {
		return nil, err
	}
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != "notifications/progress" {
			return
		}
		f := n.Params.AdditionalFields
		token := fmt.Sprint(f["progressToken"])
		s.mu.Lock()
		defer s.mu.Unlock()
		s.progress[token] = append(s.progress[token], fmt.Sprintf("%v/%v", f["progress"], f["total"]))
		close(s.changed)
		s.changed = make(chan struct{})
	})
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = o.protocol
	req.Params.ClientInfo = mcp.Implementation{Name: "mcpgoclient", Version: "1.0.0"}
	res, err := s.c.Initialize(ctx, req)
	if err != nil {
		s.c.Close()
		return nil, err
	}
	s.init = res
	return s, nil
}

func (s *session) printf(format string, a ...any) { fmt.Fprintf(s.out, format+"\n", a...) }

func (s *session) run(ctx context.Context, step string) error {
	switch step {
	case "init":
		return s.stepInit()
	case "tools":
		res, err := s.c.ListTools(ctx, mcp.ListToolsRequest{})
		if err != nil {
			s.printf("tools: rpc error: %v", err)
			return ctx.Err()
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		slices.Sort(names)
		s.printf("tools: %d: %s", len(names), strings.Join(names, " "))
	case "echo":
		s.call(ctx, "echo", "echo", map[string]any{"message": s.o.message})
	case "sum":
		s.call(ctx, "sum", "add", map[string]any{"a": 2, "b": 3})
	case "progress":
		return s.stepProgress(ctx)
	case "error":
		s.call(ctx, "error", "no-such-tool", nil)
		req := mcp.ReadResourceRequest{}
		req.Params.URI = "demo://no-such-resource"
		_, err := s.c.ReadResource(ctx, req)
		s.printf("error: resources/read %s: %s", req.Params.URI, errText(err))
	case "toolerror":
		s.call(ctx, "toolerror", "echo", map[string]any{})
	case "prompts":
		return s.stepPrompts(ctx)
	case "resources":
		list, err := s.c.ListResourcesByPage(ctx, mcp.ListResourcesRequest{})
		if err != nil {
			s.printf("resources: rpc error: %v", err)
			return ctx.Err()
		}
		var uris []string
		for _, r := range list.Resources {
			uris = append(uris, r.URI)
		}
		slices.Sort(uris)
		s.printf("resources: %d on the first page", len(uris))
		if len(uris) == 0 {
			return ctx.Err()
		}
		req := mcp.ReadResourceRequest{}
		req.Params.URI = uris[0]
		res, err := s.c.ReadResource(ctx, req)
		if err != nil {
			s.printf("resource: %s: rpc error: %v", req.Params.URI, err)
			return ctx.Err()
		}
		for _, c := range res.Contents {
			switch c := c.(type) {
			case mcp.TextResourceContents:
				s.printf("resource: %s: %s %q", c.URI, c.MIMEType, c.Text)
			case mcp.BlobResourceContents:
				s.printf("resource: %s: %s, %d bytes of blob", c.URI, c.MIMEType, len(c.Blob))
			}
		}
	}
	return ctx.Err()
}

func (s *session) stepInit() error {
	data, err := json.Marshal(s.init.Capabilities)
	if err != nil {
		return err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	var caps []string
	for k := range m {
		caps = append(caps, k)
	}
	slices.Sort(caps)
	s.printf("init: protocol %s, server %s %s, capabilities %s", s.init.ProtocolVersion, s.init.ServerInfo.Name, s.init.ServerInfo.Version, strings.Join(caps, ","))
	return nil
}

// call calls a tool and prints its outcome: a JSON-RPC error is part of the
// transcript, not a failure of the script. A nil args sends no "arguments".
func (s *session) call(ctx context.Context, label, tool string, args map[string]any) {
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	if args != nil {
		req.Params.Arguments = args
	}
	res, err := s.c.CallTool(ctx, req)
	s.printf("%s: %s: %s", label, tool, outcome(res, err))
}

func outcome(res *mcp.CallToolResult, err error) string {
	if err != nil {
		return "rpc error: " + err.Error()
	}
	var parts []string
	if res.IsError {
		parts = append(parts, "tool error:")
	}
	for _, c := range res.Content {
		switch c := c.(type) {
		case mcp.TextContent:
			parts = append(parts, fmt.Sprintf("%q", c.Text))
		default:
			data, _ := json.Marshal(c)
			parts = append(parts, string(data))
		}
	}
	if res.StructuredContent != nil {
		data, _ := json.Marshal(res.StructuredContent)
		parts = append(parts, "structured "+string(data))
	}
	return strings.Join(parts, " ")
}

func errText(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

func (s *session) stepProgress(ctx context.Context) error {
	const token, steps = "progress-1", 3
	req := mcp.CallToolRequest{}
	req.Params.Name = "longRunningOperation"
	req.Params.Arguments = map[string]any{"duration": 0.3, "steps": steps}
	req.Params.Meta = &mcp.Meta{ProgressToken: token}
	res, err := s.c.CallTool(ctx, req)
	// mcp-go's transports hand notifications over in the reading
	// goroutine, before the response that follows them; wait a little for
	// a late one all the same rather than race it.
	deadline := time.After(time.Second)
	for {
		s.mu.Lock()
		n, ch := len(s.progress[token]), s.changed
		s.mu.Unlock()
		if n >= steps {
			break
		}
		select {
		case <-ch:
			continue
		case <-deadline:
		case <-ctx.Done():
		}
		break
	}
	s.mu.Lock()
	marks := slices.Clone(s.progress[token])
	s.mu.Unlock()
	s.printf("progress: %s: %s", req.Params.Name, strings.Join(marks, " "))
	s.printf("progress: %s: %s", req.Params.Name, outcome(res, err))
	return ctx.Err()
}

func (s *session) stepPrompts(ctx context.Context) error {
	list, err := s.c.ListPrompts(ctx, mcp.ListPromptsRequest{})
	if err != nil {
		s.printf("prompts: rpc error: %v", err)
		return ctx.Err()
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	s.printf("prompts: %d: %s", len(names), strings.Join(names, " "))
	req := mcp.GetPromptRequest{}
	req.Params.Name = "simple_prompt"
	res, err := s.c.GetPrompt(ctx, req)
	if err != nil {
		s.printf("prompt: simple_prompt: rpc error: %v", err)
		return ctx.Err()
	}
	for _, m := range res.Messages {
		if t, ok := m.Content.(mcp.TextContent); ok {
			s.printf("prompt: simple_prompt: %s %q", m.Role, t.Text)
		}
	}
	return ctx.Err()
}
