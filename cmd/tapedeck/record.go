package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime/debug"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/export"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// redactFlags are the redaction rules shared by record and redact.
type redactFlags struct {
	keys, paths, values []string
}

func (f *redactFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringArrayVar(&f.keys, "redact-key", nil, "blank the value of every object member named `NAME`, at any depth (case-insensitive; repeatable)")
	cmd.Flags().StringArrayVar(&f.paths, "redact-path", nil, "blank what `PATH` names, e.g. params.arguments.token or result.items[*].secret (repeatable)")
	cmd.Flags().StringArrayVar(&f.values, "redact-value", nil, "replace every match of `REGEX` inside string values with [REDACTED] (repeatable)")
}

func (f *redactFlags) redactor() (*tape.Redactor, error) {
	return tape.NewRedactor(f.keys, f.paths, f.values)
}

const redactHelp = `Redaction changes only the tape's copy, never the bytes forwarded to the
peer. Credential headers (Authorization, Cookie, Set-Cookie,
Proxy-Authorization, X-Api-Key and the like) are never written.

  --redact-key NAME     blanks the value of every member called NAME (any
                        case, any depth)
  --redact-path PATH    blanks what PATH names from the message root
                        (params.arguments.token, result.items[*].secret;
                        _meta.session for the tape's own metadata)
  --redact-value REGEX  replaces each match inside string values and member
                        names with "[REDACTED]", keeping the rest

All three reach into strings that hold JSON (a tool's text content), into
the tape's _meta (all but dir, server, ts and redacted), and into lines that
are not JSON (stray output, a torn last line: value rules on the text, key
rules up to the end of the key's value). Blanking keeps the JSON shape: a
string becomes "[REDACTED]", a number 0, a boolean false, and objects and
arrays keep their members, each blanked. A redacted message lists what was
redacted in _meta.redacted, e.g. ["params.arguments.apiKey"].`

type recordOptions struct {
	output, server  string
	appendTo        bool
	redact          redactFlags
	grace, kill     time.Duration
	upstream        string
	listen          string
	allowHosts      []string
	maxBody         string
	allowRemote     bool
	allowOrigins    []string
	allowAnyOrigins bool // the same as --allow-origin '*'
	otlpEndpoint    string
	otlpHeaders     []string
	otlpBodies      bool
	rules           rulesFlags
	shadow          string  // HTTP: B's URL
	shadowCmd       string  // stdio: B's command line
	shadowSample    float64 // the share of requests B gets
	proxyAuth       bool    // HTTP: the authorization server through the proxy too
	// afterProbe: a stdio run may append to a tape that ends with its
	// server's probe (record.AfterProbe).
	afterProbe bool
}

func newRecordCmd(s streams) *cobra.Command {
	var o recordOptions
	cmd := &cobra.Command{
		Use:   "record [flags] -- COMMAND [ARG...]\n  tapedeck record --upstream URL [flags]",
		Short: "Record a client's session with a stdio server, or through an HTTP proxy",
		Long: `record captures what a real client and a real MCP server exchange, without
either noticing, into a tape.

stdio: configure your client to launch "tapedeck record -- COMMAND ARGS"
instead of "COMMAND ARGS" ("tapedeck wrap SERVER" makes that edit in the
client's configuration, "tapedeck unwrap SERVER" undoes it). tapedeck starts
the server, relays stdin and stdout byte for byte, passes stderr through,
and writes every message to the tape before forwarding it, so even a crash
(of either side, or of tapedeck) leaves a readable tape. When the client closes stdin, the server's stdin is
closed; a server still running after --grace gets SIGTERM, and SIGKILL after
--kill-after. Signals sent to tapedeck are forwarded to the server. tapedeck
exits with the server's exit status.

HTTP: "tapedeck record --upstream URL" listens on --listen (loopback by
default) and forwards Streamable HTTP requests (POST, GET, DELETE) to URL,
relaying JSON bodies and SSE streams event by event. Point the client at the
printed address. It listens on loopback only unless --allow-remote, accepts
only loopback Host headers besides the --listen host and --allow-host ones
(against DNS rebinding), refuses a browser's Origin header unless it is
loopback or given with --allow-origin (403, recorded as $http/rejected: the
proxy adds the upstream URL's credentials, which a web page's request must
not get), and forwards only the upstream URL's path (and a legacy server's
message endpoint). An accepted Origin goes to the server as sent: to test a
server's own Origin check, give --allow-origin '*'.
A legacy HTTP+SSE upstream (an URL ending in /sse) works too: the endpoint
event is rewritten to go through the proxy.

OAuth: the proxy serves the upstream's protected resource metadata with
"resource" naming the proxy and rewrites resource_metadata in the server's
401/403 challenges, so a spec-following client authorizes through it; the
client talks to the authorization server directly. With --proxy-auth the
authorization server goes through the proxy too: the metadata names the
proxy (/tapedeck-auth/N) as the authorization server, whose metadata and
endpoints (register, authorize, token, ...) the proxy forwards to the real
one, redirects unfollowed, and records as $http/auth with every code,
token, client secret, PKCE verifier and Authorization header redacted
(codes and tokens as "[REDACTED] sha256:" fingerprints, equal for equal
secrets).

Shadow traffic: --shadow URL (HTTP) or --shadow-cmd "COMMAND ARGS" (stdio)
also sends a copy of every client message to a second server B, in a
session of its own (its ids and tokens its own). B's answers go on the
same tape as a shadow lane and never reach the client; nothing waits for
B: its copies wait in a bounded queue, and a slow or dead B has them
dropped, each counted in a $shadow/dropped record. Over stdio B reads the
copies on its stdin in the client's order. Over HTTP each copy is a POST
of its own, and B sees the client's causal order: a message the client
sent after it had A's answer to an earlier one goes to B once B answered
that one's copy (or gave no answer within 2 s), while messages sent before
A answered go at once. Afterwards
"tapedeck diff --shadow TAPE" compares A's and B's answers call by call
and "tapedeck check --fail-on shadow TAPE" fails on them.

Without --server a stdio server is named after its command, or, for a
launcher, after what it runs: "node dist/index.js" records as index,
"node /srv/weather/build/index.js" as weather, "npx -y
@modelcontextprotocol/server-everything" as server-everything, "uvx
mcp-server-fetch" as mcp-server-fetch, "python -m mcp_server_time" as
mcp_server_time, "docker run -i --rm mcp/fetch" as fetch. Launchers: node,
bun, deno, npx, bunx, pnpm/yarn dlx, uvx, uv run, python, pipx run,
docker/podman run, tsx, ts-node. An HTTP server is named after its URL:
the last path segment that is not generic (mcp, sse, messages, api, v1…),
else the host and port: http://127.0.0.1:3001/mcp records as
127.0.0.1:3001, https://example.com/weather/mcp as weather. (Its own name,
serverInfo.name, is in the initialize answer on the tape; diff pairs the
servers of two tapes by it when their tape names differ.)

Without -o the tape goes to $XDG_STATE_HOME/tapedeck/tapes/ (by default
~/.local/state/tapedeck/tapes/), named after the server and the time; its
path is printed on stderr. Tapes are created 0600 in 0700 directories; an
existing tape is an error unless --append, with one exception over stdio:
a tape whose last episode of the server (the records since its last
$transport/start) is a server/discover probe and nothing else, written in
the last 30 s, gets this run as a new episode. That is what a client leaves
that starts the server once for its probe, kills it, and starts it again for
the session (the 2026-07-28 TypeScript SDK); replay serves each of its
processes the episode its first request opens. Nothing already on a tape is
ever rewritten.

Rules (--rules FILE): fault injection between the real client and server.
Each message meets the rules before it is recorded and forwarded; the first
rule that matches acts (unless it says continue: true), and the tape holds
what went on the wire with _meta.injected saying which rule did what:

  rules:
    - name: echo-fails-once
      match: {phase: request, tool: echo}   # phase, dir, method, tool, server, when: EXPR
      action: error                         # block error modify delay respond duplicate disconnect log
      error: {code: -32001, message: boom}  # or {tool: TEXT}: a tool result with isError
      schedule: {first: 1}                  # always, first/every/after: N, probability: P (--seed)
    - name: sum-is-42
      match: {phase: response, tool: get-sum}
      action: modify
      set: {/result/content/0/text: "42"}   # also delete: [POINTER], patch: [JSON Patch ops]
    - name: slow
      match: 'method == "tools/call" && params.arguments.limit > 10'
      action: delay
      delay: 100ms..2s

mode: audit (for the file or a rule) reports what a rule would do without
doing it. The README's "Injecting faults" section has every key.

` + redactHelp,
		Example: `  # an IDE's stdio server entry, recorded:
  tapedeck record -o fs.jsonl -- npx -y @modelcontextprotocol/server-filesystem /tmp
  tapedeck record --server linear --redact-key apiKey -- node server.js

  # a Streamable HTTP server, through a recording proxy on 127.0.0.1:7777
  tapedeck record --upstream http://127.0.0.1:3001/mcp --listen 127.0.0.1:7777 -o http.jsonl

  # fail echo's first call and slow get-sum, between the real client and server
  tapedeck record --rules faults.yaml -o faulty.jsonl -- node server.js

  # then look at what was recorded
  tapedeck stats fs.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if o.upstream != "" && len(args) > 0 {
				return fmt.Errorf("record: give a command or --upstream, not both (found command %q)", args[0])
			}
			if o.upstream == "" && len(args) == 0 {
				return errors.New("record: expected a server command after --, or --upstream URL")
			}
			if o.shadow != "" && o.upstream == "" {
				return errors.New("record: --shadow URL goes with --upstream URL; over stdio give --shadow-cmd \"COMMAND ARGS\"")
			}
			if o.proxyAuth && o.upstream == "" {
				return errors.New("record: --proxy-auth goes with --upstream URL (an HTTP server's authorization)")
			}
			if o.shadowCmd != "" && o.upstream != "" {
				return errors.New("record: --shadow-cmd goes with a stdio server command; with --upstream give --shadow URL")
			}
			if !(o.shadowSample > 0 && o.shadowSample <= 1) {
				return fmt.Errorf("record: --shadow-sample %v: expected a share in (0, 1], e.g. 0.1 for one request in ten", o.shadowSample)
			}
			if (o.shadow != "" || o.shadowCmd != "") && o.rules.file != "" {
				return errors.New("record: --shadow and --shadow-cmd cannot be used with --rules")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := o.rules.load(cmd)
			if err != nil {
				return err
			}
			if os.Getenv("GOGC") == "" {
				debug.SetGCPercent(record.GCPercent)
			}
			if o.upstream != "" {
				return runRecordHTTP(cmd.Context(), s, &o, rs)
			}
			return runRecordStdio(cmd.Context(), s, &o, args, rs)
		},
	}
	cmd.Flags().SetInterspersed(false) // flags after COMMAND belong to it
	f := cmd.Flags()
	f.StringVarP(&o.output, "output", "o", "", "write the tape to `TAPE` (default: a new file under $XDG_STATE_HOME/tapedeck/tapes)")
	f.StringVar(&o.server, "server", "", "server `NAME` in the tape (default: see below)")
	f.BoolVar(&o.appendTo, "append", false, "append to an existing tape instead of refusing to touch it")
	f.DurationVar(&o.grace, "grace", record.DefaultGrace, "stdio: how long the server may run on after its stdin closes before SIGTERM")
	f.DurationVar(&o.kill, "kill-after", record.DefaultKillAfter, "stdio: how long after SIGTERM before SIGKILL")
	f.StringVar(&o.otlpEndpoint, "otlp-endpoint", "", "also send each call as an OpenTelemetry span to the OTLP/HTTP endpoint `URL` as soon as it is answered, and each task as one span once it ends (unfinished ones when the recording ends), as tapedeck export --format otlp")
	f.StringArrayVar(&o.otlpHeaders, "otlp-header", nil, "send the header `NAME=VALUE` with the spans, e.g. for authentication (repeatable)")
	f.BoolVar(&o.otlpBodies, "otlp-with-bodies", false, "put each call's params and result on its span (they may hold secrets)")
	f.StringVar(&o.upstream, "upstream", "", "HTTP: proxy to the MCP endpoint at `URL` instead of running a command")
	f.StringVar(&o.listen, "listen", "127.0.0.1:0", "HTTP: listen on `ADDR` (port 0 picks a free one)")
	f.BoolVar(&o.allowRemote, "allow-remote", false, "HTTP: allow a --listen address other than loopback")
	f.StringVar(&o.maxBody, "max-body", "64MiB", "HTTP: accept request bodies up to `SIZE` (413 beyond, never forwarded), e.g. 512KiB; -1: no limit")
	f.StringArrayVar(&o.allowHosts, "allow-host", nil, "HTTP: accept the Host header `HOST` besides loopback ones and the --listen host; * accepts any (repeatable)")
	f.StringArrayVar(&o.allowOrigins, "allow-origin", nil, "HTTP: accept the Origin header `ORIGIN` besides loopback ones, e.g. https://app.example.com; * accepts any, to test a server's own Origin check (repeatable)")
	f.BoolVar(&o.allowAnyOrigins, "allow-any-origin", false, "HTTP: the same as --allow-origin '*'")
	f.StringVar(&o.shadow, "shadow", "", "HTTP: also send a copy of the client's traffic to the MCP endpoint `URL` (server B), in a session of its own; its answers are recorded as a shadow lane, never forwarded; B gets each copy once A's answer was forwarded to the client (at most 5ms after the client sent it), its latency on the lane its own (see Shadow traffic above)")
	f.StringVar(&o.shadowCmd, "shadow-cmd", "", "stdio: also start `\"COMMAND ARGS\"` (split on spaces) as server B and send it a copy of the client's traffic, as --shadow")
	f.Float64Var(&o.shadowSample, "shadow-sample", 1, "the share `P` of the client's requests B gets, in (0, 1] (the handshake and notifications always go)")
	f.BoolVar(&o.proxyAuth, "proxy-auth", false, "HTTP: route the OAuth authorization server's metadata and endpoints through the proxy too, each exchange recorded with its secrets redacted (see OAuth above)")
	o.redact.add(cmd)
	o.rules.add(cmd)
	return cmd
}

// openTape opens the tape to record to: the -o path, or a new file in the
// state directory, whose path is printed on stderr.
func openTape(s streams, o *recordOptions, server string) (*os.File, error) {
	path := o.output
	if path == "" {
		dir, err := tapesDir()
		if err != nil {
			return nil, err
		}
		path = filepath.Join(dir, fmt.Sprintf("%s-%s.jsonl", fileSafe(server), time.Now().UTC().Format("20060102T150405.000Z")))
	}
	f, notes, err := tape.Create(path, o.appendTo)
	if errors.Is(err, os.ErrExist) && o.afterProbe {
		ok, why, perr := record.AfterProbe(path, server, time.Now())
		if perr != nil {
			return nil, fmt.Errorf("record: tape %s already exists, and reading it failed: %w", path, perr)
		}
		if !ok {
			return nil, fmt.Errorf("record: tape %s already exists (%s); use --append to add to it or -o to choose another", path, why)
		}
		fmt.Fprintf(s.stderr, "tapedeck: appending a new episode to %s: %s\n", path, why)
		f, notes, err = tape.Create(path, true)
	}
	if errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("record: tape %s already exists; use --append to add to it or -o to choose another", path)
	}
	if err != nil {
		return nil, fmt.Errorf("record: %w", err)
	}
	for _, n := range notes {
		fmt.Fprintf(s.stderr, "tapedeck: %s\n", n)
	}
	if o.output == "" {
		fmt.Fprintf(s.stderr, "tapedeck: recording to %s\n", path)
	}
	return f, nil
}

// liveSpans wraps the tape's writer to send each call as a span as it is
// answered, when --otlp-endpoint says where; the returned func sends the
// rest and says how many went out.
func liveSpans(ctx context.Context, s streams, o *recordOptions, f *os.File) (io.Writer, func(), error) {
	if o.otlpEndpoint == "" {
		return f, func() {}, nil
	}
	// The recording never stops for telemetry: the first push refused is
	// said once as it happens, the counts at the end.
	opts := export.OTLPOptions{Endpoint: o.otlpEndpoint, WithBodies: o.otlpBodies, OnError: func(err error) {
		fmt.Fprintf(s.stderr, "tapedeck: warning: the OTLP endpoint %s did not accept spans: %s; the recording goes on\n", o.otlpEndpoint, text.Safe(err.Error()))
	}}
	for _, h := range o.otlpHeaders {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("record --otlp-header %q: expected NAME=VALUE", h)
		}
		if opts.Headers == nil {
			opts.Headers = map[string]string{}
		}
		opts.Headers[k] = v
	}
	t, err := export.NewTracer(ctx, nil, filepath.Base(f.Name()), opts)
	if err != nil {
		return nil, nil, err
	}
	live := export.NewLiveCalls(f, t)
	return live, func() {
		live.Flush()
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		n, err := t.Close(sctx)
		var se *export.SendError
		switch {
		case errors.As(err, &se):
			fmt.Fprintf(s.stderr, "tapedeck: warning: %d spans sent to %s, %d not accepted: %s\n", se.Sent, o.otlpEndpoint, se.Failed, text.Safe(se.Err.Error()))
		case err != nil:
			fmt.Fprintf(s.stderr, "tapedeck: warning: sending spans to %s: %s\n", o.otlpEndpoint, text.Safe(err.Error()))
		default:
			fmt.Fprintf(s.stderr, "tapedeck: %d spans sent to %s\n", n, o.otlpEndpoint)
		}
	}, nil
}

// tapeWarning says, once, that writing the tape failed.
func tapeWarning(w io.Writer, path string) func(error) {
	return func(err error) {
		fmt.Fprintf(w, "tapedeck: warning: writing the tape %s failed: %v; the session goes on, and the tape will say what is missing when writing works again\n", path, err)
	}
}

// tapesDir is $XDG_STATE_HOME/tapedeck/tapes, by default under
// ~/.local/state.
func tapesDir() (string, error) {
	state := os.Getenv("XDG_STATE_HOME")
	if state == "" || !filepath.IsAbs(state) {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("record: no -o and no home directory for the default tape location: %w", err)
		}
		state = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(state, "tapedeck", "tapes"), nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func fileSafe(s string) string {
	s = strings.Trim(unsafeName.ReplaceAllString(s, "_"), "_.")
	if s == "" {
		return "server"
	}
	return s
}

// forwardedSignals are relayed to the recorded server. SIGPIPE is caught
// only so that a client closing stdout makes writes fail instead of killing
// tapedeck before the server is shut down.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

func runRecordStdio(ctx context.Context, s streams, o *recordOptions, args []string, rs *rules.Set) error {
	red, err := o.redact.redactor()
	if err != nil {
		return err
	}
	server := o.server
	if server == "" {
		server = record.DefaultServerName(args[0], args[1:])
	}
	o.afterProbe = true
	f, err := openTape(s, o, server)
	if err != nil {
		return err
	}
	defer f.Close()
	tapeW, spans, err := liveSpans(ctx, s, o, f)
	if err != nil {
		return err
	}
	defer spans()

	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, forwardedSignals...)
	pipe := make(chan os.Signal, 1)
	signal.Notify(pipe, syscall.SIGPIPE)
	defer signal.Stop(sigs)
	defer signal.Stop(pipe)

	shim := &record.Stdio{
		Command: args[0], Args: args[1:],
		Tape: tapeW, Server: server, Redact: red, Version: buildVersion(),
		Signals: sigs, Grace: o.grace, KillAfter: o.kill,
		Warn: tapeWarning(s.stderr, f.Name()), ReapOrphans: true,
		Rules: rs, Logf: ruleLog(s.stderr),
	}
	if o.shadowCmd != "" {
		parts := strings.Fields(o.shadowCmd)
		if len(parts) == 0 {
			return errors.New("record: --shadow-cmd: expected a command line, found only spaces")
		}
		shim.Shadow = &record.ShadowOptions{Command: parts[0], Args: parts[1:], Sample: o.shadowSample}
	}
	st, err := shim.Run(ctx, s.stdin, s.stdout, s.stderr)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("record: close tape: %w", cerr)
	}
	if err != nil || st.Code != 0 {
		code := st.Code
		if code <= 0 {
			code = 1
		}
		return &exitError{code: code, err: err}
	}
	return nil
}
