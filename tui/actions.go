package tui

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// runFilter starts matching f in the background.
func (m *Model) runFilter(f Filter) tea.Cmd {
	gen := m.filter.gen.Add(1)
	return filterCmd(m.x, f, gen, m.filter.gen)
}

// growFilter extends the current filter's matches to the messages appended
// since it last ran, in the background; a filter still running from scratch
// is left to finish instead.
func (m *Model) growFilter() tea.Cmd {
	if m.filter.covered == 0 || m.timeline.Matches() == nil {
		return m.runFilter(m.filter.q)
	}
	gen := m.filter.gen.Add(1)
	return filterGrowCmd(m.x, m.filter.q, m.timeline.Matches(), m.filter.covered, m.filter.watch, gen, m.filter.gen)
}

func (m Model) filterDone(msg filterDoneMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.filter.gen.Load() || msg.x != m.x {
		return m, nil
	}
	m.filter.q = msg.filter
	m.filter.covered, m.filter.watch = msg.n, msg.watch
	m.timeline.SetMatches(msg.matches)
	m.detail.SetHighlights(msg.filter.Highlights())
	if msg.grown {
		return m, nil // the tape grew: keep the cursor and the notice
	}
	if len(msg.matches) == 0 {
		m.notify(false, fmt.Sprintf("filter %q: no match", msg.filter.Query))
		return m, nil
	}
	m.notify(true, fmt.Sprintf("filter %q: %d matches (n/N next/previous, f only matches, esc clears)", msg.filter.Query, len(msg.matches)))
	if !m.timeline.isMatch(m.timeline.Cursor()) {
		return m.nextMatch(1), nil
	}
	m.showCursor()
	return m, nil
}

// nextMatch moves the cursor to the next (1) or previous (-1) match.
func (m Model) nextMatch(dir int) Model {
	ms := m.timeline.Matches()
	if len(ms) == 0 {
		m.notify(false, "no filter: / sets one")
		return m
	}
	cur := m.timeline.Cursor()
	var seq int
	if dir > 0 {
		i := sort.SearchInts(ms, cur+1)
		if i == len(ms) {
			i = 0 // wrap around
		}
		seq = ms[i]
	} else {
		i := sort.SearchInts(ms, cur) - 1
		if i < 0 {
			i = len(ms) - 1
		}
		seq = ms[i]
	}
	m.selectSeq(seq)
	return m
}

func (m Model) toggleOnlyMatches() Model {
	if m.timeline.Matches() == nil {
		m.notify(false, "no filter: / sets one")
		return m
	}
	m.timeline.SetOnlyMatches(!m.timeline.OnlyMatches())
	m.showCursor()
	return m
}

// toggleTasks expands the tasks' folded polls, or folds them again.
func (m Model) toggleTasks() Model {
	if !m.timeline.HasTasks() {
		m.notify(false, "no task polls to fold on this tape")
		return m
	}
	m.timeline.SetTasksExpanded(!m.timeline.TasksExpanded())
	if m.timeline.TasksExpanded() {
		m.notify(true, "task polls shown: T folds them")
	} else {
		m.notify(true, "task polls folded into their calls: T shows them")
	}
	m.showCursor()
	return m
}

func (m Model) clearFilter() Model {
	if m.filter.q.Empty() {
		return m
	}
	m.filter.gen.Add(1)
	m.filter.q = Filter{}
	m.filter.covered, m.filter.watch = 0, nil
	m.detail.SetHighlights(nil)
	cur := m.timeline.Cursor()
	m.timeline.SetMatches(nil)
	m.selectSeq(cur)
	m.notify(true, "filter cleared")
	return m
}

// jumpPartner moves the cursor to the other message of a request/response pair.
func (m Model) jumpPartner() Model {
	seq := m.timeline.Cursor()
	if seq < 0 {
		return m
	}
	p := m.x.Pair(seq)
	if p.Partner < 0 {
		m.notify(false, fmt.Sprintf("#%d has no partner", seq))
		return m
	}
	if m.timeline.OnlyMatches() && !m.timeline.isMatch(p.Partner) {
		m.timeline.SetOnlyMatches(false)
	}
	m.selectSeq(p.Partner)
	return m
}

// copyMessage puts the message under the cursor, as it crossed the wire, on
// the clipboard through OSC 52.
func (m Model) copyMessage() (tea.Model, tea.Cmd) {
	seq := m.timeline.Cursor()
	if seq < 0 {
		return m, nil
	}
	e, err := m.x.Message(seq)
	if err != nil {
		m.notify(false, err.Error())
		return m, nil
	}
	body := e.Raw
	if e.Kind != tape.KindInvalid {
		body = tape.StripMeta(e.Raw)
	}
	// OSC 52 reaches the clipboard only if the terminal (and tmux, whose
	// set-clipboard is off by default) passes it on, and nothing says
	// whether it did: the message is written to a file as well.
	dir := m.opts.CopyDir
	if dir == "" {
		dir = os.TempDir()
	}
	path := filepath.Join(dir, fmt.Sprintf("tapedeck-%d-%d.json", os.Getpid(), seq))
	if err := os.WriteFile(path, append(body, '\n'), 0o600); err != nil {
		m.notify(false, fmt.Sprintf("writing a copy failed: %v; #%d (%s) went to the clipboard only (OSC 52, which some terminals and tmux drop)", err, seq, sizeText(len(body))))
		return m, tea.SetClipboard(string(body))
	}
	m.notify(true, fmt.Sprintf("%s: copied #%d (%s) there and to the clipboard (OSC 52)", path, seq, sizeText(len(body))))
	return m, tea.SetClipboard(string(body))
}

// writeSelection writes the message under the cursor, or in the pairing
// view the request and its response, to path as JSON (:write FILE).
func (m Model) writeSelection(path string, force bool) Model {
	seq := m.timeline.Cursor()
	if seq < 0 {
		m.notify(false, "write: no message selected")
		return m
	}
	seqs := []int{seq}
	what := fmt.Sprintf("#%d", seq)
	if p := m.x.Pair(seq); m.lower == viewPair && p.Partner >= 0 {
		seqs = []int{min(seq, p.Partner), max(seq, p.Partner)}
		what = fmt.Sprintf("the pair #%d and #%d", seqs[0], seqs[1])
	}
	var out []byte
	for _, s := range seqs {
		e, err := m.x.Message(s)
		if err != nil {
			m.notify(false, fmt.Sprintf("write: %v", err))
			return m
		}
		body := e.Raw
		if e.Kind != tape.KindInvalid {
			body = tape.StripMeta(e.Raw)
		}
		out = append(append(out, prettyJSON(body, false)...), '\n')
	}
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if force {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if errors.Is(err, fs.ErrExist) {
		m.notify(false, fmt.Sprintf("write %s: the file exists; write! %s replaces it", path, path))
		return m
	}
	if err == nil {
		_, err = f.Write(out)
		err = errors.Join(err, f.Close())
	}
	if err != nil {
		m.notify(false, fmt.Sprintf("write: %v", err))
		return m
	}
	m.notify(true, fmt.Sprintf("%s: wrote %s (%s)", path, what, sizeText(len(out))))
	return m
}

func (m Model) promptSubmit(msg promptSubmitMsg) (tea.Model, tea.Cmd) {
	if msg.kind == promptFilter {
		return m.applyFilter(msg.text)
	}
	c, err := parseCommand(msg.text)
	if err != nil {
		m.notify(false, err.Error())
		return m, nil
	}
	return m.runCommand(c)
}

func (m Model) applyFilter(q string) (tea.Model, tea.Cmd) {
	f, err := ParseFilter(q)
	if err != nil {
		m.notify(false, err.Error())
		return m, nil
	}
	if f.Empty() {
		return m.clearFilter(), nil
	}
	m.notify(true, "filtering…")
	return m, m.runFilter(f)
}

// runCommand carries out a ":" command.
func (m Model) runCommand(c command) (tea.Model, tea.Cmd) {
	switch c.name {
	case "quit":
		return m.quit()
	case "goto":
		if m.live.active() && m.live.client == clientConnected {
			m.notify(false, "in a debug session the client drives playback: R ends its run, and the next run starts at the top")
			return m, nil
		}
		if c.atSet {
			if end, ok := m.tapeLength(); ok && c.at > end {
				m.notify(false, fmt.Sprintf("goto %s: past the tape's end at %s; :goto %d goes to the end", c.at, relTime(end), m.x.Len()-1))
				return m, nil
			}
			m.player.SeekTime(c.at)
		} else {
			if c.seq >= m.x.Len() {
				m.notify(false, fmt.Sprintf("goto %d: the tape has %d messages (0 to %d)", c.seq, m.x.Len(), m.x.Len()-1))
				return m, nil
			}
			m.player.Seek(c.seq)
		}
		m.play.started = true
		m.selectSeq(m.player.Position())
		m.syncPlayback()
		return m, m.live.deliveredCmd([]int{m.player.Position() - 1})
	case "write":
		return m.writeSelection(c.arg, c.force), nil
	case "break":
		b, err := debug.ParseBreakpoint(c.arg)
		if err != nil {
			m.notify(false, err.Error())
			return m, nil
		}
		id, err := m.player.AddBreakpoint(b)
		if err != nil {
			m.notify(false, err.Error())
			return m, nil
		}
		m.notify(true, fmt.Sprintf("breakpoint %d: %s", id, b))
		m.syncPlayback()
		return m, nil
	case "delete":
		for _, b := range m.player.Breakpoints() {
			if b.ID == c.seq {
				m.player.RemoveBreakpoint(c.seq)
				m.notify(true, fmt.Sprintf("breakpoint %d deleted", c.seq))
				m.syncPlayback()
				return m, nil
			}
		}
		m.notify(false, fmt.Sprintf("delete %d: no such breakpoint (B lists them)", c.seq))
		return m, nil
	case "speed":
		return m.setSpeed(c.speed)
	case "filter":
		return m.applyFilter(c.arg)
	case "messages":
		m.showLog, m.overlayTop = true, len(m.notices)*4 // scrolled to the newest; scrollBox clamps
		return m, nil
	}
	return m, nil
}

// breakpointListKey handles keys while the breakpoint list is open.
func (m Model) breakpointListKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	k := m.bplist.KeyMap
	switch {
	case key.Matches(msg, k.Close):
		m.bplist.Close()
	case key.Matches(msg, k.Delete):
		if b, ok := m.bplist.Selected(); ok {
			m.player.RemoveBreakpoint(b.ID)
			m.bplist.Open(m.player.Breakpoints())
			m.syncPlayback()
		}
	case key.Matches(msg, k.Toggle):
		if b, ok := m.bplist.Selected(); ok {
			m.player.SetBreakpointEnabled(b.ID, b.Disabled)
			m.bplist.Open(m.player.Breakpoints())
			m.syncPlayback()
		}
	default:
		m.bplist, _ = m.bplist.Update(msg)
	}
	return m, nil
}

// statusView is the bottom line: the prompt while it is open, else the
// playback state, the position and the latest notice.
func (m Model) statusView() string {
	if m.prompt.IsOpen() {
		return m.prompt.View()
	}
	s := m.styles
	var segs []string
	switch {
	case m.icpt.active():
		// Intercepting: what is held comes first; playback is not the
		// point of a live session.
		what, alert := m.interceptStatus()
		st := s.Status.Paused
		if alert {
			st = s.Status.Alert
		}
		segs = append(segs, st.Render(what), s.Status.Segment.Render(text.Plural(m.x.Len(), "message")))
		if rpc, tool := m.x.Failures(); rpc+tool > 0 {
			segs = append(segs, s.Status.Alert.Render(fmt.Sprintf("%s, %s (} next)", text.Plural(rpc, "error"), text.Plural(tool, "tool error"))))
		}
	case !m.play.started:
		// Post-mortem: the whole tape is on show; playing is a choice.
		segs = append(segs, s.Status.Paused.Render("■ whole tape"), s.Status.Segment.Render(text.Plural(m.x.Len(), "message")))
		rpc, tool := m.x.Failures()
		if rpc+tool > 0 {
			segs = append(segs, s.Status.Alert.Render(fmt.Sprintf("%s, %s (} next)", text.Plural(rpc, "error"), text.Plural(tool, "tool error"))))
		} else {
			segs = append(segs, s.Status.Segment.Render("no failures"))
		}
		segs = append(segs, s.Status.Segment.Render("space plays"))
	case m.player.Playing():
		segs = append(segs, s.Status.Playing.Render("▶ playing"))
	default:
		segs = append(segs, s.Status.Paused.Render("❚❚ paused"))
	}
	if m.play.started && !m.icpt.active() {
		segs = append(segs,
			s.Status.Segment.Render(fmt.Sprintf("%d/%d", m.player.Position(), m.x.Len())),
			s.Status.Segment.Render("t "+m.tapeClock()),
			s.Status.Segment.Render("speed "+speedText(m.player.Speed())),
		)
		// A recorded pause: say what comes and when, so an idle gap does
		// not look like a hang.
		if due, ok := m.player.NextDue(); ok && !due.IsZero() {
			if wait := due.Sub(m.now()); wait >= time.Second {
				segs = append(segs, s.Status.Info.Render(fmt.Sprintf("#%d %s in %.1fs (--max-gap shortens pauses)", m.player.Position(), m.methodOf(m.player.Position()), wait.Seconds())))
			}
		}
	}
	if n := len(m.player.Breakpoints()); n > 0 || m.play.hits > 0 {
		segs = append(segs, s.Status.Segment.Render(fmt.Sprintf("bp %d · hits %d", n, m.play.hits)))
	}
	if m.live.active() {
		text, alert := m.liveStatus()
		st := s.Status.Segment
		if alert {
			st = s.Status.Alert
		}
		if runs := m.live.runsText(); runs != "" {
			segs = append(segs, s.Status.Segment.Render(runs))
		}
		segs = append(segs, st.Render("client: "+text))
	}
	if m.load.active {
		pct := 0.0
		if m.load.total > 0 {
			pct = float64(m.load.done) / float64(m.load.total)
		}
		segs = append(segs, s.Status.Segment.Render(fmt.Sprintf("indexing %3.0f%% ", pct*100)+m.bar.ViewAs(pct)))
	}
	if m.findingTasks() {
		segs = append(segs, s.Status.Segment.Render("finding tasks…"))
	}
	if m.timeline.Matches() != nil {
		segs = append(segs, s.Status.Segment.Render(fmt.Sprintf("/%s: %d", m.filter.q.Query, len(m.timeline.Matches()))))
	}
	line := strings.Join(segs, "")
	right := "" // ? help is on the hint bar, always
	if m.notice == "" {
		return padStatus(line, right, m.width, s)
	}
	st := s.Status.Info
	if !m.noticeOK {
		st = s.Status.Alert
	}
	if one := line + st.Render(m.notice); lipglossWidth(one)+lipglossWidth(right) <= m.width {
		return padStatus(one, right, m.width, s)
	}
	// Too long: the notice gets lines of its own, above the segments.
	var out []string
	for _, l := range noticeLines(m.notice, m.width) {
		out = append(out, padANSI(st.Render(l), m.width))
	}
	return strings.Join(append(out, padStatus(line, right, m.width, s)), "\n")
}

func padStatus(left, right string, w int, s *Styles) string {
	lw, rw := lipglossWidth(left), lipglossWidth(right)
	if lw+rw > w {
		return padANSI(left, w)
	}
	return left + s.Status.Bar.Render(spaces(w-lw-rw)) + right
}
