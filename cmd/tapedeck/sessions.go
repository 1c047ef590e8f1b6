package main

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/tui"
)

// runSessions is bare "tapedeck" in a terminal: the sessions view on the
// library's tapes, and the debugger on the one the user picks (or on the
// demo), back to the sessions view when the debugger quits. With no tape
// in the library (a fresh install) it opens the demo at once, and writes
// nothing: the index is made only when there is a tape to index.
func runSessions(ctx context.Context, s streams) error {
	if !libraryExists() {
		return runOpen(ctx, s, "", tui.Options{})
	}
	// The index as it is: the view shows it at once and brings it up to
	// date in the background, with its own progress line (not stderr's,
	// under the view).
	l, err := openIndex(s, nil)
	if err != nil {
		return err
	}
	defer l.Close() // after cancel: once the refresh in the background has ended
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m, err := newSessions(rctx, l)
	if err != nil {
		return err
	}
	for {
		final, err := runProgramModel(ctx, s, m)
		if err != nil {
			return err
		}
		sm, ok := final.(tui.Sessions)
		if !ok {
			return nil
		}
		c, picked := sm.Choice()
		if !picked || ctx.Err() != nil {
			return nil
		}
		if c.Empty { // the library holds no tape: the demo, as on a fresh install
			return runOpen(ctx, s, "", tui.Options{})
		}
		path := c.Path
		if c.Demo {
			path = ""
		}
		note := ""
		if err := runOpen(ctx, s, path, tui.Options{Seq: c.Seq, SeqSet: c.SeqSet, QuitLabel: "back to the tapes"}); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			note = err.Error()
		}
		// The rows as they were: the view refreshes the library again (a
		// tape may have grown or gone meanwhile), in the background, where
		// a refresh may still be indexing.
		m = sm.Resume(sm.Rows(), note)
	}
}

// newSessions is the sessions view on the rows the index holds, with a
// refresh of the library (under ctx) to run in the background and its
// progress. With no row yet, a refresh that finds no tape picks the demo.
func newSessions(ctx context.Context, l *library.Library) (tui.Sessions, error) {
	rows, err := sessionRows(l)
	if err != nil {
		return tui.Sessions{}, err
	}
	return tui.NewSessions(tui.SessionsOptions{
		Rows:   rows,
		Search: func(q string) ([]tui.SessionHit, error) { return searchLibrary(ctx, l, q, time.Now()) },
		Refresh: func() ([]tui.SessionRow, error) {
			if _, err := l.Refresh(ctx); err != nil {
				return nil, err
			}
			return sessionRows(l)
		},
		// Once the rows are in, the text of the new tapes, so that a
		// search finds it ready; a search that needs it says what failed.
		AfterRefresh: func() { _ = l.IndexText(ctx) },
		Indexing: func() (tui.IndexProgress, bool) {
			p, ok := l.Indexing()
			return tui.IndexProgress{Tapes: p.Tapes, Read: p.Read, Total: p.Total}, ok
		},
		EmptyDemo: len(rows) == 0,
	}), nil
}

// libraryExists reports whether the library may hold a tape: its index
// exists (it names the directories tapedeck ls added), or the default
// directory holds a file named like a tape. It opens nothing.
func libraryExists() bool {
	tapes, err := tapesDir()
	if err != nil {
		return false
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(tapes), "index.db")); err == nil {
		return true
	}
	entries, err := os.ReadDir(tapes)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if !e.IsDir() && library.IsTapeName(e.Name()) {
			return true
		}
	}
	return false
}

// sessionRows are the library's tapes, newest first, as the sessions view
// lists them.
func sessionRows(l *library.Library) ([]tui.SessionRow, error) {
	tapes, err := l.Tapes()
	if err != nil {
		return nil, err
	}
	rows := make([]tui.SessionRow, 0, len(tapes))
	for _, t := range tapes {
		client := t.Client
		if t.ClientVersion != "" {
			client += " " + t.ClientVersion
		}
		rows = append(rows, tui.SessionRow{
			Path: t.Path, Show: shortPath(t.Path),
			Start: t.Start, Duration: t.Duration,
			Servers: t.Servers, Client: client, Calls: t.Calls,
			RPCErrors: t.RPCErrors, ToolErrors: t.ToolErrors,
			Recording: t.Partial,
		})
	}
	return rows, nil
}

// searchLimit caps the hits the sessions view lists.
const searchLimit = 500

// searchLibrary runs the sessions view's search line over the library
// (indexing, under ctx, the text of the tapes whose text is not yet).
func searchLibrary(ctx context.Context, l *library.Library, line string, now time.Time) ([]tui.SessionHit, error) {
	q, err := library.ParseSearchLine(line, now)
	if err != nil {
		return nil, err
	}
	q.Limit = searchLimit
	hits, err := l.SearchContext(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]tui.SessionHit, len(hits))
	for i, h := range hits {
		out[i] = tui.SessionHit{
			Path: h.Path, Show: shortPath(h.Path), Seq: h.Seq, Time: h.Time,
			Kind: h.Kind, Method: h.Method, Target: h.Target, Status: h.Status, Snippet: h.Snippet,
		}
	}
	return out, nil
}

func newDemoCmd(s streams) *cobra.Command {
	var light bool
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Step through the demo tape embedded in tapedeck",
		Long: `demo opens the debugger on a tape embedded in tapedeck: a real recording
of the go-sdk client with server-everything and the go-sdk server, with
failures to find and calls to step through. Press ? for the keys.

Bare tapedeck opens it too when the library holds no tape yet; once it
does, bare tapedeck lists the library's tapes, and d there opens the demo.`,
		Example: `  tapedeck demo           # the debugger on the demo tape
  tapedeck demo --light   # on a light terminal that does not report its background`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runOpen(cmd.Context(), s, "", tui.Options{Light: light})
		},
	}
	cmd.Flags().BoolVar(&light, "light", false, "start with the light theme (it follows the terminal's background when the terminal reports it)")
	return cmd
}
