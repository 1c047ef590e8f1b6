package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// replayFlags are the matching flags shared by replay and verify.
type replayFlags struct {
	server string
	match  string
	speed  float64
	ignore []string
	report string
}

func (f *replayFlags) options() (replay.Options, error) {
	mode, err := replay.ParseMode(f.match)
	if err != nil {
		return replay.Options{}, err
	}
	ignore, err := parseIgnores(f.ignore)
	if err != nil {
		return replay.Options{}, err
	}
	if f.speed < 0 {
		return replay.Options{}, fmt.Errorf("--speed %v: expected 0 (instant) or a positive factor", f.speed)
	}
	return replay.Options{Server: f.server, Mode: mode, Ignore: ignore, Speed: f.speed}, nil
}

func parseIgnores(specs []string) ([]tape.Path, error) {
	var out []tape.Path
	for _, s := range specs {
		p, err := tape.ParsePath(s)
		if err != nil {
			return nil, fmt.Errorf("--ignore: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

func newReplayCmd(s streams) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay TAPE",
		Short: "Serve a tape as an MCP server, failing loudly where the client departs from it",
		Long: `replay serves the server side of a tape to a live MCP client, over stdio (the
client launches "tapedeck replay TAPE" in place of the real server). No live
server is contacted.

Responses are the recorded bytes with the live request's id spliced in;
recorded server notifications and server requests (roots/list, sampling,
elicitation) are sent in their recorded order, and the client's replies are
checked too. initialize tolerates another protocolVersion, capabilities and
clientInfo, and answers with the client's protocolVersion; a server/discover
probe against a tape recorded without one gets "method not found", as the
older server answered, so the client falls back to initialize.

Matching modes (--match):
  strict  (default, mcporter's semantics) each request must be the next
          recorded one of the server: same method, params equal by meaning
  keyed   (Shadow's semantics) requests are looked up by (method, params);
          identical calls are served in recorded order; an unknown call or
          one repeated more often than recorded diverges
  loose   keyed, but repeats reuse the last response and unknown calls get
          an error (code -32091) that does not fail the replay

A divergence is answered with a JSON-RPC error, code -32090, whose message
names the request received and the one expected, and whose data holds a
structured diff (JSON pointers with expected and actual values). Every
divergence is printed on stderr and, with --report, written to a JSON file
with the recorded requests left unused. The exit status is 1 when any
divergence or unused request remains.`,
		Example: `  # mcporter, with the tape in place of the real server
  mcporter call --stdio "tapedeck replay session.jsonl" echo message=hi

  # a multi-server tape: choose the server; ignore a field that varies
  tapedeck replay --server linear --ignore params.arguments.requestId session.jsonl

  # reproduce the recorded latencies at twice the speed, keep a report
  tapedeck replay --speed 2 --report replay-report.json session.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := f.options()
			if err != nil {
				return err
			}
			x, err := tape.OpenIndex(args[0])
			if err != nil {
				return err
			}
			defer x.Close()
			printWarnings(s.stderr, x.Warnings())
			onDiv := func(d replay.Divergence) { fmt.Fprintf(s.stderr, "tapedeck replay: %s\n", d.Message) }
			e, err := replay.NewEngine(x, opts)
			if err != nil {
				return err
			}
			if err := replay.ServeStdio(cmd.Context(), e, s.stdin, s.stdout, replay.StdioOptions{OnDivergence: onDiv}); err != nil {
				return err
			}
			rep := e.Report()
			rep.Tape = args[0]
			return finishReport(s.stderr, &rep, f.report)
		},
	}
	cmd.Flags().StringVar(&f.server, "server", "", "the tape's server to serve (needed when it holds several)")
	cmd.Flags().StringVar(&f.match, "match", "strict", "matching mode: strict, keyed or loose")
	cmd.Flags().Float64Var(&f.speed, "speed", 0, "reproduce recorded latencies divided by this factor (0: instant)")
	cmd.Flags().StringArrayVar(&f.ignore, "ignore", nil, "JSON path ignored when matching, e.g. params.arguments.ts (repeatable)")
	cmd.Flags().StringVar(&f.report, "report", "", "write a JSON report of divergences and unused requests to this file")
	return cmd
}

// finishReport prints unused requests, writes the JSON report if asked, and
// returns the replay's verdict.
func finishReport(stderr io.Writer, rep *replay.Report, path string) error {
	for _, u := range rep.Unused {
		fmt.Fprintf(stderr, "tapedeck replay: recorded request never sent by the client: %s %s (tape line %d)\n", u.Method, compactParams(u.Params), u.Line)
	}
	if path != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if err := rep.Err(); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

func compactParams(p json.RawMessage) string {
	if len(p) == 0 {
		return "{}"
	}
	s := string(p)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}
