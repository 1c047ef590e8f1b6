package tui

import (
	"errors"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// fakeRows are three tapes, newest first, in local time so the screens do
// not depend on the zone the tests run in.
func fakeRows() []SessionRow {
	at := func(d, h, m, s int) time.Time { return time.Date(2026, 11, d, h, m, s, 0, time.Local) }
	return []SessionRow{
		{Path: "/home/ana/work/ci-tapes/run-42.jsonl", Show: "~/work/ci-tapes/run-42.jsonl", Start: at(22, 14, 43, 5), Duration: 1700 * time.Millisecond,
			Servers: []string{"everything"}, Client: "sdkclient 1.0.0", Calls: 30, RPCErrors: 3, ToolErrors: 2},
		{Path: "/home/ana/.local/state/tapedeck/tapes/billing-20261122-144259.jsonl", Show: "~/.local/state/tapedeck/tapes/billing-20261122-144259.jsonl",
			Start: at(22, 14, 42, 59), Duration: 240 * time.Millisecond, Servers: []string{"billing", "ledger"}, Client: "claude-code 2.1.0", Calls: 3, ToolErrors: 1, Recording: true},
		{Path: "/srv/tapes/old.jsonl", Start: at(10, 9, 0, 0), Duration: 3*time.Minute + 5*time.Second, Servers: []string{"weather"}, Client: "mcporter 0.12.3", Calls: 12},
	}
}

// fakeSearch finds "declined" on the first tape, fails on "bad", and
// records what it was asked.
type fakeSearch struct{ asked []string }

func (f *fakeSearch) search(q string) ([]SessionHit, error) {
	f.asked = append(f.asked, q)
	switch q {
	case "bad":
		return nil, errors.New(`status "bad": expected one of ok, error`)
	case "declined":
		return []SessionHit{
			{Path: "/home/ana/work/ci-tapes/run-42.jsonl", Show: "~/work/ci-tapes/run-42.jsonl", Seq: 57, Kind: "response", Method: "tools/call", Target: "create_invoice", Status: "tool-error", Snippet: "»card declined« for acme",
				Time: time.Date(2026, 11, 22, 14, 43, 7, 0, time.Local)},
			{Path: "/home/ana/work/ci-tapes/run-42.jsonl", Show: "~/work/ci-tapes/run-42.jsonl", Seq: 56, Kind: "request", Method: "tools/call", Target: "create_invoice", Status: "tool-error", Snippet: "retry after a »declined« card"},
		}, nil
	}
	return nil, nil
}

func newTestSessions(t testing.TB, w, h int) (Sessions, *fakeSearch) {
	t.Helper()
	f := &fakeSearch{}
	m := NewSessions(SessionsOptions{Rows: fakeRows(), Search: f.search})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	return mm.(Sessions), f
}

// sendSessions runs msgs through Update, and the commands they return,
// as the runtime would; it reports whether the program quit.
func sendSessions(t testing.TB, m Sessions, msgs ...tea.Msg) (Sessions, bool) {
	t.Helper()
	quit := false
	queue := append([]tea.Msg(nil), msgs...)
	for len(queue) > 0 {
		msg := queue[0]
		queue = queue[1:]
		if _, ok := msg.(tea.QuitMsg); ok {
			quit = true
			continue
		}
		mm, cmd := m.Update(msg)
		m = mm.(Sessions)
		if cmd != nil {
			if out := cmd(); out != nil {
				if b, ok := out.(tea.BatchMsg); ok {
					for _, c := range b {
						if c != nil {
							if o := c(); o != nil {
								queue = append(queue, o)
							}
						}
					}
				} else {
					queue = append(queue, out)
				}
			}
		}
	}
	return m, quit
}

func sessionsScreen(m Sessions) string { return ansi.Strip(m.View().Content) }

// checkSize fails unless the screen is exactly w×h.
func checkSize(t *testing.T, s string, w, h int) {
	t.Helper()
	lines := strings.Split(s, "\n")
	if len(lines) != h {
		t.Errorf("%d lines, want %d:\n%s", len(lines), h, s)
	}
	for i, l := range lines {
		if ansi.StringWidth(l) != w {
			t.Errorf("line %d is %d wide, want %d: %q", i, ansi.StringWidth(l), w, l)
		}
	}
}

func TestSessionsGolden(t *testing.T) {
	for _, sz := range []struct {
		name string
		w, h int
	}{{"80x24", 80, 24}, {"120x40", 120, 40}} {
		m, _ := newTestSessions(t, sz.w, sz.h)
		s := sessionsScreen(m)
		checkSize(t, s, sz.w, sz.h)
		golden(t, "sessions-"+sz.name, s)

		m, _ = sendSessions(t, m, keys("/", "declined", "enter")...)
		s = sessionsScreen(m)
		checkSize(t, s, sz.w, sz.h)
		golden(t, "sessions-hits-"+sz.name, s)

		m, _ = sendSessions(t, m, keys("?")...)
		s = sessionsScreen(m)
		checkSize(t, s, sz.w, sz.h)
		golden(t, "sessions-help-"+sz.name, s)
	}
}

func TestSessionsTable(t *testing.T) {
	for _, w := range []int{80, 120, 200} {
		m, _ := newTestSessions(t, w, 24)
		s := sessionsScreen(m)
		lines := strings.Split(s, "\n")
		if !strings.Contains(lines[0], "3 tapes") {
			t.Errorf("%d: title %q", w, lines[0])
		}
		for i, h := range tapeHeaders {
			if i != colClient && !strings.Contains(lines[1], h) {
				t.Errorf("%d: header lacks %s: %q", w, h, lines[1])
			}
		}
		// Newest first, each row's tape named by its file, however narrow.
		for i, name := range []string{"run-42.jsonl", "● ", "/srv/tapes/old.jsonl"} {
			if !strings.Contains(lines[2+i], name) {
				t.Errorf("%d: row %d lacks %q: %q", w, i, name, lines[2+i])
			}
		}
		for _, want := range []string{"5 (2 tool)", "everything", "30", "1.7s"} {
			if !strings.Contains(lines[2], want) {
				t.Errorf("%d: the first row lacks %q: %q", w, want, lines[2])
			}
		}
		if w >= 120 && !strings.Contains(lines[2], "2026-11-22 14:43:05") {
			t.Errorf("%d: the full start time is missing: %q", w, lines[2])
		}
		if w == 80 && !strings.Contains(lines[2], "11-22 14:43") {
			t.Errorf("80: the short start time is missing: %q", lines[2])
		}
		// The status line has the whole path of the tape under the cursor.
		if !strings.Contains(lines[len(lines)-2], "~/work/ci-tapes/run-42.jsonl") {
			t.Errorf("%d: status line %q", w, lines[len(lines)-2])
		}
	}
}

func TestSessionsKeys(t *testing.T) {
	m, _ := newTestSessions(t, 80, 24)
	m, _ = sendSessions(t, m, keys("j", "down")...)
	if m.cursor != 2 {
		t.Fatalf("j, down: cursor %d, want 2", m.cursor)
	}
	m, _ = sendSessions(t, m, keys("j", "k")...)
	if m.cursor != 1 {
		t.Fatalf("j at the end, k: cursor %d, want 1", m.cursor)
	}
	m, _ = sendSessions(t, m, keys("G")...)
	if m.cursor != 2 {
		t.Fatalf("G: cursor %d", m.cursor)
	}
	m, _ = sendSessions(t, m, keys("g", "up")...)
	if m.cursor != 0 {
		t.Fatalf("g, up: cursor %d", m.cursor)
	}
	m, _ = sendSessions(t, m, keys("j")...)
	if !strings.Contains(strings.Split(sessionsScreen(m), "\n")[22], "billing-20261122-144259.jsonl · claude-code 2.1.0 · still being recorded") {
		t.Errorf("the status line does not follow the cursor:\n%s", sessionsScreen(m))
	}
	done, quit := sendSessions(t, m, keys("enter")...)
	c, ok := done.Choice()
	if !quit || !ok || c != (SessionChoice{Path: fakeRows()[1].Path}) {
		t.Fatalf("enter: quit %v, choice %+v %v", quit, c, ok)
	}

	// Resume: the cursor stays on that tape, even when the rows change.
	rows := append([]SessionRow{{Path: "/new.jsonl"}}, fakeRows()...)
	m = done.Resume(rows, "")
	if _, ok := m.Choice(); ok || m.cursor != 2 {
		t.Errorf("Resume: choice %v, cursor %d, want none and 2", ok, m.cursor)
	}
	m = m.Resume(rows, "open: no such file")
	if s := sessionsScreen(m); !strings.Contains(s, "open: no such file") {
		t.Errorf("Resume's note is not shown:\n%s", s)
	}

	_, quit = sendSessions(t, m, keys("q")...)
	if !quit {
		t.Error("q does not quit")
	}
	done, quit = sendSessions(t, m, keys("d")...)
	if c, ok := done.Choice(); !quit || !ok || !c.Demo {
		t.Errorf("d: quit %v, choice %+v", quit, c)
	}
	m2, _ := sendSessions(t, m, keys("?")...)
	if s := sessionsScreen(m2); !strings.Contains(s, "search every tape") || !strings.Contains(s, "tool:NAME") {
		t.Errorf("? does not show the keys and the search syntax:\n%s", s)
	}
	m2, quit = sendSessions(t, m2, keys("q")...)
	if quit || m2.showHelp {
		t.Errorf("a key closes the help, and does nothing else: quit %v, help %v", quit, m2.showHelp)
	}
}

func TestSessionsSearch(t *testing.T) {
	m, f := newTestSessions(t, 80, 24)
	m, _ = sendSessions(t, m, keys("j", "/")...)
	if !m.prompting || !strings.Contains(sessionsScreen(m), "/words") {
		t.Fatalf("/ does not open the search line:\n%s", sessionsScreen(m))
	}
	// esc closes the line without searching.
	m, _ = sendSessions(t, m, keys("esc")...)
	if m.prompting || len(f.asked) != 0 {
		t.Fatalf("esc: prompting %v, searched %v", m.prompting, f.asked)
	}
	m, _ = sendSessions(t, m, keys("/", "declined", "enter")...)
	if len(f.asked) != 1 || f.asked[0] != "declined" || !m.inHits {
		t.Fatalf("search: asked %q, hits shown %v", f.asked, m.inHits)
	}
	s := sessionsScreen(m)
	lines := strings.Split(s, "\n")
	if !strings.Contains(lines[0], `search declined · 2 hits`) {
		t.Errorf("title %q", lines[0])
	}
	if !strings.Contains(lines[2], "run-42.jsonl:57") || !strings.Contains(lines[2], "tools/call create_invoice") || !strings.Contains(lines[2], "»card declined« for acme") {
		t.Errorf("the first hit: %q", lines[2])
	}
	if !strings.Contains(lines[22], "tool-error") || !strings.Contains(lines[22], "esc back") {
		t.Errorf("status line of a hit: %q", lines[22])
	}
	m, _ = sendSessions(t, m, keys("j")...)
	done, quit := sendSessions(t, m, keys("enter")...)
	c, ok := done.Choice()
	if want := (SessionChoice{Path: "/home/ana/work/ci-tapes/run-42.jsonl", Seq: 56, SeqSet: true}); !quit || !ok || c != want {
		t.Fatalf("enter on a hit: quit %v, choice %+v, want %+v", quit, c, want)
	}

	// esc goes back to the table, the cursor where it was.
	m, _ = sendSessions(t, m, keys("esc")...)
	if m.inHits || m.cursor != 1 || !strings.Contains(sessionsScreen(m), "3 tapes") {
		t.Fatalf("esc: hits %v, cursor %d\n%s", m.inHits, m.cursor, sessionsScreen(m))
	}
	// / again starts from the last query; a failing search says why and
	// keeps the table.
	m, _ = sendSessions(t, m, keys("/")...)
	if m.input.Value() != "declined" {
		t.Errorf("the search line starts with %q", m.input.Value())
	}
	m.input.SetValue("")
	m, _ = sendSessions(t, m, keys("bad", "enter")...)
	if m.inHits || !strings.Contains(sessionsScreen(m), `status "bad"`) {
		t.Errorf("a failed search:\n%s", sessionsScreen(m))
	}
	// Nothing found: an empty list that says so.
	m, _ = sendSessions(t, m, keys("/")...)
	m.input.SetValue("")
	m, _ = sendSessions(t, m, keys("nothing", "enter")...)
	if !m.inHits || !strings.Contains(sessionsScreen(m), "no message matches") {
		t.Errorf("no hits:\n%s", sessionsScreen(m))
	}
	if _, quit := sendSessions(t, m, keys("enter")...); quit {
		t.Error("enter with no hits quit")
	}
	// An empty line searches for nothing.
	m, _ = sendSessions(t, m, keys("/")...)
	m.input.SetValue("  ")
	n := len(f.asked)
	m, _ = sendSessions(t, m, keys("enter")...)
	if len(f.asked) != n || !strings.Contains(sessionsScreen(m), "type words to look for") {
		t.Errorf("an empty search ran or said nothing:\n%s", sessionsScreen(m))
	}
}

// A search that finishes after a newer one started is dropped.
func TestSessionsStaleSearch(t *testing.T) {
	m, _ := newTestSessions(t, 80, 24)
	m.searchN = 2
	mm, _ := m.Update(sessionHitsMsg{n: 1, query: "old", hits: []SessionHit{{Path: "x"}}})
	if mm.(Sessions).inHits {
		t.Error("an older search's hits were shown")
	}
}

// Text from tapes cannot drive the terminal, and a tall list scrolls.
func TestSessionsEscapesAndScrolls(t *testing.T) {
	var rows []SessionRow
	for i := range 50 {
		rows = append(rows, SessionRow{Path: "/t/" + strings.Repeat("x", i%3) + ".jsonl", Servers: []string{"evil\x1b]52;c;AAAA\x07"}, Client: "c\nd"})
	}
	m := NewSessions(SessionsOptions{Rows: rows})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 24})
	m = mm.(Sessions)
	if c := m.View().Content; strings.Contains(c, "\x1b]52") || strings.Contains(c, "\x07") {
		t.Errorf("an escape sequence from a tape reached the screen: %q", c)
	}
	m, _ = sendSessions(t, m, keys("G")...)
	s := sessionsScreen(m)
	checkSize(t, s, 80, 24)
	if m.offset != 50-20 {
		t.Errorf("G: offset %d, want 30", m.offset)
	}
	m, _ = sendSessions(t, m, keys("/")...)
	if !strings.Contains(sessionsScreen(m), "search is not available") {
		t.Errorf("/ without a search function:\n%s", sessionsScreen(m))
	}
}

// libraryRows are tapes as a real library has them: long paths under the
// state directory, a tape of several servers, a long client name.
func libraryRows() []SessionRow {
	at := func(d, h, m, s int) time.Time { return time.Date(2026, 11, d, h, m, s, 0, time.Local) }
	return []SessionRow{
		{Path: "/home/ana/.local/state/tapedeck/tapes/server-everything-streamable-http-20261122-144259.jsonl", Show: "~/.local/state/tapedeck/tapes/server-everything-streamable-http-20261122-144259.jsonl",
			Start: at(22, 14, 42, 59), Duration: 12*time.Second + 400*time.Millisecond, Servers: []string{"server-everything"}, Client: "claude-code 2.1.0", Calls: 120, RPCErrors: 2, ToolErrors: 1},
		{Path: "/home/ana/work/ci/tapes/nightly/weather-billing-20261121-020000.jsonl", Show: "~/work/ci/tapes/nightly/weather-billing-20261121-020000.jsonl",
			Start: at(21, 2, 0, 0), Duration: 3*time.Minute + 5*time.Second, Servers: []string{"weather", "billing", "ledger"}, Client: "mcporter 0.12.3", Calls: 41, Recording: true},
		{Path: "/srv/tapes/old.jsonl", Start: at(10, 9, 0, 0), Duration: 900 * time.Millisecond, Servers: []string{"weather"}, Client: "sdkclient 1.0.0", Calls: 3},
	}
}

// The sessions view gives the PATH column the room it needs before it
// cuts a path (issue 24 item 7: at 160 columns paths were cut from the
// left with room to spare): the start loses its year and seconds, then the
// server and client columns narrow, before a path loses its directory; at
// widths where a path must be cut, it is cut from the left.
func TestSessionsPathWidth(t *testing.T) {
	for _, sz := range []struct {
		name string
		w, h int
	}{{"80x24", 80, 24}, {"120x40", 120, 40}, {"160x45", 160, 45}} {
		m := NewSessions(SessionsOptions{Rows: libraryRows(), Search: (&fakeSearch{}).search})
		mm, _ := m.Update(tea.WindowSizeMsg{Width: sz.w, Height: sz.h})
		s := sessionsScreen(mm.(Sessions))
		checkSize(t, s, sz.w, sz.h)
		golden(t, "sessions-paths-"+sz.name, s)
		lines := strings.Split(s, "\n")
		for i, r := range libraryRows() {
			if !strings.HasSuffix(strings.TrimRight(lines[2+i], " "), ".jsonl") {
				t.Errorf("%s: row %d's path is not cut from the left: %q", sz.name, i, lines[2+i])
			}
			if sz.w >= 160 && !strings.Contains(lines[2+i], show(r.Path, r.Show)) {
				t.Errorf("%s: row %d's path is cut though the screen has room for it: %q", sz.name, i, lines[2+i])
			}
		}
	}
}

// The view starts on the rows the index held while the refresh runs in a
// tea.Cmd: the progress line says how far it has read, and its rows are
// swapped in when it returns, the cursor on the same tape.
func TestSessionsBackgroundRefresh(t *testing.T) {
	old := fakeRows()[1:] // the index lacks the newest tape
	fresh := fakeRows()
	fresh[2].Calls = 99 // and the old one grew
	refreshed := make(chan struct{})
	progress := IndexProgress{}
	progressOK := false
	m := NewSessions(SessionsOptions{
		Rows: old,
		Refresh: func() ([]SessionRow, error) {
			<-refreshed
			return fresh, nil
		},
		Indexing: func() (IndexProgress, bool) { return progress, progressOK },
	})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 100, Height: 12})
	m = mm.(Sessions)
	s := sessionsScreen(m)
	checkSize(t, s, 100, 12)
	if !strings.Contains(s, "library · 2 tapes") || !strings.Contains(s, "billing-20261122-144259.jsonl") || strings.Contains(s, "run-42") {
		t.Fatalf("the first frame does not show what the index held:\n%s", s)
	}
	mm, _ = m.Update(tea.KeyPressMsg{Code: 'j', Text: "j"}) // the cursor on old.jsonl
	m = mm.(Sessions)

	// Init runs the refresh and the ticks; the refresh's command waits
	// until the test lets it return.
	var refreshCmd tea.Cmd
	start := m.Init()
	batch, ok := start().(tea.BatchMsg)
	if !ok || len(batch) != 3 {
		t.Fatalf("Init: %T, want a batch of the background colour, the refresh and a tick", start())
	}
	refreshCmd = batch[1]
	got := make(chan tea.Msg, 1)
	go func() { got <- refreshCmd() }()

	// A tick before the refresh reads any tape: no progress line.
	mm, cmd := m.Update(sessionsTickMsg{})
	m = mm.(Sessions)
	if cmd == nil {
		t.Fatal("a tick during the refresh did not ask for the next one")
	}
	if s := sessionsScreen(m); strings.Contains(s, "indexing") {
		t.Errorf("a progress line before any tape is read:\n%s", s)
	}
	progress, progressOK = IndexProgress{Tapes: 1, Read: 40e6, Total: 176e6}, true
	mm, _ = m.Update(sessionsTickMsg{})
	m = mm.(Sessions)
	s = sessionsScreen(m)
	checkSize(t, s, 100, 12)
	if !strings.Contains(s, "indexing 1 tape: 40 of 176 MB") {
		t.Errorf("no progress line:\n%s", s)
	}
	select {
	case msg := <-got:
		t.Fatalf("the refresh returned before it was let: %v", msg)
	default:
	}

	close(refreshed)
	mm, cmd = m.Update(<-got)
	m = mm.(Sessions)
	if cmd != nil {
		t.Errorf("the refreshed rows asked for a command: %v", cmd())
	}
	s = sessionsScreen(m)
	checkSize(t, s, 100, 12)
	if !strings.Contains(s, "library · 3 tapes") || !strings.Contains(s, "run-42.jsonl") || strings.Contains(s, "indexing") {
		t.Errorf("the fresh rows are not in, or the progress line stayed:\n%s", s)
	}
	if l := lineWith(s, "old.jsonl"); !strings.Contains(l, "99") {
		t.Errorf("old.jsonl's row is not the fresh one: %q", l)
	}
	if m.cursor != 2 {
		t.Errorf("the cursor is on row %d, want 2, the tape it was on (old.jsonl)", m.cursor)
	}
	if mm, cmd = m.Update(sessionsTickMsg{}); cmd != nil {
		t.Error("a tick after the refresh asked for another")
	}

	// Resume starts the refresh again.
	m = m.Resume(fresh, "")
	if b, ok := m.Init()().(tea.BatchMsg); !ok || len(b) != 3 {
		t.Errorf("Resume's Init does not refresh: %T", m.Init()())
	}
}

// A refresh that finds no tape in a library that held none picks the
// demo, when asked to; one that fails says so and keeps the rows.
func TestSessionsRefreshEmptyOrFailed(t *testing.T) {
	m := NewSessions(SessionsOptions{Refresh: func() ([]SessionRow, error) { return nil, nil }, EmptyDemo: true})
	mm, _ := m.Update(tea.WindowSizeMsg{Width: 80, Height: 10})
	m = mm.(Sessions)
	if s := sessionsScreen(m); !strings.Contains(s, "looking for tapes…") {
		t.Errorf("an empty first frame does not say the tapes are being looked for:\n%s", s)
	}
	m, quit := sendSessions(t, m, sessionsRefreshedMsg{})
	if c, ok := m.Choice(); !quit || !ok || !c.Demo || !c.Empty {
		t.Errorf("an empty library: quit %v, choice %+v %v; want the demo, Empty", quit, c, ok)
	}

	m = NewSessions(SessionsOptions{Rows: fakeRows(), Refresh: func() ([]SessionRow, error) { return nil, nil }})
	mm, _ = m.Update(tea.WindowSizeMsg{Width: 100, Height: 10})
	m = mm.(Sessions)
	m, _ = sendSessions(t, m, sessionsRefreshedMsg{err: errors.New("disk I/O error")})
	s := sessionsScreen(m)
	if !strings.Contains(s, "could not be brought up to date: disk I/O error") || !strings.Contains(s, "library · 3 tapes") {
		t.Errorf("a failed refresh:\n%s", s)
	}
}

func lineWith(s, sub string) string {
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}

// AfterRefresh runs once a refresh has brought the rows in, not after a
// failed one.
func TestSessionsAfterRefresh(t *testing.T) {
	calls := 0
	opts := SessionsOptions{Rows: fakeRows(), Refresh: func() ([]SessionRow, error) { return nil, nil }, AfterRefresh: func() { calls++ }}
	m := NewSessions(opts)
	if _, _ = sendSessions(t, m, sessionsRefreshedMsg{err: errors.New("disk I/O error")}); calls != 0 {
		t.Errorf("after a failed refresh: AfterRefresh ran %d times, want 0", calls)
	}
	m = NewSessions(opts)
	if m, _ = sendSessions(t, m, sessionsRefreshedMsg{rows: fakeRows()}); calls != 1 || len(m.Rows()) != 3 {
		t.Errorf("after a refresh: AfterRefresh ran %d times, %d rows; want 1 and 3", calls, len(m.Rows()))
	}
}
