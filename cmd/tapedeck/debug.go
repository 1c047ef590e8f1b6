package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/debug/serve"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
	"github.com/tapedeck/tapedeck/upstream"
)

// debugFlags are debug's options.
type debugFlags struct {
	listen, server, mode string
	light, allowRemote   bool
	hosts, origins       []string
	breaks               []string
	maxGap               time.Duration
	// Live intercept: the server's command after --, or --upstream.
	upstream, output string
	rules            rulesFlags
	fallback         bool
	fallbackURL      string
	proxyAuth        bool
	ruleSet          *rules.Set
}

func newDebugCmd(s streams) *cobra.Command {
	var f debugFlags
	cmd := &cobra.Command{
		Use:   "debug TAPE\n  tapedeck debug [-o TAPE] -- SERVER [ARG...]\n  tapedeck debug [-o TAPE] --upstream URL",
		Short: "Serve a tape to a live client under the debugger, or intercept a live session",
		Long: `debug opens the debugger on a tape and serves the tape's server side to a
live MCP client at the same time, through the replay engine.

One address (--listen; the title bar shows it) serves both kinds of client:
  - stdio: give the client "tapedeck attach ADDR" as its server command;
  - Streamable HTTP: point the client at http://ADDR/mcp.
The first client's transport serves the whole session; the other is refused.

Guards: only loopback addresses are served unless --allow-remote (both
transports answer whoever connects); over HTTP the Host header must name a
loopback host, the --listen host, or one given with --allow-host, and a
browser's Origin must be loopback or given with --allow-origin. On an
unspecified address (0.0.0.0, [::]) the title bar shows the loopback one.

Playback follows the client: the tape waits at each recorded client message
until the live client sends it, and the recorded answers after it fall due
their recorded latency later (divided by the speed; at once at "instant").
The status bar says where the client is: waiting for a client, connected
(and which recorded message the tape waits for), held at a breakpoint,
DIVERGED, or disconnected. A breakpoint (b, :break) holds the answers until
you continue (space) or step (l).

When the client departs from the tape, the session stops, the expected
entry is marked ✗ in the timeline, and the recorded request and the
client's are shown side by side with the changed JSON paths highlighted.
Choose: a answers with the recorded response anyway, e sends the
divergence error (JSON-RPC -32090) to the client, s skips the recorded
request and matches the client's again. Past the tape's end (the status
bar says "after the tape's end" and names the tape's last request) there
is no recorded answer to send or request to skip: a and s send the
divergence error too, and say so.

With --rules FILE, the rules fault an attached stdio client's session as
replay --rules does (what each did shows on the status line; a delay is not
applied, playback times the answers); for an HTTP client, put the
recording proxy with the rules in front (tapedeck record --rules FILE
--upstream http://ADDR/mcp).

With --fallback (debug TAPE --fallback -- SERVER ARGS, or --fallback-url
URL), a request the tape lacks from an attached stdio client goes to the
live server instead of stopping the session: started for each client run,
opened with the client's own initialize, its answers reach the client and
its exchanges are appended to the tape (or -o) as a new episode; the run
does not count them as divergences. A server started halfway has none of
the state the recorded calls built (see tapedeck replay --help).

Live intercept (debug -- SERVER ARGS, or debug --upstream URL): no tape is
served; the debugger sits between a live client and a live server and
records the session (to -o TAPE, or a new tape in the state directory),
which it shows as it grows. A stdio client attaches with "tapedeck attach
ADDR" (each attach runs the server anew: attach again for another run); an
HTTP client uses http://ADDR/PATH, PATH being the upstream's. Breakpoints
(b, :break, --break) hold the live messages they match, in either
direction, until you choose, with mitmproxy's keys:
  a  forward it as it is          d  drop it
  e  edit it in $EDITOR (it must stay a JSON-RPC message of the same kind and id)
  !  answer it with an error (a request), or turn it into one (a response)
  r  re-send the client's request at the cursor to the server, and
     see its new answer beside the recorded one
Failures are on } and { in this mode (e edits). The tape records what went on the
wire, with _meta.injected naming what the debugger did (rule "debugger").`,
		Example: `  # hold every tools/call between a client and a live stdio server
  tapedeck debug --break tools/call --listen 127.0.0.1:7788 -- node server.js
  tapedeck attach 127.0.0.1:7788      # the client's server command

  # what the tape lacks, from the live server, under the debugger
  tapedeck debug --fallback session.jsonl --listen 127.0.0.1:7788 -- node server.js

  tapedeck debug session.jsonl --listen 127.0.0.1:7788
  # a stdio client, with this as its server command:
  tapedeck attach 127.0.0.1:7788
  # or a Streamable HTTP client, at:
  http://127.0.0.1:7788/mcp
  # reachable from other machines, by the name they use:
  tapedeck debug session.jsonl --listen 0.0.0.0:7788 --allow-remote --allow-host devbox`,
		Args: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case f.proxyAuth && f.upstream == "":
				return errors.New("debug --proxy-auth goes with --upstream URL (an HTTP server's authorization)")
			case f.upstream != "" && len(args) > 0:
				return fmt.Errorf("debug --upstream intercepts a live server: expected no TAPE or command, found %q", args[0])
			case f.upstream != "":
				return nil
			case dash == 0 && len(args) > 0:
				return nil
			case f.fallbackURL != "":
				f.fallback = true
				if dash >= 0 {
					return errors.New("debug --fallback-url: the live server is at the URL; expected no command after --")
				}
				return cobra.ExactArgs(1)(cmd, args)
			case dash == 1 && f.fallback && len(args) > 1:
				return nil // TAPE -- the live server of the fallback
			case f.fallback:
				return errors.New("debug --fallback: expected TAPE -- SERVER [ARG...], e.g. tapedeck debug --fallback session.jsonl -- node server.js")
			case dash > 0:
				return fmt.Errorf("debug: expected either TAPE or -- SERVER, found both (%q before --); with --fallback, SERVER answers what the tape lacks", args[0])
			case f.output != "" && !f.fallback && f.fallbackURL == "":
				return errors.New("debug -o is for a live intercept (-- SERVER or --upstream URL) or a fallback's new episodes")
			}
			return cobra.ExactArgs(1)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := f.rules.load(cmd)
			if err != nil {
				return err
			}
			if f.upstream != "" || cmd.ArgsLenAtDash() == 0 {
				return runDebugIntercept(cmd.Context(), s, f, args, rs)
			}
			var fallbackCmd []string
			if dash := cmd.ArgsLenAtDash(); dash == 1 {
				fallbackCmd = args[1:]
			}
			f.ruleSet = rs
			return runDebug(cmd.Context(), s, args[0], f, fallbackCmd)
		},
	}
	cmd.Flags().StringVar(&f.listen, "listen", "127.0.0.1:0", "`ADDR` (host:port) where clients connect: tapedeck attach ADDR, or http://ADDR/mcp; port 0 picks a free one")
	cmd.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "allow a --listen address other than loopback")
	cmd.Flags().StringArrayVar(&f.hosts, "allow-host", nil, "accept the Host header `HOST` besides loopback ones and the --listen host, e.g. devbox; * accepts any (repeatable)")
	cmd.Flags().StringArrayVar(&f.origins, "allow-origin", nil, "accept `ORIGIN` besides loopback ones, e.g. https://app.example.com (repeatable)")
	cmd.Flags().StringVar(&f.server, "server", "", "serve the tape's server `NAME` (needed when the tape holds several); intercepting: the server's name on the tape")
	cmd.Flags().StringVar(&f.upstream, "upstream", "", "intercept a live Streamable HTTP server at `URL` (clients use http://ADDR/PATH)")
	f.rules.add(cmd)
	cmd.Flags().BoolVar(&f.proxyAuth, "proxy-auth", false, "with --upstream: route the OAuth authorization server's metadata and endpoints through the proxy too, each exchange recorded with its secrets redacted (as record --proxy-auth)")
	cmd.Flags().BoolVar(&f.fallback, "fallback", false, "serving TAPE: answer what it lacks from the live server whose command follows -- (stdio clients), appending those exchanges to the tape (or -o)")
	cmd.Flags().StringVar(&f.fallbackURL, "fallback-url", "", "as --fallback, with the live server at the Streamable HTTP endpoint `URL`")
	cmd.Flags().StringVarP(&f.output, "output", "o", "", "intercepting: record the session to `TAPE` (default: a new tape under $XDG_STATE_HOME/tapedeck/tapes)")
	cmd.Flags().StringVar(&f.mode, "match", "strict", "matching `MODE`: strict (in order), keyed or loose")
	cmd.Flags().BoolVar(&f.light, "light", false, "start with the light theme")
	cmd.Flags().StringArrayVar(&f.breaks, "break", nil, breakUsage)
	cmd.Flags().DurationVar(&f.maxGap, "max-gap", 0, maxGapUsage)
	return cmd
}

func runDebug(ctx context.Context, s streams, path string, f debugFlags, fallbackCmd []string) error {
	hosts, err := mcphttp.ListenHosts(f.listen, f.allowRemote, f.hosts, "the session")
	if err != nil {
		return fmt.Errorf("debug %w", err)
	}
	m, err := replay.ParseMode(f.mode)
	if err != nil {
		return err
	}
	bps, err := parseBreaks(f.breaks)
	if err != nil {
		return err
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return err
	}
	defer x.Close()
	if err := x.CheckRecords(); err != nil {
		return noTape(path, err)
	}
	e, err := replay.NewEngine(x, replay.EngineOptions{Server: f.server, Mode: m, Hold: true})
	if err != nil {
		return err
	}
	var fb func() serve.Fallthrough
	if f.fallback {
		dest := path
		if f.output != "" {
			dest = f.output
		}
		out, notes, err := tape.Create(dest, true)
		if err != nil {
			return fmt.Errorf("debug --fallback: the tape for the live exchanges: %w", err)
		}
		defer out.Close()
		for _, n := range notes {
			fmt.Fprintf(s.stderr, "tapedeck debug: %s\n", n)
		}
		up := &upstream.Fallback{URL: f.fallbackURL, Tape: out, Server: e.Server()}
		if f.fallbackURL == "" {
			up.Command, up.Args = fallbackCmd[0], fallbackCmd[1:]
		}
		fb = func() serve.Fallthrough { return upstream.NewFallthrough(up) }
	}
	srv, err := serve.Listen(x, e, f.listen, serve.Options{AllowHosts: hosts, AllowOrigins: f.origins, Fallback: fb, Rules: f.ruleSet})
	if err != nil {
		return err
	}
	defer srv.Close()
	name := fmt.Sprintf("%s · attach %s · %s", filepath.Base(path), srv.Addr(), srv.URL())
	if err := runProgram(ctx, s, tui.New(x, tui.Options{Name: name, Path: path, Light: f.light, Live: srv, Breakpoints: bps, MaxGap: f.maxGap})); err != nil {
		return err
	}
	srv.Close() // ends the run under way, so the summary has it
	return debugSummary(s.stderr, srv.Runs(), x)
}

// debugSummary prints what each client run did on tape x and fails (exit
// 1) when one departed from the tape.
func debugSummary(w io.Writer, runs []debug.RunReport, x *tape.Index) error {
	if len(runs) == 0 {
		fmt.Fprintln(w, "tapedeck debug: no client connected")
		return nil
	}
	failed := 0
	fmt.Fprintf(w, "tapedeck debug: %s\n", text.Plural(len(runs), "client run"))
	for _, r := range runs {
		verdict := "followed the tape"
		if r.Failed() {
			failed++
			verdict = text.Plural(r.Divergences, "divergence")
		}
		fmt.Fprintf(w, "  run %d (%s; %s): %s; %d of %d requests matched, %d recorded unused", r.Run, r.Transport, r.Ended, verdict, r.Matched, r.Requests, r.Unused)
		if r.Dropped > 0 {
			fmt.Fprintf(w, ", %d server messages never delivered", r.Dropped)
		}
		fmt.Fprintln(w)
		for _, d := range r.Report.Divergences {
			fmt.Fprintf(w, "    diverged %s: %s\n", debug.Where(d, x), d.Message)
		}
	}
	if failed > 0 {
		return &exitError{code: 1, err: fmt.Errorf("debug: %s of %d departed from the tape", text.Plural(failed, "client run"), len(runs))}
	}
	return nil
}
