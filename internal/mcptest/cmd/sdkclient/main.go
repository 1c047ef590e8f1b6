// Command sdkclient is a small MCP client built on the official Go SDK, for
// tapedeck's tests. It connects to one or more servers, runs a fixed script
// against each, and prints a deterministic transcript of what came back, so a
// test can compare runs with and without a shim or a replay in between.
//
// Run sdkclient --help for its flags and the steps of the script.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	switch {
	case errors.Is(err, flag.ErrHelp):
		os.Exit(0)
	case err != nil:
		fmt.Fprintln(os.Stderr, "sdkclient:", err)
		os.Exit(1)
	}
}

const usage = `Usage:
  sdkclient [flags] -- COMMAND [ARG...]     a stdio server, started as a child process
  sdkclient [flags] --url URL               a streamable HTTP server
  sdkclient [flags] --server NAME=SPEC ...  several servers, steps interleaved

SPEC is an http:// or https:// URL or a command line split on spaces.

The script, in order (--steps picks a subset; a step a server cannot do is
reported as skipped):
  init        connect (server/discover probe or initialize), print protocol,
              server name and capability keys
  tools       tools/list: the sorted tool names
  echo        tools/call echo {message}
  sum         tools/call get-sum {a:2,b:3} (server-everything) or add (sdkserver)
  loglevel    logging/setLevel info
  progress    a tool call with a progressToken that sends progress:
              trigger-long-running-operation {duration:0.3,steps:3} or slow {ms:300,steps:3};
              progress for its token that came before the call is reported
  concurrent  a slow call and an echo at once (the server answers out of order)
  error       tools/call of an unknown tool, then fail (a tool error) if present,
              then resources/read of an unknown URI if the server has resources
  answer      tools/call answer (sdkserver: changes with its --variant)
  prompts     prompts/list, then prompts/get of simple-prompt if present
  resources   resources/list (first page), then resources/read of the first
  roots       with --roots: wait for the server's roots/list, then call
              get-roots-list or roots
  logs        the log messages received, sorted

Flags:
`

type serverSpec struct {
	name string
	url  string
	argv []string
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

type options struct {
	protocol string
	roots    bool
	message  string
	steps    []string
	timeout  time.Duration
	codes    bool
}

var allSteps = []string{"init", "tools", "echo", "sum", "loglevel", "progress", "concurrent", "error", "answer", "prompts", "resources", "roots", "logs"}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sdkclient", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "", "connect to the streamable HTTP server at `URL`")
	name := fs.String("name", "server", "server `name` in the transcript and the tape (with --url or a command)")
	var servers multiFlag
	fs.Var(&servers, "server", "connect to `NAME=SPEC` (repeatable; SPEC is a URL or a command line)")
	protocol := fs.String("protocol", "", "protocol `version` to ask for; empty means the SDK default, which probes\nserver/discover (2026-07-28) first and falls back to initialize 2025-11-25;\n2025-06-18 (or any version before 2026-07-28) sends initialize directly")
	roots := fs.Bool("roots", false, "declare the roots capability with root file:///tmp/tapedeck-root and run the roots step;\nwithout it the client declares no roots, so server-everything never asks")
	message := fs.String("message", "hi", "the echo `message`")
	steps := fs.String("steps", strings.Join(allSteps, ","), "comma-separated `steps` to run")
	tape := fs.String("tape", "", "record the traffic to an NDJSON tape at `FILE` (stdio: the messages as the SDK\nsees them; HTTP: through tapedeck's recording proxy, in the tape's HTTP dialect)")
	timeout := fs.Duration("timeout", 60*time.Second, "give up after `duration`")
	codes := fs.Bool("codes", false, "print the JSON-RPC error code of a tool call's rpc error (rpc error -32090: ...)")
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}

	var specs []serverSpec
	for _, s := range servers {
		n, spec, ok := strings.Cut(s, "=")
		if !ok || n == "" || spec == "" {
			return fmt.Errorf("--server %q: want NAME=SPEC", s)
		}
		specs = append(specs, parseSpec(n, spec))
	}
	switch {
	case *url != "" && fs.NArg() > 0:
		return errors.New("give --url or a command, not both")
	case *url != "":
		specs = append(specs, serverSpec{name: *name, url: *url})
	case fs.NArg() > 0:
		specs = append(specs, serverSpec{name: *name, argv: fs.Args()})
	}
	if len(specs) == 0 {
		fs.Usage()
		return errors.New("no server: give --url, --server or a command after --")
	}

	opts := options{protocol: *protocol, roots: *roots, message: *message, timeout: *timeout, codes: *codes}
	for _, s := range strings.Split(*steps, ",") {
		s = strings.TrimSpace(s)
		if !contains(allSteps, s) {
			return fmt.Errorf("--steps: unknown step %q (known: %s)", s, strings.Join(allSteps, ","))
		}
		opts.steps = append(opts.steps, s)
	}

	var tw *mcptest.TapeWriter
	var tapeFile io.Writer
	if *tape != "" {
		f, err := os.OpenFile(*tape, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		defer f.Close()
		tw, tapeFile = mcptest.NewTapeWriter(f), f
	}

	ctx, cancel := context.WithTimeout(ctx, opts.timeout)
	defer cancel()
	out := &transcript{w: stdout}
	sessions := make([]*session, 0, len(specs))
	defer func() {
		for _, s := range sessions {
			s.close(out)
		}
	}()
	for _, spec := range specs {
		s := newSession(spec, opts, out)
		sessions = append(sessions, s)
		t, rp, err := transport(spec, tw, tapeFile)
		if err != nil {
			return fmt.Errorf("%s: record: %w", spec.name, err)
		}
		s.proxy = rp
		if err := s.connect(ctx, t); err != nil {
			return fmt.Errorf("%s: connect: %w", spec.name, err)
		}
	}
	for _, step := range opts.steps {
		for _, s := range sessions {
			if err := s.run(ctx, step); err != nil {
				return fmt.Errorf("%s: step %s: %w", s.name, step, err)
			}
		}
	}
	if tw != nil {
		var errs []error
		for _, s := range sessions {
			errs = append(errs, s.close(out))
		}
		sessions = nil
		return errors.Join(append(errs, tw.Err())...)
	}
	return nil
}

func parseSpec(name, spec string) serverSpec {
	if strings.HasPrefix(spec, "http://") || strings.HasPrefix(spec, "https://") {
		return serverSpec{name: name, url: spec}
	}
	return serverSpec{name: name, argv: strings.Fields(spec)}
}

// transport connects to spec's server. With a tape, an HTTP server is
// reached through a recording proxy, returned to close after the session;
// a stdio server's messages are recorded as the SDK sees them.
func transport(spec serverSpec, tw *mcptest.TapeWriter, f io.Writer) (mcp.Transport, *recordingProxy, error) {
	if spec.url != "" {
		if tw == nil {
			return &mcp.StreamableClientTransport{Endpoint: spec.url}, nil, nil
		}
		rp, err := startProxy(spec.url, spec.name, f)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.StreamableClientTransport{Endpoint: rp.url}, rp, nil
	}
	cmd := exec.Command(spec.argv[0], spec.argv[1:]...)
	cmd.Stderr = io.Discard // server logs are not part of the transcript
	var t mcp.Transport = &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}
	if tw != nil {
		t = &mcptest.RecordingTransport{Transport: t, Tape: tw, Server: spec.name}
	}
	return t, nil, nil
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
