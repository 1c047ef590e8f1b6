package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/library"
)

func newSearchCmd(s streams) *cobra.Command {
	var (
		q      library.Query
		since  string
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "search QUERY",
		Short: "Find messages across every tape in the library",
		Long: `search looks through the messages of every tape in the library (see
tapedeck ls) and prints each hit as TAPE:SEQ, which tapedeck open takes to
show that very message, with its time, method, target, the state of its
exchange and a snippet of the text around the match. Newest first.

QUERY is matched against the text of a message: the string values of its
params, result or error (not the keys, numbers, or the tape's _meta; the
first few hundred bytes of each message). Words all have to occur, in any
order and any case; "quoted words" have to occur as a phrase; word* matches
a prefix; OR between two words takes either. An empty QUERY ("") matches
every message, for searching by the flags alone.

ls and the sessions view index only what they list of a new or grown tape;
the first search for words after it indexes the text of its messages, with
a line on stderr when that takes more than a second ("indexing the text of
2 tape(s): 40.1 MB of 250.3 MB read"), and later searches find it at once.
A search by the flags alone (QUERY "") needs no text.

--status takes the state of the exchange a message belongs to: ok, error
(a JSON-RPC error or a tool that reported isError), rpc-error, tool-error,
pending (never answered), cancelled, late, orphan. --since takes an age
(90m, 24h, 7d, 2w) or a date (2026-01-31, 2026-01-31T15:04).`,
		Example: `  tapedeck search timeout                         # any message that mentions it
  tapedeck search "permission denied" --status error
  tapedeck search invoice --tool create_invoice --since 7d
  tapedeck search "" --status tool-error --since 24h     # every failed tool today
  tapedeck search 'stripe OR paypal' --method tools/call
  tapedeck open "$(tapedeck search --json quota | jq -r '.[0] | "\(.path):\(.seq)"')"`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q.Text = args[0]
			if since != "" {
				t, err := library.ParseAge(since, time.Now())
				if err != nil {
					return fmt.Errorf("search --since %w", err)
				}
				q.Since = t
			}
			if strings.TrimSpace(q.Text) == "" && q.Tool == "" && q.Method == "" && q.Status == "" && q.Since.IsZero() {
				return fmt.Errorf(`search "": expected words to look for, or a filter (--tool, --method, --status, --since)`)
			}
			l, _, err := openLibrary(cmd.Context(), s, nil)
			if err != nil {
				return err
			}
			defer l.Close()
			hits, err := l.SearchContext(cmd.Context(), q)
			if err != nil {
				return err
			}
			if asJSON {
				if hits == nil {
					hits = []library.Hit{}
				}
				enc := json.NewEncoder(s.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(hits)
			}
			if len(hits) == 0 {
				fmt.Fprintln(s.stderr, "no message matches")
				return nil
			}
			tw := tabwriter.NewWriter(s.stdout, 0, 4, 2, ' ', 0)
			for _, h := range hits {
				what := h.Method
				if h.Target != "" {
					what += " " + h.Target
				}
				if what == "" {
					what = h.Kind
				}
				status := h.Status
				if status == "" {
					status = h.Kind
				}
				fmt.Fprintf(tw, "%s:%d\t%s\t%s\t%s\t%s\n", shortPath(h.Path), h.Seq, localTime(h.Time), what, status, h.Snippet)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			if len(hits) == q.Limit {
				fmt.Fprintf(s.stderr, "the first %d hits; --limit shows more\n", q.Limit)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&q.Tool, "tool", "", "only calls of the tool `NAME` (tools/call requests and their responses)")
	f.StringVar(&q.Method, "method", "", "only messages of `METHOD` (a response counts its request's), e.g. resources/read")
	f.StringVar(&q.Status, "status", "", "only exchanges in `STATE`: "+strings.Join(library.Statuses, ", "))
	f.StringVar(&since, "since", "", "only messages recorded since `D`: an age (24h, 7d) or a date (2026-01-31)")
	f.IntVar(&q.Limit, "limit", 50, "print at most `N` hits")
	f.BoolVar(&asJSON, "json", false, "print JSON for scripts")
	return cmd
}
