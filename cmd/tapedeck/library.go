package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/internal/text"
)

// openLibrary opens the index of tapes in the state directory
// ($XDG_STATE_HOME/tapedeck/index.db), adds dirs to it, and brings it up to
// date with the tapes on disk. Its notes (a rebuilt index, an index in
// memory) and the progress of a refresh longer than a second go to stderr.
func openLibrary(ctx context.Context, s streams, dirs []string) (*library.Library, []string, error) {
	l, err := openIndex(s, s.stderr) // a line after 1 s of reading tapes, and how it ended
	if err != nil {
		return nil, nil, err
	}
	var added []string
	if len(dirs) > 0 {
		before, err := l.Roots()
		if err != nil {
			l.Close()
			return nil, nil, err
		}
		if added, err = l.Add(dirs...); err != nil {
			l.Close()
			return nil, nil, err
		}
		for _, a := range added {
			if !slices.Contains(before, a) {
				before = append(before, a)
				fmt.Fprintf(s.stderr, "tapedeck: added %s to the library for good (ls, search, prune and the sessions view cover it from now on); tapedeck ls --forget %s takes it out\n", text.Safe(shortPath(a)), text.Safe(shortPath(a)))
			}
		}
	}
	if _, err := l.Refresh(ctx); err != nil {
		l.Close()
		return nil, nil, err
	}
	return l, added, nil
}

// openIndex opens the index of tapes as it is, without bringing it up to
// date; a refresh's progress goes to progress (nil: nowhere).
func openIndex(s streams, progress io.Writer) (*library.Library, error) {
	tapes, err := tapesDir()
	if err != nil {
		return nil, err
	}
	return library.Open(library.Options{
		Path:       filepath.Join(filepath.Dir(tapes), "index.db"),
		DefaultDir: tapes,
		Notes:      s.stderr,
		Progress:   progress,
	})
}

// shortPath writes the home directory as ~.
func shortPath(p string) string {
	if home, err := os.UserHomeDir(); err == nil && home != "" && home != "/" {
		if rest, ok := strings.CutPrefix(p, home+string(filepath.Separator)); ok {
			return "~" + string(filepath.Separator) + rest
		}
	}
	return p
}

// shortDuration is a duration for a table: 850ms, 12.4s, 3m05s, 2h10m.
func shortDuration(d time.Duration) string { return text.Duration(d) }

// localTime is a timestamp for a table, in local time; "-" when unknown.
func localTime(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format("2006-01-02 15:04:05")
}
