package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rootURI is the root the client declares with --roots.
const rootURI = "file:///tmp/tapedeck-root"

// transcript serialises the lines of all sessions.
type transcript struct {
	mu sync.Mutex
	w  io.Writer
}

func (t *transcript) printf(server, format string, a ...any) {
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(t.w, "[%s] %s\n", server, fmt.Sprintf(format, a...))
}

// session is one connected server and what its notifications brought.
type session struct {
	name   string
	opts   options
	out    *transcript
	client *mcp.Client
	cs     *mcp.ClientSession
	tools  []string
	proxy  *recordingProxy // the recording proxy of an HTTP server with --tape
	closed bool

	mu         sync.Mutex
	progress   map[string][]float64 // by progress token
	totals     map[string]float64
	logs       []string
	rootsAsked int
	changed    chan struct{} // closed and replaced on every notification or roots/list
}

func newSession(spec serverSpec, opts options, out *transcript) *session {
	s := &session{
		name:     spec.name,
		opts:     opts,
		out:      out,
		progress: map[string][]float64{},
		totals:   map[string]float64{},
		changed:  make(chan struct{}),
	}
	copts := &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			token := fmt.Sprint(req.Params.ProgressToken)
			s.update(func() {
				s.progress[token] = append(s.progress[token], req.Params.Progress)
				s.totals[token] = req.Params.Total
			})
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			data, _ := json.Marshal(req.Params.Data)
			line := fmt.Sprintf("%s %s %s", req.Params.Level, req.Params.Logger, data)
			s.update(func() { s.logs = append(s.logs, line) })
		},
	}
	if !opts.roots {
		// The SDK declares roots by default; without --roots declare none, so
		// that servers (server-everything) do not send roots/list at a time
		// of their choosing.
		copts.Capabilities = &mcp.ClientCapabilities{}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: "sdkclient", Version: "1.0.0"}, copts)
	if opts.roots {
		s.client.AddRoots(&mcp.Root{URI: rootURI, Name: "tapedeck-root"})
		s.client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "roots/list" {
					s.update(func() { s.rootsAsked++ })
				}
				return res, err
			}
		})
	}
	return s
}

// update changes the notification state under the lock and wakes waiters.
func (s *session) update(change func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	change()
	close(s.changed)
	s.changed = make(chan struct{})
}

// waitFor waits until cond holds (checked under the lock) or d passes.
func (s *session) waitFor(ctx context.Context, d time.Duration, cond func() bool) bool {
	deadline := time.After(d)
	for {
		s.mu.Lock()
		ok, ch := cond(), s.changed
		s.mu.Unlock()
		if ok {
			return true
		}
		select {
		case <-ch:
		case <-deadline:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

func (s *session) connect(ctx context.Context, t mcp.Transport) error {
	var sopts *mcp.ClientSessionOptions
	if s.opts.protocol != "" {
		sopts = &mcp.ClientSessionOptions{ProtocolVersion: s.opts.protocol}
	}
	cs, err := s.client.Connect(ctx, t, sopts)
	if err != nil {
		return err
	}
	s.cs = cs
	return nil
}

// close ends the session, then its recording proxy (whose error it
// returns).
func (s *session) close(out *transcript) error {
	if s.closed {
		return nil
	}
	s.closed = true
	if s.cs != nil {
		if err := s.cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			out.printf(s.name, "close: %v", err)
		}
	}
	if s.proxy != nil {
		return s.proxy.close()
	}
	return nil
}

func (s *session) printf(format string, a ...any) { s.out.printf(s.name, format, a...) }

func (s *session) has(tool string) bool { return slices.Contains(s.tools, tool) }

func (s *session) run(ctx context.Context, step string) error {
	switch step {
	case "init":
		return s.stepInit()
	case "tools":
		return s.stepTools(ctx)
	case "echo":
		return s.call(ctx, "echo", "echo", map[string]any{"message": s.opts.message})
	case "sum":
		switch {
		case s.has("get-sum"):
			return s.call(ctx, "sum", "get-sum", map[string]any{"a": 2, "b": 3})
		case s.has("add"):
			return s.call(ctx, "sum", "add", map[string]any{"a": 2, "b": 3})
		}
	case "loglevel":
		if caps := s.cs.InitializeResult().Capabilities; caps != nil && caps.Logging != nil {
			err := s.cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"})
			s.printf("loglevel: info: %s", errText(err))
			return nil
		}
	case "progress":
		return s.stepProgress(ctx)
	case "concurrent":
		return s.stepConcurrent(ctx)
	case "error":
		if err := s.call(ctx, "error", "no-such-tool", map[string]any{}); err != nil {
			return err
		}
		if s.has("fail") {
			return s.call(ctx, "error", "fail", map[string]any{})
		}
		if caps := s.cs.InitializeResult().Capabilities; caps != nil && caps.Resources != nil {
			// server-everything reports an unknown tool as a tool error; an
			// unknown resource gives a JSON-RPC error.
			_, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "demo://no-such-resource"})
			s.printf("error: resources/read demo://no-such-resource: %s", errText(err))
		}
		return ctx.Err()
	case "answer":
		if s.has("answer") {
			return s.call(ctx, "answer", "answer", map[string]any{})
		}
	case "prompts":
		return s.stepPrompts(ctx)
	case "resources":
		return s.stepResources(ctx)
	case "roots":
		return s.stepRoots(ctx)
	case "logs":
		s.mu.Lock()
		logs := slices.Clone(s.logs)
		s.mu.Unlock()
		slices.Sort(logs)
		s.printf("logs: %d", len(logs))
		for _, l := range logs {
			s.printf("log: %s", l)
		}
		return nil
	}
	s.printf("%s: skipped", step)
	return nil
}

func (s *session) stepInit() error {
	res := s.cs.InitializeResult()
	var caps []string
	if res.Capabilities != nil {
		data, err := json.Marshal(res.Capabilities)
		if err != nil {
			return err
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(data, &m); err != nil {
			return err
		}
		for k := range m {
			caps = append(caps, k)
		}
		slices.Sort(caps)
	}
	server := "?"
	if res.ServerInfo != nil {
		server = res.ServerInfo.Name + " " + res.ServerInfo.Version
	}
	s.printf("init: protocol %s, server %s, capabilities %s", res.ProtocolVersion, server, strings.Join(caps, ","))
	return nil
}

func (s *session) stepTools(ctx context.Context) error {
	s.tools = nil
	for tool, err := range s.cs.Tools(ctx, nil) {
		if err != nil {
			return err
		}
		s.tools = append(s.tools, tool.Name)
	}
	slices.Sort(s.tools)
	s.printf("tools: %d: %s", len(s.tools), strings.Join(s.tools, " "))
	return nil
}

// call calls a tool and prints its outcome: a JSON-RPC error is part of the
// transcript, not a failure of the script.
func (s *session) call(ctx context.Context, label, tool string, args map[string]any) error {
	res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	var werr *jsonrpc.Error
	if s.opts.codes && errors.As(err, &werr) {
		s.printf("%s: %s: rpc error %d: %s", label, tool, werr.Code, err)
		return ctx.Err()
	}
	s.printf("%s: %s: %s", label, tool, outcome(res, err))
	return ctx.Err()
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
		case *mcp.TextContent:
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

// slowCall returns the name and arguments of the server's slow tool.
func (s *session) slowCall(steps int, ms int) (string, map[string]any, bool) {
	switch {
	case s.has("trigger-long-running-operation"):
		return "trigger-long-running-operation", map[string]any{"duration": float64(ms) / 1000, "steps": steps}, true
	case s.has("slow"):
		return "slow", map[string]any{"ms": ms, "steps": steps}, true
	}
	return "", nil, false
}

func (s *session) stepProgress(ctx context.Context) error {
	const steps = 3
	tool, args, ok := s.slowCall(steps, 300)
	if !ok {
		s.printf("progress: skipped")
		return nil
	}
	token := "progress-1"
	s.mu.Lock()
	early := len(s.progress[token])
	s.mu.Unlock()
	if early > 0 {
		// Progress for a call not made yet: a replay sent another call's
		// notifications (it never happens live).
		s.printf("progress: %d notifications for %s before the call", early, token)
	}
	params := &mcp.CallToolParams{Name: tool, Arguments: args, Meta: s.logLevelMeta()}
	params.SetProgressToken(token)
	res, err := s.cs.CallTool(ctx, params)
	// Notifications are handled apart from responses: wait for them rather
	// than race the result.
	s.waitFor(ctx, 3*time.Second, func() bool { return len(s.progress[token]) >= steps })
	s.mu.Lock()
	got := slices.Clone(s.progress[token])
	total := s.totals[token]
	s.mu.Unlock()
	slices.Sort(got)
	var marks []string
	for _, p := range got {
		marks = append(marks, fmt.Sprintf("%g/%g", p, total))
	}
	s.printf("progress: %s: %s", tool, strings.Join(marks, " "))
	s.printf("progress: %s: %s", tool, outcome(res, err))
	return ctx.Err()
}

// logLevelMeta returns request _meta asking for info logs when the session
// runs protocol 2026-07-28 or later, where logging/setLevel no longer sets a
// session-wide level and each request carries its own (the Go SDK's stdio
// server sends no log without it; its HTTP server does).
func (s *session) logLevelMeta() mcp.Meta {
	if s.cs.InitializeResult().ProtocolVersion < "2026-07-28" {
		return nil
	}
	return mcp.Meta{mcp.MetaKeyLogLevel: "info"}
}

func (s *session) stepConcurrent(ctx context.Context) error {
	tool, args, ok := s.slowCall(2, 400)
	if !ok {
		s.printf("concurrent: skipped")
		return nil
	}
	type result struct {
		res *mcp.CallToolResult
		err error
	}
	slow := make(chan result, 1)
	go func() {
		res, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args, Meta: s.logLevelMeta()})
		slow <- result{res, err}
	}()
	time.Sleep(100 * time.Millisecond) // let the slow request go out first
	fast, err := s.cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "fast"}})
	r := <-slow
	s.printf("concurrent: echo: %s", outcome(fast, err))
	s.printf("concurrent: %s: %s", tool, outcome(r.res, r.err))
	return ctx.Err()
}

func (s *session) stepPrompts(ctx context.Context) error {
	if caps := s.cs.InitializeResult().Capabilities; caps == nil || caps.Prompts == nil {
		s.printf("prompts: skipped")
		return nil
	}
	var names []string
	for p, err := range s.cs.Prompts(ctx, nil) {
		if err != nil {
			s.printf("prompts: rpc error: %v", err)
			return ctx.Err()
		}
		names = append(names, p.Name)
	}
	slices.Sort(names)
	s.printf("prompts: %d: %s", len(names), strings.Join(names, " "))
	if slices.Contains(names, "simple-prompt") {
		res, err := s.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "simple-prompt"})
		if err != nil {
			s.printf("prompt: simple-prompt: rpc error: %v", err)
			return ctx.Err()
		}
		for _, m := range res.Messages {
			if t, ok := m.Content.(*mcp.TextContent); ok {
				s.printf("prompt: simple-prompt: %s %q", m.Role, t.Text)
			}
		}
	}
	return nil
}

func (s *session) stepResources(ctx context.Context) error {
	if caps := s.cs.InitializeResult().Capabilities; caps == nil || caps.Resources == nil {
		s.printf("resources: skipped")
		return nil
	}
	res, err := s.cs.ListResources(ctx, nil)
	if err != nil {
		s.printf("resources: rpc error: %v", err)
		return ctx.Err()
	}
	var uris []string
	for _, r := range res.Resources {
		uris = append(uris, r.URI)
	}
	slices.Sort(uris)
	s.printf("resources: %d on the first page", len(uris))
	if len(uris) == 0 {
		return nil
	}
	read, err := s.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uris[0]})
	if err != nil {
		s.printf("resource: %s: rpc error: %v", uris[0], err)
		return ctx.Err()
	}
	for _, c := range read.Contents {
		s.printf("resource: %s: %s, %d bytes of text, %d of blob", c.URI, c.MIMEType, len(c.Text), len(c.Blob))
	}
	return nil
}

func (s *session) stepRoots(ctx context.Context) error {
	if !s.opts.roots {
		s.printf("roots: skipped (no --roots)")
		return nil
	}
	switch {
	case s.has("get-roots-list"):
		// server-everything asks by itself 350 ms after initialization,
		// then logs what it got; wait for both so that the call below reads
		// its cache instead of asking again at a racy moment.
		asked := s.waitFor(ctx, 5*time.Second, func() bool { return s.rootsAsked > 0 })
		s.waitFor(ctx, 3*time.Second, func() bool {
			return slices.ContainsFunc(s.logs, func(l string) bool { return strings.Contains(l, "Roots updated") })
		})
		s.printf("roots: server asked for roots: %v", asked)
		return s.call(ctx, "roots", "get-roots-list", map[string]any{})
	case s.has("roots"):
		return s.call(ctx, "roots", "roots", map[string]any{})
	}
	s.printf("roots: skipped")
	return nil
}
