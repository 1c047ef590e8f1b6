package tui

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// faint reports whether s holds the SGR sequence for faint text.
func faint(s string) bool { return strings.Contains(s, "\x1b[2m") || strings.Contains(s, "\x1b[2;") }

// A tape opened is shown post-mortem: every row delivered (nothing
// faint), the cursor on the first failure, the failures counted in the
// status line; e and E walk the failures.
func TestOpenPostMortem(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	first := m.x.NextFailure(0, 1)
	if first < 0 {
		t.Fatal("the demo tape has no failure")
	}
	if got := m.timeline.Cursor(); got != first {
		t.Errorf("cursor on #%d at open, want the first failure #%d", got, first)
	}
	view := m.timeline.View()
	if faint(view) {
		t.Errorf("rows are drawn faint at open:\n%q", view)
	}
	status := ansi.Strip(m.statusView())
	rpc, tool := m.x.Failures()
	if rpc == 0 || tool == 0 {
		t.Fatalf("the demo tape has %d errors and %d tool errors; want both kinds", rpc, tool)
	}
	if want := "errors"; !strings.Contains(status, want) || !strings.Contains(status, "tool error") {
		t.Errorf("status line %q does not count the failures", status)
	}
	// } walks forward through every failure, { back.
	var seen []int
	for {
		before := m.timeline.Cursor()
		m = send(t, m, keys("}")...)
		if m.timeline.Cursor() == before {
			break
		}
		seen = append(seen, m.timeline.Cursor())
	}
	if len(seen) != rpc+tool-1 {
		t.Errorf("} visited %v after #%d: %d more failures, want %d", seen, first, len(seen), rpc+tool-1)
	}
	for _, s := range seen {
		if m.x.Failure(s) == tape.NoFailure || m.x.Entry(s).Kind != tape.KindResponse {
			t.Errorf("} stopped on #%d, which is no failed response", s)
		}
	}
	for range seen {
		m = send(t, m, keys("{")...)
	}
	if got := m.timeline.Cursor(); got != first {
		t.Errorf("{ back as often: cursor on #%d, want #%d", got, first)
	}
}

// space plays at once right after opening, while the tape is still being
// indexed in the background (the player's clock was anchored at tape time
// 0, so "playing 0/79" stayed forever).
func TestSpacePlaysRightAfterOpen(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
	m := New(tape.NewIndex(bytes.NewReader(assets.DemoTape)), Options{Name: "demo", Size: int64(len(assets.DemoTape)), Now: clock.now})
	m.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { clock.t = clock.t.Add(d); return fn(clock.t) }
	}
	m = m.resize(120, 40)
	m = send(t, m, m.Init()())
	if m.load.active || m.x.Len() == 0 {
		t.Fatalf("indexing did not finish: %d messages", m.x.Len())
	}
	m = send(t, m, keys("space")...)
	if pos := m.player.Position(); pos == 0 {
		t.Fatalf("after space the position is still 0: %s", ansi.Strip(m.statusView()))
	}
}

// Once playing, what lies ahead is faint, but a failure ahead keeps its
// red and a filter match its colour.
func TestPendingRowsKeepFailureAndMatchColours(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("/tool:echo", "enter")...)
	m = send(t, m, keys(":goto 1", "enter")...)
	red := m.styles.Timeline.Error.Render("X")
	redOn := red[:strings.Index(red, "X")]
	match := m.styles.Timeline.Match.Render("X")
	matchOn := match[:strings.Index(match, "X")]
	failure := m.x.NextFailure(2, 1)
	echo := m.timeline.Matches()[0]
	m.timeline.Select(0) // rows ahead are not under the cursor
	l := m.timeline.layout()
	if row := m.timeline.renderRow(failure, l); !strings.Contains(row, redOn) {
		t.Errorf("failure #%d ahead of playback is not red: %q", failure, row)
	}
	if row := m.timeline.renderRow(echo, l); !strings.Contains(row, matchOn) {
		t.Errorf("match #%d ahead of playback lost its colour: %q", echo, row)
	}
	if row := m.timeline.renderRow(failure+1, l); !faint(row) {
		t.Errorf("row #%d ahead of playback is not faint: %q", failure+1, row)
	}
}

// The screen at 80×24 and 200×60: columns sized by content, the summary
// column, the whole tape at open with the cursor on the first failure.
func TestViewGoldenSizes(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		for _, c := range []struct {
			name  string
			input []tea.Msg
		}{
			{"open", nil},
			{"next-failure", keys("}", "}")},
			{"playing", keys("l", "l", "l", "l", "l", "l")},
			{"state", keys("4", "}", "}")},
			{"help", keys("?")},
		} {
			name := fmt.Sprintf("%s-%dx%d", c.name, size.w, size.h)
			t.Run(name, func(t *testing.T) {
				m, _ := newTestModel(t, Options{})
				m = m.resize(size.w, size.h)
				m = send(t, m, c.input...)
				got := screen(m)
				if n := strings.Count(got, "\n") + 1; n != size.h {
					t.Errorf("screen has %d lines, want %d", n, size.h)
				}
				for i, l := range strings.Split(got, "\n") {
					if w := ansi.StringWidth(l); w > size.w {
						t.Errorf("line %d is %d columns wide, want at most %d: %q", i, w, size.w, l)
					}
				}
				golden(t, name, got)
			})
		}
	}
}

// The message view marks what the filter matched and scrolls to it.
func TestFilterMarksMatchInMessage(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("/get-sum", "enter")...)
	if len(m.timeline.Matches()) == 0 {
		t.Fatal("get-sum matches nothing on the demo tape")
	}
	view := m.detail.View()
	mark := m.styles.Detail.Mark.Render("get-sum")
	if !strings.Contains(view, mark[:strings.Index(mark, "get-sum")]) || !strings.Contains(ansi.Strip(view), "get-sum") {
		t.Errorf("the message view does not mark get-sum:\n%q", view)
	}
	m = send(t, m, keys("esc")...)
	if strings.Contains(m.detail.View(), mark[:strings.Index(mark, "get-sum")]) {
		t.Errorf("the mark stays after the filter was cleared")
	}
}

// --break sets breakpoints from the start: playing stops on the first.
func TestBreakpointsFromOptions(t *testing.T) {
	b, err := debug.ParseBreakpoint("tool=echo")
	if err != nil {
		t.Fatal(err)
	}
	m, _ := newTestModel(t, Options{Breakpoints: []debug.Breakpoint{b}})
	m = send(t, m, keys("space")...)
	echo := findSeq(t, m.x, func(e tape.Entry, p tape.Pair) bool { return e.Kind == tape.KindRequest && e.Method == "tools/call" })
	if m.play.lastHit == nil || m.play.lastHit.Seq != echo {
		t.Errorf("playing with --break tool=echo stopped at %+v, want before #%d", m.play.lastHit, echo)
	}
}

// b on a call asks: every call of the method, or the one tool.
func TestBreakOnCallAsksMethodOrTool(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	echo := findSeq(t, m.x, func(e tape.Entry, p tape.Pair) bool { return e.Kind == tape.KindRequest && e.Method == "tools/call" })
	m.selectSeq(echo)
	m = send(t, m, keys("b")...)
	if m.play.ask == nil || !strings.Contains(m.notice, "t the tool echo") {
		t.Fatalf("b on a tools/call row did not ask: notice %q", m.notice)
	}
	m = send(t, m, keys("t")...)
	bps := m.player.Breakpoints()
	if len(bps) != 1 || bps[0].Tool != "echo" {
		t.Fatalf("after b t: breakpoints %v, want one on the tool echo", bps)
	}
	m = send(t, m, keys("b", "m")...)
	if bps := m.player.Breakpoints(); len(bps) != 2 || bps[1].Method != "tools/call" {
		t.Fatalf("after b m: breakpoints %v, want tools/call added", bps)
	}
	// The list disables and enables one with space.
	m = send(t, m, keys("B", "space")...)
	if bps := m.player.Breakpoints(); !bps[0].Disabled {
		t.Errorf("space in the list did not disable breakpoint 1: %v", bps)
	}
	m = send(t, m, keys("space")...)
	if bps := m.player.Breakpoints(); bps[0].Disabled {
		t.Errorf("space again did not enable breakpoint 1: %v", bps)
	}
}

// :write FILE writes the message (or, in the pairing view, the pair); it
// does not replace a file unless write!; y leaves a copy in a file too.
func TestWriteAndCopyToFile(t *testing.T) {
	dir := t.TempDir()
	m, _ := newTestModel(t, Options{CopyDir: dir})
	echo := findSeq(t, m.x, func(e tape.Entry, p tape.Pair) bool { return e.Kind == tape.KindRequest && e.Method == "tools/call" })
	m.selectSeq(echo)
	path := filepath.Join(dir, "call.json")
	m = send(t, m, keys(":write "+path, "enter")...)
	data, err := os.ReadFile(path)
	if err != nil || !strings.Contains(string(data), `"name": "echo"`) || strings.Contains(string(data), "_meta") {
		t.Fatalf(":write: %v, notice %q, file:\n%s", err, m.notice, data)
	}
	m = send(t, m, keys("2", ":write "+path, "enter")...)
	if !strings.Contains(m.notice, "write! ") {
		t.Errorf(":write over a file: notice %q, want a refusal naming write!", m.notice)
	}
	m = send(t, m, keys(":write! "+path, "enter")...)
	data, _ = os.ReadFile(path)
	if !strings.Contains(string(data), `"name": "echo"`) || !strings.Contains(string(data), `"result"`) {
		t.Errorf(":write! in the pairing view did not write the request and its response:\n%s", data)
	}
	m = send(t, m, keys("y")...)
	copies, _ := filepath.Glob(filepath.Join(dir, "tapedeck-*.json"))
	if len(copies) != 1 || !strings.Contains(m.notice, copies[0]) {
		t.Errorf("y: copies %v, notice %q; want one file, named in the notice", copies, m.notice)
	}
}

// The stats pane lists the tape's warnings, not only their number; a
// damaged line's row shows its text.
func TestStatsPaneListsWarnings(t *testing.T) {
	data := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"y"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.001Z"}}
this line is damaged {"jsonrpc"
`
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	m := New(x, Options{Name: "w", CopyDir: t.TempDir()}).resize(120, 40)
	m = send(t, m, keys("3")...)
	s := ansi.Strip(m.stats.View())
	for _, want := range []string{"warnings", "line 2: request id 1 reused", "line 3:"} {
		if !strings.Contains(s, want) {
			t.Errorf("the stats pane lacks %q:\n%s", want, s)
		}
	}
	if row := ansi.Strip(m.timeline.renderRow(2, m.timeline.layout())); !strings.Contains(row, "this line is damaged") {
		t.Errorf("the damaged line's row does not show its text: %q", row)
	}
}

// HTTP tapes show where each session starts: the answer that assigned it.
func TestRowShowsNewSession(t *testing.T) {
	data := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z","http":"POST","transport":"http"}}
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"srv","version":"1"}},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.001Z","http":"POST","newSession":"0123456789abcdef","status":200,"transport":"http"}}
`
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	m := New(x, Options{Name: "s", CopyDir: t.TempDir()}).resize(160, 30)
	if row := ansi.Strip(m.timeline.renderRow(1, m.timeline.layout())); !strings.Contains(row, "new session 01234567… · srv 1") {
		t.Errorf("the initialize answer's row does not mark the new session: %q", row)
	}
}

// A recorded pause shows what comes next and when, so an idle gap does
// not look like a hang; --max-gap shortens it.
func TestIdleGapCountdown(t *testing.T) {
	data := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:30.000Z"}}
`
	for _, c := range []struct {
		maxGap time.Duration
		want   string
	}{{0, "#1 reply to tools/call in 30.0s"}, {2 * time.Second, "#1 reply to tools/call in 2.0s"}} {
		x := tape.NewIndex(strings.NewReader(data))
		if err := x.Extend(int64(len(data)), nil); err != nil {
			t.Fatal(err)
		}
		clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
		m := New(x, Options{Name: "gap", Now: clock.now, MaxGap: c.maxGap, CopyDir: t.TempDir()}).resize(160, 30)
		m.play.started = true
		m.player.Play(clock.now())
		m.player.Advance(clock.now())
		if st := ansi.Strip(m.statusView()); !strings.Contains(st, c.want) {
			t.Errorf("max gap %v: status %q, want %q", c.maxGap, st, c.want)
		}
	}
}

// The README's picture of the screen is the screen: the demo tape at
// 100×24 as it opens, the cursor on the first failure (the rejected
// server/discover probe before it is negotiation, not a failure).
func TestREADMEScreen(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "What step 2 looks like on the demo tape")
	if ok {
		_, block, ok = strings.Cut(block, "```text\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("README has no screen capture after \"What step 2 looks like on the demo tape\"")
	}
	m, _ := newTestModel(t, Options{Name: assets.DemoName})
	m = m.resize(100, 24)
	var got []string
	for _, l := range strings.Split(screen(m), "\n") {
		got = append(got, strings.TrimRight(l, " "))
	}
	if want := strings.TrimRight(block, "\n"); strings.Join(got, "\n") != want {
		t.Errorf("the README's screen is not the screen any more; now:\n%s\nREADME:\n%s", strings.Join(got, "\n"), want)
	}
}

// The help overlay fits 80×24: every key, q quit and tab included.
func TestHelpFits80x24(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = m.resize(80, 24)
	m = send(t, m, keys("?")...)
	s := screen(m)
	for _, b := range append(m.KeyMap.FullHelp(), m.timeline.KeyMap.FullHelp()...) {
		for _, k := range b {
			if !strings.Contains(s, k.Help().Desc) {
				t.Errorf("the help at 80×24 lacks %q (%s)", k.Help().Desc, k.Help().Key)
			}
		}
	}
}

// open TAPE:SEQ opens with the cursor on that message, not on the first
// failure; a message beyond the tape's end is a notice.
func TestOpenAtSeq(t *testing.T) {
	m, _ := newTestModel(t, Options{Seq: 3, SeqSet: true})
	if got := m.timeline.Cursor(); got != 3 {
		t.Errorf("cursor on #%d, want #3", got)
	}
	m, _ = newTestModel(t, Options{Seq: 100000, SeqSet: true})
	if !strings.Contains(m.notice, "message 100000: the tape has") || m.noticeOK {
		t.Errorf("notice %q", m.notice)
	}
}

// The demo's go-sdk client probes server/discover first, and
// server-everything (2025 era) rejects it with -32601: version
// negotiation. The cursor does not open on it, e and E do not stop on it,
// the status line does not count it, and its rows say "negotiation",
// faint, not red.
func TestNegotiationIsNoFailure(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	probe, answer := 1, 2
	if e := m.x.Entry(probe); e.Method != tape.MethodDiscover || !m.x.Negotiation(answer) {
		t.Fatalf("the demo's #%d is %s (negotiation %v); want the rejected server/discover probe", probe, e.Method, m.x.Negotiation(answer))
	}
	first := m.timeline.Cursor()
	if first <= answer || m.x.Failure(first) == tape.NoFailure {
		t.Errorf("cursor on #%d at open, want the first real failure, after the probe's answer #%d", first, answer)
	}
	m = send(t, m, keys("{")...)
	if got := m.timeline.Cursor(); got != first {
		t.Errorf("{ from the first failure #%d moved to #%d; the probe is no failure", first, got)
	}
	if status := ansi.Strip(m.statusView()); !strings.Contains(status, "2 errors, 2 tool errors") {
		t.Errorf("status line %q, want 2 errors, 2 tool errors (the probe's -32601 is not one)", status)
	}
	red := m.styles.Timeline.Error.Render("X")
	redOn := red[:strings.Index(red, "X")]
	l := m.timeline.layout()
	for _, i := range []int{probe, answer} {
		row := m.timeline.renderRow(i, l)
		if strings.Contains(row, redOn) || !faint(row) {
			t.Errorf("row #%d of the probe: red %v, faint %v; want faint, not red: %q", i, strings.Contains(row, redOn), faint(row), row)
		}
	}
	if row := ansi.Strip(m.timeline.renderRow(answer, l)); !strings.Contains(row, "negotiation") || strings.Contains(row, " error ") {
		t.Errorf("the probe's answer row %q, want status negotiation", row)
	}
}
