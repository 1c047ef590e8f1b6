package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/internal/text"
)

func newPruneCmd(s streams) *cobra.Command {
	var (
		olderThan string
		dryRun    bool
	)
	cmd := &cobra.Command{
		Use:   "prune --older-than D [DIR...]",
		Short: "Delete the library's tapes older than an age",
		Long: `prune deletes the tapes of the library (see tapedeck ls) whose last
message is older than D, and says which. D is an age (90m, 24h, 7d, 2w) or
a date (2026-01-31). A tape without timestamps is as old as its file; a tape
written to in the last half minute is being recorded and never pruned.

With DIR (or TAPE) arguments, only the tapes there are considered. Files
that are not tapes are never touched. --dry-run says what would go.`,
		Example: `  tapedeck prune --older-than 30d --dry-run     # what would go
  tapedeck prune --older-than 30d
  tapedeck prune --older-than 2026-01-01 ~/work/tapes`,
		RunE: func(cmd *cobra.Command, args []string) error {
			if olderThan == "" {
				return errors.New("prune: expected --older-than D, e.g. --older-than 30d")
			}
			cutoff, err := library.ParseAge(olderThan, time.Now())
			if err != nil {
				return fmt.Errorf("prune --older-than %w", err)
			}
			var under []string
			if len(args) > 0 {
				if under, err = library.Clean(args); err != nil {
					return err
				}
				for _, u := range under {
					if _, err := os.Stat(u); err != nil {
						return fmt.Errorf("prune: %w", err)
					}
				}
			}
			l, _, err := openLibrary(cmd.Context(), s, nil)
			if err != nil {
				return err
			}
			defer l.Close()
			old, busy, err := l.Older(cutoff, under...)
			if err != nil {
				return err
			}
			verb := "removed"
			if dryRun {
				verb = "would remove"
			}
			var n int
			var bytes int64
			for _, t := range old {
				if !dryRun {
					if err := os.Remove(t.Path); err != nil {
						if !errors.Is(err, os.ErrNotExist) {
							fmt.Fprintf(s.stderr, "tapedeck: cannot remove %s: %v\n", t.Path, err)
						}
						continue
					}
				}
				n++
				bytes += t.Size
				fmt.Fprintf(s.stdout, "%s %s (last message %s, %s)\n", verb, shortPath(t.Path), localTime(t.End()), sizeString(t.Size))
			}
			for _, t := range busy {
				fmt.Fprintf(s.stdout, "skipped %s (last message %s): written to in the last %s, so taken for one being recorded\n", shortPath(t.Path), localTime(t.End()), text.Duration(library.Settle))
			}
			skipped := ""
			if len(busy) > 0 {
				skipped = fmt.Sprintf("; skipped %s written to in the last %s", text.Plural(len(busy), "tape"), text.Duration(library.Settle))
			}
			fmt.Fprintf(s.stdout, "%s %s, %s, older than %s%s\n", verb, text.Plural(n, "tape"), sizeString(bytes), localTime(cutoff), skipped)
			if !dryRun && n > 0 {
				_, err = l.Refresh(cmd.Context()) // forget them
			}
			return err
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "delete tapes whose last message is older than `D`: an age (7d, 24h) or a date (2026-01-31)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "say what would be deleted, delete nothing")
	return cmd
}

// sizeString is a byte count for people: 512 B, 3.4 KB, 1.2 MB, 2.0 GB.
func sizeString(n int64) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1e6:
		return fmt.Sprintf("%.1f KB", float64(n)/1e3)
	case n < 1e9:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
	return fmt.Sprintf("%.1f GB", float64(n)/1e9)
}
