package main

import (
	"encoding/json"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/tape"
)

// diffFlags are diff's options.
type diffFlags struct {
	server           string
	asJSON, exitCode bool
	ignore           []string
	latencyAbs       time.Duration
	latencyRatio     float64
	shadow           bool
}

func newDiffCmd(s streams) *cobra.Command {
	var f diffFlags
	cmd := &cobra.Command{
		Use:   "diff A B\n  tapedeck diff --shadow TAPE",
		Short: "Compare two sessions: calls, answers, latencies and tool definitions",
		Long: `diff compares two tapes of the same server (a run before and after a change,
a working session and a failing one). Per server it aligns the client's
calls of A and B by method, target and params (by meaning: key order,
ids, volatile _meta and an absent "arguments" against {} do not count),
with a diff that survives calls inserted or left out (a task's tasks/get
polls are left out of the alignment: a task is compared by the call that
created it and its tasks/result, so runs that polled it more or fewer
times do not differ), and reports:

  - calls in A only (-) or in B only (+); a call of the same method and
    target in the same place with other params is one changed call;
  - aligned calls whose answer changed: ok, error or tool error, the
    JSON-RPC error code, or the result, as JSON-pointer differences;
  - latencies that moved by more than --latency-abs and --latency-ratio;
  - tools, prompts and resources added, removed or changed between the two
    sessions' last listings (a description or an input schema that
    changed between runs: the "rug pull");
  - the protocol version, the server's name and version, and capabilities.

Servers are paired by their name on the tapes; those left are paired by
the name they give themselves (serverInfo.name in the initialize or
server/discover answer), and when one server of each tape is still left,
those two: the same server recorded over stdio (named after its command)
and over HTTP (named after its URL) is compared call by call. Each
difference counted (per server, in the total, for --exit-code) is one line
marked - (A only), + (B only) or ~ (changed); a server on one tape only is
one such line, besides its calls.

--shadow TAPE compares, by the same rules, each server of one tape with
its shadow lane (recorded by record --shadow or --shadow-cmd: the server
NAME~shadow): A is what the client got, B what the shadow server answered
to the same calls. Only the calls the shadow was sent count; a call it
never answered (slow, crashed) is a changed status (pending).

--ignore PATH leaves a path out (as replay's --ignore). --json prints the
report for scripts; --exit-code exits 1 when anything differs.`,
		Example: `  tapedeck diff before.jsonl after.jsonl
  tapedeck diff --ignore result.content.0.text --exit-code ok.jsonl failing.jsonl
  tapedeck diff --json a.jsonl b.jsonl | jq '.servers[].calls[] | select(.kind == "status")'
  tapedeck diff --shadow --exit-code shadowed.jsonl`,
		Args: func(cmd *cobra.Command, args []string) error {
			if f.shadow {
				if len(args) != 1 {
					return fmt.Errorf("diff --shadow: expected one tape, found %d arguments", len(args))
				}
				return nil
			}
			return cobra.ExactArgs(2)(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.shadow {
				return runDiff(s, args[0], "", f)
			}
			return runDiff(s, args[0], args[1], f)
		},
	}
	cmd.Flags().StringVar(&f.server, "server", "", "only server `NAME`")
	cmd.Flags().BoolVar(&f.shadow, "shadow", false, "compare each server of one tape with its shadow lane (record --shadow)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as JSON (durations in nanoseconds)")
	cmd.Flags().BoolVar(&f.exitCode, "exit-code", false, "exit 1 when the sessions differ")
	cmd.Flags().StringArrayVar(&f.ignore, "ignore", nil, "leave `PATH` out of every comparison, e.g. result.content.0.text (repeatable)")
	cmd.Flags().DurationVar(&f.latencyAbs, "latency-abs", 100*time.Millisecond, "report a latency change only over `D`")
	cmd.Flags().Float64Var(&f.latencyRatio, "latency-ratio", 2, "and only over `X` times (either way)")
	return cmd
}

// openSide opens the tape at path for a comparison, refusing a file with
// no tape record (see noTape); with k, its index computes the calls' keys
// (compare.OpenSideKeyed).
func openSide(path string, k *compare.Keys) (compare.Side, error) {
	var sd compare.Side
	var err error
	if k != nil {
		sd, err = compare.OpenSideKeyed(path, k)
	} else {
		sd, err = compare.OpenSide(path)
	}
	if err != nil {
		return sd, err
	}
	if err := sd.Index.CheckRecords(); err != nil {
		sd.Index.Close()
		return compare.Side{}, noTape(path, err)
	}
	return sd, nil
}

func runDiff(s streams, pa, pb string, f diffFlags) error {
	o := compare.Options{Server: f.server, LatencyAbs: f.latencyAbs, LatencyRatio: f.latencyRatio}
	for _, p := range f.ignore {
		path, err := tape.ParsePath(p)
		if err != nil {
			return fmt.Errorf("--ignore %q: %w", p, err)
		}
		o.Ignore = append(o.Ignore, path)
	}
	// Two tapes' indexes and calls are held at once: the tapes are indexed
	// one after the other (their calls are then read at once, one a core)
	// under compare.GCPolicy (no collection under a 256 MiB limit while the
	// live heap is small, GOGC=35 with no limit once it is not: two
	// realistic 1M-message tapes peak as they did at GOGC=35 throughout).
	// GOGC in the environment is left alone; GOMEMLIMIT alone gets the
	// GOGC=35 of before (no limit of ours over the user's).
	if os.Getenv("GOGC") == "" {
		if os.Getenv("GOMEMLIMIT") == "" {
			compare.GCPolicy()
		} else {
			debug.SetGCPercent(35)
		}
	}
	var keys *compare.Keys
	if !f.shadow {
		keys = compare.NewKeys(o)
	}
	a, err := openSide(pa, keys)
	var b compare.Side
	var errB error
	if err == nil && !f.shadow {
		b, errB = openSide(pb, keys)
	}
	for _, sd := range []compare.Side{a, b} {
		if sd.Index != nil {
			defer sd.Index.Close()
		}
	}
	if err != nil {
		return err
	}
	if errB != nil {
		return errB
	}
	for _, sd := range []compare.Side{a, b} {
		if sd.Index == nil {
			continue
		}
		for _, w := range sd.Index.Warnings() {
			fmt.Fprintf(s.stderr, "warning: %s: %v\n", sd.Name, w)
		}
	}
	var r compare.Report
	if f.shadow {
		r, err = compare.Shadow(a, o)
	} else {
		r, err = compare.Compare(a, b, o)
	}
	if err != nil {
		return fmt.Errorf("diff: %w", err)
	}
	if f.asJSON {
		enc := json.NewEncoder(s.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(r); err != nil {
			return err
		}
	} else if err := r.WriteText(s.stdout); err != nil {
		return err
	}
	if f.exitCode && r.Differences() > 0 {
		return &exitError{code: 1}
	}
	return nil
}
