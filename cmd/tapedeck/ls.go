package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/internal/text"
)

func newLsCmd(s streams) *cobra.Command {
	var asJSON, forget bool
	cmd := &cobra.Command{
		Use:   "ls [DIR|TAPE...]\n  tapedeck ls --forget DIR|TAPE...",
		Short: "List the tapes in the library, newest first",
		Long: `ls lists the tapes tapedeck knows, newest first: when each started, how
long it lasted, its server(s), the client (from initialize), how many
calls it holds, how many failed (JSON-RPC errors, and tools that reported
isError), and where it is.

The library is the directory tapedeck record writes to
($XDG_STATE_HOME/tapedeck/tapes, by default ~/.local/state/tapedeck/tapes)
and every directory or tape you name here: naming one adds it for good (it
says so on stderr) and lists just it; ls --forget DIR takes it out again
(its files stay on disk). A directory's tapes are its *.jsonl, *.ndjson and *.tape
files (not its subdirectories); files that are not tapes are skipped.

Tapes are indexed in $XDG_STATE_HOME/tapedeck/index.db, a cache: each run
reads only the tapes that changed since the last, forgets the ones that are
gone, and takes a tape still being recorded up to its last whole line. The
index is rebuilt from the tapes if it is damaged; a state directory that
cannot be written gives an index in memory for the run.`,
		Example: `  tapedeck ls                             # every tape in the library
  tapedeck ls ~/work/tapes                # add a directory, list its tapes
  tapedeck ls ci/run-42.jsonl             # add one tape
  tapedeck ls --forget ~/work/tapes       # take a directory out of the library
  tapedeck ls --json | jq '.[] | select(.errors > 0) | .path'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if forget {
				return runForget(cmd.Context(), s, args)
			}
			l, added, err := openLibrary(cmd.Context(), s, args)
			if err != nil {
				return err
			}
			defer l.Close()
			tapes, err := l.Tapes(added...)
			if err != nil {
				return err
			}
			if asJSON {
				if tapes == nil {
					tapes = []library.Tape{}
				}
				enc := json.NewEncoder(s.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(tapes)
			}
			if len(tapes) == 0 {
				roots, _ := l.Roots()
				for i := range roots {
					roots[i] = shortPath(roots[i])
				}
				if len(added) > 0 {
					fmt.Fprintf(s.stderr, "no tapes in %s\n", strings.Join(args, ", "))
				} else {
					fmt.Fprintf(s.stderr, "no tapes yet in %s: tapedeck record writes them there; tapedeck ls DIR adds a directory\n", strings.Join(roots, ", "))
				}
				return nil
			}
			return writeTapes(s, tapes)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON for scripts (durations in nanoseconds)")
	cmd.Flags().BoolVar(&forget, "forget", false, "take the directories and tapes named out of the library (added by ls DIR); their files stay on disk")
	return cmd
}

// runForget takes paths out of the library and says which.
func runForget(ctx context.Context, s streams, paths []string) error {
	if len(paths) == 0 {
		return errors.New("ls --forget: expected the directories or tapes to take out of the library")
	}
	l, _, err := openLibrary(ctx, s, nil)
	if err != nil {
		return err
	}
	defer l.Close()
	forgot, err := l.Forget(paths...)
	if err != nil {
		return fmt.Errorf("ls --forget: %w", err)
	}
	for _, p := range forgot {
		fmt.Fprintf(s.stderr, "tapedeck: took %s out of the library (its files stay on disk)\n", text.Safe(shortPath(p)))
	}
	if _, err := l.Refresh(ctx); err != nil {
		return err
	}
	if len(forgot) < len(paths) {
		roots, _ := l.Roots()
		for i := range roots {
			roots[i] = shortPath(roots[i])
		}
		return fmt.Errorf("ls --forget: %d of %s not in the library, which holds %s", len(paths)-len(forgot), text.Plural(len(paths), "path"), strings.Join(roots, ", "))
	}
	return nil
}

func writeTapes(s streams, tapes []library.Tape) error {
	tw := tabwriter.NewWriter(s.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "START\tDURATION\tSERVER\tCLIENT\tCALLS\tERRORS\tPATH")
	for _, t := range tapes {
		servers := strings.Join(t.Servers, ",")
		if servers == "" {
			servers = "-"
		}
		client := t.Client
		if t.ClientVersion != "" {
			client += " " + t.ClientVersion
		}
		if client == "" {
			client = "-"
		}
		errs := fmt.Sprint(t.RPCErrors + t.ToolErrors)
		if t.ToolErrors > 0 {
			errs += fmt.Sprintf(" (%d tool)", t.ToolErrors)
		}
		dur := shortDuration(t.Duration)
		if t.Start.IsZero() {
			dur = "-"
		}
		start := localTime(t.Start) // "-" for a tape without timestamps
		path := shortPath(t.Path)
		if t.Partial {
			path += " (recording)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\n", start, dur, servers, client, t.Calls, errs, path)
	}
	return tw.Flush()
}
