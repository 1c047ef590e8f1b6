package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/importer"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

func newStatsCmd(s streams) *cobra.Command {
	var asJSON, strict bool
	var server string
	cmd := &cobra.Command{
		Use:   "stats TAPE",
		Short: "Count a tape's messages per server and method, with latencies",
		Long: `stats reads a tape and prints, per server and per method: requests,
notifications, responses, errors, latency percentiles (p50/p95/p99/max),
orphan responses (no request matched them), pending requests (never
answered), cancelled requests and late responses, and invalid lines.

Tasks (2025-11-25) are counted once each, per server and creating request,
under "tasks": the terminal status each reached (failed and cancelled are
failures; unfinished: none on the tape) and their durations, from the
creating request to the first message that reported the terminal status,
however many polls that took.

err counts JSON-RPC error answers and tool-err tool results with isError:
the failures. A server/discover probe that a server from before 2026-07-28
rejected before initialize (-32601 method not found, -32000 "not
initialized", or an HTTP 4xx) is version negotiation, counted under
negotiation and not under err.

Requests pair with responses by (server, direction, connection, id), so the
client's and the server's own requests never mix. Direction "send" is the
client's side, "recv" the server's (roots/list, sampling, elicitation).

A tape recorded from an OAuth-protected server over HTTP has an auth line:
the challenges (401, and 403 step-ups) the server answered requests with,
the protected resource metadata documents the proxy served, and whether
the client sent the refused requests again with a token.

Problems that do not stop the reading (a torn last line, a line that is not
JSON) are printed on stderr as warnings with their line numbers; --strict
makes a malformed line an error instead.`,
		Example: `  tapedeck stats session.jsonl
  tapedeck stats --server everything session.jsonl
  tapedeck stats --json session.jsonl | jq '.servers[].total.errors'`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts []tape.ReaderOption
			if strict {
				opts = append(opts, tape.Strict())
			}
			x, err := indexTape(s.stderr, args[0], opts...)
			if err != nil {
				return err
			}
			defer x.Close()
			st := tape.ComputeStats(x, server)
			tape.AddContextCosts(&st, x)
			tape.AddInjections(&st, x)
			tape.AddAuth(&st, x, server)
			tape.AddTaskStats(&st, x)
			if server != "" && len(st.Servers) == 0 {
				if err := serverOnTape(x, "stats --server", server); err != nil {
					return err
				}
			}
			if asJSON {
				enc := json.NewEncoder(s.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			return writeStats(s.stdout, args[0], st)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts (durations in nanoseconds)")
	cmd.Flags().StringVar(&server, "server", "", "only the messages of server `NAME`")
	cmd.Flags().BoolVar(&strict, "strict", false, "fail on the first malformed line instead of warning")
	return cmd
}

func serverList(servers []string) string {
	if len(servers) == 0 {
		return "no servers"
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		if names[i] = s; s == "" {
			names[i] = "(unnamed)"
		}
	}
	return text.QuoteList(names)
}

// serverOnTape checks a --server flag against the servers the index tells
// apart: on a tape that names more than it keeps apart, a name past them
// is not "not on the tape", it is beyond the index's limit.
func serverOnTape(x *tape.Index, flag, want string) error {
	servers := x.Servers()
	limit, over := x.ServersOverflow()
	if over {
		servers = servers[:len(servers)-1] // "(more)": every name past the limit
	}
	if slices.Contains(servers, want) {
		return nil
	}
	if over {
		return fmt.Errorf("%s %q: not among the tape's first %d servers, the ones tapedeck tells apart (the tape names more, counted together past them); it holds %s", flag, want, limit, serverList(servers))
	}
	return fmt.Errorf("%s %q: not on the tape; it holds %s", flag, want, serverList(servers))
}

// noTape says that the file at path is no tape when err is a
// tape.NoRecordsError, and how to import it when it is a log another tool
// wrote; it returns other errors as they are.
func noTape(path string, err error) error {
	var nr *tape.NoRecordsError
	if !errors.As(err, &nr) {
		return err
	}
	if format, ok := importer.Detect(nr.Head); ok {
		return fmt.Errorf("%s %w: it is %s; run \"tapedeck import --from %s %s -o TAPE\" to make a tape of it",
			path, tape.ErrNoRecords, importer.Describe(format), format, shellArg(path))
	}
	return fmt.Errorf("%s %w", path, err)
}

// shellArg quotes s for a shell when it needs it.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// indexTape indexes the tape at path (refusing a file with lines but no
// tape record: see noTape) and prints its first warnings on
// stderr, then how many more there were.
func indexTape(stderr io.Writer, path string, opts ...tape.ReaderOption) (*tape.Index, error) {
	x, err := tape.OpenIndex(path, opts...)
	if err != nil {
		return nil, err
	}
	if err := x.CheckRecords(); err != nil {
		x.Close()
		return nil, noTape(path, err)
	}
	const shown = 20
	for i, wr := range x.Warnings() {
		if i == shown {
			break
		}
		fmt.Fprintf(stderr, "warning: %v\n", wr)
	}
	if n := x.WarningCount(); n > shown {
		fmt.Fprintf(stderr, "warning: %d more warnings not shown\n", n-shown)
	}
	return x, nil
}

func writeStats(w io.Writer, name string, st tape.Stats) error {
	fmt.Fprintf(w, "%s: %s\n", name, st.Summary())
	if st.Auth != nil {
		fmt.Fprintf(w, "auth: %s\n", st.Auth)
	}
	if len(st.Injected) > 0 {
		names := make([]string, 0, len(st.Injected))
		total := 0
		for r, n := range st.Injected {
			names = append(names, r)
			total += n
		}
		sort.Strings(names)
		fmt.Fprintf(w, "injected by rules: %d records\n", total)
		for _, r := range names {
			fmt.Fprintf(w, "  %-24s %d\n", r, st.Injected[r])
		}
	}
	for _, ss := range st.Servers {
		fmt.Fprintf(w, "\nserver %s\n", ss.Name())
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		header, rows := ss.Table()
		fmt.Fprintln(tw, "  "+strings.Join(header, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, "  "+strings.Join(row, "\t"))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if header, rows := ss.TaskTable(); len(rows) > 0 {
			fmt.Fprintf(w, "  tasks (each once: its terminal status, and its duration from creation to that status):\n")
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "    "+strings.Join(header, "\t"))
			for _, row := range rows {
				fmt.Fprintln(tw, "    "+strings.Join(row, "\t"))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		if len(ss.Context) > 0 {
			fmt.Fprintf(w, "  context cost of its definitions (last listing; tokens approximate, bytes/4):\n")
			for _, c := range ss.Context {
				fmt.Fprintf(w, "    %s\n", c)
			}
		}
	}
	return nil
}
