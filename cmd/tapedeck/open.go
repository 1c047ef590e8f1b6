package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
)

func newOpenCmd(s streams) *cobra.Command {
	var (
		follow, light bool
		breaks        []string
		maxGap        time.Duration
		diffWith      string
	)
	cmd := &cobra.Command{
		Use:   "open [TAPE[:SEQ]]",
		Short: "Step through a tape in the terminal debugger",
		Long: `open shows a tape in the debugger: a timeline of its messages (direction,
server, method, target, latency, status, summary), the message under the
cursor as highlighted JSON, a request beside its response, and per-method
stats.

It plays the tape back in time: space plays and pauses, l and h step one
message, + and - change the speed (0.25× to 64×, then instant), b breaks on
the method under the cursor, : opens a command line (goto 120, goto 12.5s,
break tool=echo, break when params.arguments.limit > 5, speed 4); --break
sets breakpoints from the start.

A tape opens post-mortem: the whole tape on show, the cursor on the first
failure (a JSON-RPC error or a tool that failed, isError), or on message
SEQ when TAPE:SEQ names one (as tapedeck search prints its hits), each row
with a summary (the error, the arguments, the log line). e and E jump to the next
and previous failure. A server/discover probe a server from before
2026-07-28 rejected before initialize is version negotiation, not a
failure: its rows are faint, status "negotiation". Once you play or step, messages after the playback
position (▶) are not delivered yet and show faint (failures stay red).
Press ? for every key.

/ filters the timeline (n and N walk the matches, f shows only them; the
message view marks what matched). The grammar:
` + indent(tui.FilterHelp, "  ") + `

Without a tape it opens a demo session embedded in tapedeck (as tapedeck
demo does). With --follow it tails a tape still being recorded: new
messages appear as they are written; the view follows the end while the
cursor is on the last row; a truncated or replaced file is reloaded.

A large tape opens at once and is indexed in the background (a progress
bar shows how far); message bodies are read from the file only when shown.`,
		Example: `  tapedeck open                          # the embedded demo session
  tapedeck open session.jsonl
  tapedeck open session.jsonl:120        # the cursor on message 120 (as search names hits)
  tapedeck open --follow session.jsonl   # while "tapedeck record" writes it
  tapedeck open --break tool=search --break error session.jsonl
  tapedeck open before.jsonl --diff after.jsonl   # two runs side by side
  tapedeck                               # in a terminal: the library's tapes to pick from (tapedeck demo with none)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			path := ""
			if len(args) == 1 {
				path = args[0]
			}
			if diffWith != "" {
				if path == "" {
					return fmt.Errorf("open --diff %s: expected the tape to compare it with first: tapedeck open A --diff B", diffWith)
				}
				return runOpenDiff(cmd.Context(), s, path, diffWith, light)
			}
			bps, err := parseBreaks(breaks)
			if err != nil {
				return err
			}
			opts := tui.Options{Follow: follow, Light: light, Breakpoints: bps, MaxGap: maxGap}
			path, opts.Seq, opts.SeqSet = splitSeq(path)
			return runOpen(cmd.Context(), s, path, opts)
		},
	}
	cmd.Flags().StringArrayVar(&breaks, "break", nil, breakUsage)
	cmd.Flags().DurationVar(&maxGap, "max-gap", 0, maxGapUsage)
	cmd.Flags().StringVar(&diffWith, "diff", "", "show TAPE and the tape `B` side by side, aligned as tapedeck diff aligns them, the differences marked")
	cmd.Flags().BoolVar(&follow, "follow", false, "tail a tape that is still being recorded")
	cmd.Flags().BoolVar(&light, "light", false, "start with the light theme (it follows the terminal's background when the terminal reports it)")
	return cmd
}

// splitSeq reads TAPE:SEQ, as tapedeck search names its hits: when path
// is no file but path without its ":N" is, that tape at message N.
func splitSeq(path string) (string, int, bool) {
	i := strings.LastIndexByte(path, ':')
	if i <= 0 {
		return path, 0, false
	}
	n, err := strconv.Atoi(path[i+1:])
	if err != nil || n < 0 {
		return path, 0, false
	}
	if _, err := os.Stat(path); err == nil {
		return path, 0, false // a file whose name ends in :N
	}
	if _, err := os.Stat(path[:i]); err != nil {
		return path, 0, false
	}
	return path[:i], n, true
}

// runOpen runs the debugger on the tape at path, or on the demo tape.
func runOpen(ctx context.Context, s streams, path string, opts tui.Options) error {
	var (
		x      *tape.Index
		follow = opts.Follow
	)
	if path == "" {
		if follow {
			return fmt.Errorf("open --follow: expected a tape file to follow, found none")
		}
		x = tape.NewIndex(bytes.NewReader(assets.DemoTape))
		opts.Name, opts.Size = assets.DemoName, int64(len(assets.DemoTape))
	} else {
		if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() && follow {
			return fmt.Errorf("open --follow: %s is not a regular file; only a file can be followed as it grows", path)
		}
		f, err := tape.Open(path)
		if err != nil {
			return err
		}
		st, err := f.Stat()
		if err != nil {
			f.Close()
			return err
		}
		// A file with lines but no tape record is refused before the
		// debugger starts; a followed tape's unfinished last line is
		// not read (its recorder may be writing it).
		if err := tape.FindRecord(f, st.Size(), follow); err != nil {
			f.Close()
			return noTape(path, err)
		}
		x = tape.NewIndex(f)
		opts.Name, opts.Path, opts.Size = filepath.Base(path), path, st.Size()
	}
	defer x.Close()
	return runProgram(ctx, s, tui.New(x, opts))
}

// runOpenDiff shows tapes a and b side by side.
func runOpenDiff(ctx context.Context, s streams, pa, pb string, light bool) error {
	keys := compare.NewKeys(compare.Options{})
	a, err := openSide(pa, keys)
	if err != nil {
		return err
	}
	defer a.Index.Close()
	b, err := openSide(pb, keys)
	if err != nil {
		return err
	}
	defer b.Index.Close()
	r, err := compare.Compare(a, b, compare.Options{})
	if err != nil {
		return fmt.Errorf("open --diff: %w", err)
	}
	return runProgram(ctx, s, tui.NewCompare(a.Index, b.Index, filepath.Base(pa), filepath.Base(pb), r, light))
}

// maxGapUsage is --max-gap's help, for open and debug.
const maxGapUsage = "play recorded pauses longer than `D` (e.g. 2s) as D; 0 keeps every gap"

// breakUsage is --break's help, for open and debug.
const breakUsage = "set a breakpoint from the start: a `SPEC` as :break takes it (tools/call, tool=NAME, error, when EXPR) (repeatable)"

// parseBreaks reads --break specs.
func parseBreaks(specs []string) ([]debug.Breakpoint, error) {
	var bps []debug.Breakpoint
	for _, s := range specs {
		b, err := debug.ParseBreakpoint(s)
		if err != nil {
			return nil, fmt.Errorf("--break %q: %w", s, err)
		}
		bps = append(bps, b)
	}
	return bps, nil
}

// indent prefixes each line of s.
func indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(s, "\n", "\n"+prefix)
}

// runProgram runs a Bubble Tea program on the command's streams; an
// interrupt that ends it is not an error.
func runProgram(ctx context.Context, s streams, m tea.Model) error {
	_, err := runProgramModel(ctx, s, m)
	return err
}

// runProgramModel is runProgram, returning the model the program ended
// with.
func runProgramModel(ctx context.Context, s streams, m tea.Model) (tea.Model, error) {
	for _, f := range []struct {
		name string
		v    any
	}{{"input", s.stdin}, {"output", s.stdout}} {
		if fd, ok := f.v.(interface{ Fd() uintptr }); ok && !term.IsTerminal(fd.Fd()) {
			return nil, fmt.Errorf("the debugger needs a terminal, and its %s is not one (redirected from a file, a pipe or /dev/null?); for a report without one, try \"tapedeck stats\"", f.name)
		}
	}
	p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(s.stdin), tea.WithOutput(s.stdout))
	final, err := p.Run()
	if err != nil && ctx.Err() != nil && (errors.Is(err, tea.ErrProgramKilled) || errors.Is(err, context.Canceled)) {
		return final, nil
	}
	return final, err
}

// isTerminal reports whether both streams are terminals: then a bare
// "tapedeck" opens the demo instead of printing help.
func isTerminal(in io.Reader, out io.Writer) bool {
	fi, ok1 := in.(interface{ Fd() uintptr })
	fo, ok2 := out.(interface{ Fd() uintptr })
	return ok1 && ok2 && term.IsTerminal(fi.Fd()) && term.IsTerminal(fo.Fd())
}
