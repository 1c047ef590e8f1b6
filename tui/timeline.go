package tui

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
)

// Timeline is the list of a tape's messages. It is virtualized: a frame
// reads only the rows on screen, so a tape of a million messages scrolls as
// fast as one of ten. With a filter it shows only the matching messages.
type Timeline struct {
	KeyMap TimelineKeyMap

	styles  *Styles
	x       *tape.Index
	cache   *rowCache
	t0      time.Time
	focused bool
	width   int
	height  int

	only    bool  // show only matches
	matches []int // sorted seqs the filter matches; nil without a filter
	cursor  int   // seq under the cursor
	offset  int   // first visible row (an index into the shown rows)

	position int // playback position: rows from it on are not delivered yet
	playback bool
	breaks   map[string]bool // methods with a breakpoint, marked on their rows
	diverged map[int]bool
	shadow   map[int]string // rows of a call the shadow lane answered otherwise: the difference's kind
	hitSeq   int            // the row a breakpoint stopped at, or -1

	tasks taskFolds // the tasks' polls, folded into their creating calls
	view  []int     // the shown seqs when not all are (a filter's only, folded polls); nil for all
}

// NewTimeline returns a timeline over x.
func NewTimeline(x *tape.Index, s *Styles) Timeline {
	t := Timeline{KeyMap: DefaultTimelineKeyMap(), styles: s, hitSeq: -1, breaks: map[string]bool{}, diverged: map[int]bool{}}
	t.SetIndex(x)
	return t
}

// SetIndex points the timeline at a (new or grown) index.
func (t *Timeline) SetIndex(x *tape.Index) {
	if t.x != x {
		t.x = x
		t.cache = newRowCache(x)
		t.t0 = time.Time{}
	} else {
		t.cache.forget()
	}
	if t.t0.IsZero() {
		t.t0 = startTime(x)
	}
	t.rebuildView()
	t.clamp()
}

// startTime is the first timestamp of the tape: it looks at the first few
// messages only.
func startTime(x *tape.Index) time.Time {
	for i := 0; i < x.Len() && i < 64; i++ {
		if e := x.Entry(i); !e.Time.IsZero() {
			return e.Time
		}
	}
	return time.Time{}
}

// SetSize sets the pane's size, header line included.
func (t *Timeline) SetSize(w, h int) { t.width, t.height = w, h; t.clamp() }

// Focus gives the timeline the keyboard.
func (t *Timeline) Focus() { t.focused = true }

// Blur takes the keyboard away.
func (t *Timeline) Blur() { t.focused = false }

// Focused reports whether the timeline has the keyboard.
func (t Timeline) Focused() bool { return t.focused }

// Cursor returns the seq under the cursor, or -1 on an empty tape.
func (t Timeline) Cursor() int {
	if t.rowCount() == 0 {
		return -1
	}
	return t.cursor
}

// SetPosition marks messages from seq on as not yet delivered (dimmed);
// playback false shows every message as delivered.
func (t *Timeline) SetPosition(seq int, playback bool) { t.position, t.playback = seq, playback }

// SetBreakpointMethods marks the rows of these methods with a breakpoint dot.
func (t *Timeline) SetBreakpointMethods(m map[string]bool) { t.breaks = m }

// SetShadowDiffs marks the rows of calls the shadow lane answered
// otherwise (seq -> the difference's kind: result, status, params, onlyA).
func (t *Timeline) SetShadowDiffs(d map[int]string) { t.shadow = d }

// MarkDiverged marks seq as where a live client diverged.
func (t *Timeline) MarkDiverged(seq int) { t.diverged[seq] = true }

// ClearDiverged forgets the divergence marks (a new client run).
func (t *Timeline) ClearDiverged() { clear(t.diverged) }

// SetHit marks the row a breakpoint stopped at (-1 for none).
func (t *Timeline) SetHit(seq int) { t.hitSeq = seq }

// SetMatches sets the filter's matches (sorted seqs; nil clears the filter).
func (t *Timeline) SetMatches(m []int) {
	t.matches = m
	if m == nil {
		t.only = false
	}
	t.rebuildView()
	t.clamp()
}

// Matches returns the filter's matches.
func (t Timeline) Matches() []int { return t.matches }

// SetOnlyMatches shows only the matching rows (true) or all rows.
func (t *Timeline) SetOnlyMatches(on bool) {
	t.only = on && t.matches != nil
	t.rebuildView()
	t.selectNear(t.cursor)
}

// OnlyMatches reports whether only matching rows are shown.
func (t Timeline) OnlyMatches() bool { return t.only }

func (t Timeline) rowCount() int {
	if t.view != nil || t.only {
		return len(t.view)
	}
	return t.x.Len()
}

// seqAt returns the seq of shown row r.
func (t Timeline) seqAt(r int) int {
	if t.view != nil {
		return t.view[r]
	}
	return r
}

// rowOf returns the shown row of seq, or of the nearest shown seq before it.
func (t Timeline) rowOf(seq int) int {
	if t.view == nil && !t.only {
		return seq
	}
	r := sort.SearchInts(t.view, seq)
	if r < len(t.view) && t.view[r] == seq {
		return r
	}
	return max(r-1, 0)
}

// folded reports whether seq is a task's poll folded away.
func (t Timeline) folded(seq int) bool {
	if t.tasks.expanded {
		return false
	}
	_, ok := slices.BinarySearch(t.tasks.hidden, seq)
	return ok
}

func (t *Timeline) isMatch(seq int) bool {
	if t.matches == nil {
		return false
	}
	r := sort.SearchInts(t.matches, seq)
	return r < len(t.matches) && t.matches[r] == seq
}

// Select moves the cursor to seq and scrolls it into view: a jump to a
// task's folded poll expands the tasks; a row the filter hides gives the
// nearest shown row before it.
func (t *Timeline) Select(seq int) {
	if t.folded(seq) {
		t.tasks.expanded = true
		t.rebuildView()
	}
	t.selectNear(seq)
}

// selectNear moves the cursor to seq or the nearest shown row before it.
func (t *Timeline) selectNear(seq int) {
	n := t.rowCount()
	if n == 0 {
		t.cursor, t.offset = 0, 0
		return
	}
	r := min(max(t.rowOf(seq), 0), n-1)
	t.cursor = t.seqAt(r)
	t.scrollTo(r)
}

func (t *Timeline) scrollTo(r int) {
	if t.height == 0 {
		return // not laid out yet: the first SetSize scrolls
	}
	vis := t.visibleRows()
	if r < t.offset {
		t.offset = r
	}
	if r >= t.offset+vis {
		t.offset = r - vis + 1
	}
	t.offset = max(min(t.offset, t.rowCount()-vis), 0)
}

func (t *Timeline) clamp() {
	n := t.rowCount()
	if n == 0 {
		t.cursor, t.offset = 0, 0
		return
	}
	if t.cursor >= t.x.Len() {
		t.cursor = t.x.Len() - 1
	}
	t.selectNear(t.cursor)
}

// AtEnd reports whether the cursor is on the last shown row.
func (t Timeline) AtEnd() bool {
	n := t.rowCount()
	return n == 0 || t.rowOf(t.cursor) == n-1
}

func (t Timeline) visibleRows() int { return max(t.height-1, 1) }

// Move moves the cursor by delta shown rows.
func (t *Timeline) Move(delta int) {
	n := t.rowCount()
	if n == 0 {
		return
	}
	r := min(max(t.rowOf(t.cursor)+delta, 0), n-1)
	t.cursor = t.seqAt(r)
	t.scrollTo(r)
}

// ClickRow selects the row at line y of the pane (0 is the header).
func (t *Timeline) ClickRow(y int) bool {
	r := t.offset + y - 1
	if y < 1 || r >= t.rowCount() {
		return false
	}
	t.cursor = t.seqAt(r)
	return true
}

// Update handles the timeline's keys when it has the focus, and the mouse
// wheel.
func (t Timeline) Update(msg tea.Msg) (Timeline, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !t.focused {
			return t, nil
		}
		switch {
		case key.Matches(msg, t.KeyMap.Up):
			t.Move(-1)
		case key.Matches(msg, t.KeyMap.Down):
			t.Move(1)
		case key.Matches(msg, t.KeyMap.PageUp):
			t.Move(-t.visibleRows())
		case key.Matches(msg, t.KeyMap.PageDown):
			t.Move(t.visibleRows())
		case key.Matches(msg, t.KeyMap.First):
			t.Move(-t.rowCount())
		case key.Matches(msg, t.KeyMap.Last):
			t.Move(t.rowCount())
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			t.Move(-3)
		case tea.MouseWheelDown:
			t.Move(3)
		}
	}
	return t, nil
}

// Fixed column widths.
const (
	colMark   = 3
	colTime   = 10
	colDir    = 2
	colLat    = 9
	colStatus = 12 // "negotiation" and a space
)

// layout is the width of each column for one frame: the fixed ones, and
// the server, method and target columns sized by the rows on screen, the
// summary taking what is left. A tape of one server has no server column.
type layout struct {
	seq, server, method, target, summary int
}

// layout sizes the columns for the rows on screen.
func (t Timeline) layout() layout {
	l := layout{seq: max(len(strconv.Itoa(t.x.Len()-1))+1, 4)}
	var server, method, target int
	multi := len(t.x.Servers()) > 1
	vis, n := t.visibleRows(), t.rowCount()
	for line := range vis {
		r := t.offset + line
		if r >= n {
			break
		}
		row := t.cache.get(t.seqAt(r))
		if multi {
			server = max(server, ansi.StringWidth(row.entry.Server))
		}
		method = max(method, ansi.StringWidth(row.label()))
		target = max(target, ansi.StringWidth(row.tool))
	}
	if multi {
		server = max(server, len("server"))
	}
	rest := t.width - (colMark + l.seq + colTime + colDir + colLat + colStatus)
	// Each named column gets what it needs, up to a share of the rest; the
	// summary gets at least a quarter when the screen is narrow.
	l.server = min(server+1, 17, rest/6)
	if l.server < 8 {
		l.server = 0 // too narrow to tell servers apart: the detail pane names it
	}
	rest -= l.server
	if target > 0 {
		target = max(target, len("target"))
	}
	share := rest * 3 / 5
	if target > 0 {
		share = rest * 2 / 5
	}
	l.method = min(max(method, len("method"))+1, 40, max(share, 10))
	rest -= l.method
	if target > 0 {
		l.target = min(target+1, 30, max(rest/2, 8))
	}
	rest -= l.target
	l.summary = max(rest, 0)
	return l
}

// View renders the header and the visible rows, exactly height lines.
func (t Timeline) View() string {
	l := t.layout()
	var b strings.Builder
	hdr := pad("", colMark) + padLeft("seq", l.seq-1) + " " + padLeft("time", colTime-1) + " " + pad("", colDir)
	if l.server > 0 {
		hdr += cell("server", l.server)
	}
	hdr += cell("method", l.method)
	if l.target > 0 {
		hdr += cell("target", l.target)
	}
	hdr += padLeft("latency", colLat-1) + " " + pad("status", colStatus) + pad("summary", l.summary)
	b.WriteString(t.styles.Timeline.Header.Render(pad(hdr, t.width)))
	vis := t.visibleRows()
	n := t.rowCount()
	for line := range vis {
		b.WriteByte('\n')
		r := t.offset + line
		if r >= n {
			b.WriteString(strings.Repeat(" ", t.width))
			continue
		}
		b.WriteString(t.renderRow(t.seqAt(r), l))
	}
	return b.String()
}

// Row columns, in order.
const (
	cMark = iota
	cSeq
	cTime
	cDir
	cServer
	cMethod
	cTarget
	cLat
	cStatus
	cSummary
)

func (t Timeline) renderRow(seq int, l layout) string {
	r := t.cache.get(seq)
	e := r.entry
	s := t.styles
	mark := " "
	switch {
	case t.diverged[seq]:
		mark = "✗"
	case seq == t.hitSeq:
		mark = "◆"
	case t.breaks[e.Method] && e.Kind != tape.KindResponse:
		mark = "●"
	}
	pos := " "
	if t.playback && seq == t.position {
		pos = "▶"
	}
	cur := " "
	if seq == t.cursor {
		cur = "›" // visible without colour too
	}
	tm := ""
	if !e.Time.IsZero() && !t.t0.IsZero() {
		tm = relTime(e.Time.Sub(t.t0))
	}
	cols := []string{
		cMark:    mark + pos + cur,
		cSeq:     padLeft(strconv.Itoa(seq), l.seq-1) + " ",
		cTime:    padLeft(tm, colTime-1) + " ",
		cDir:     pad(arrow(e.Dir), colDir),
		cServer:  cell(e.Server, l.server),
		cMethod:  cell(r.label(), l.method),
		cTarget:  cell(r.tool, l.target),
		cLat:     padLeft(r.latency(), colLat-1) + " ",
		cStatus:  pad(r.status, colStatus),
		cSummary: pad(r.summary, l.summary),
	}
	summary := t.taskSummary(seq, r.summary)
	cols[cSummary] = pad(summary, l.summary)
	if kind, ok := t.shadow[seq]; ok {
		cols[cSummary] = pad(shadowMark(kind)+" · "+summary, l.summary)
	}
	if t.diverged[seq] {
		cols[cStatus] = pad("DIVERGED", colStatus)
	}
	if l.server == 0 {
		cols[cServer] = ""
	}
	if l.target == 0 {
		cols[cTarget] = ""
	}
	line := strings.Join(cols, "")
	switch {
	case seq == t.cursor && t.focused:
		return s.Timeline.Cursor.Render(pad(line, t.width))
	case seq == t.cursor:
		return s.Timeline.CursorBlur.Render(pad(line, t.width))
	case t.diverged[seq]:
		return s.Timeline.Diverged.Render(pad(line, t.width))
	}
	// Colour the parts that carry meaning. A row playback has not
	// delivered yet is faint, but a failure stays red and a match keeps
	// its colour: a failing tape must not look like a passing one.
	pending := t.playback && seq >= t.position
	if cols[cMark] != "   " {
		cols[cMark] = s.Timeline.Breakpoint.Render(cols[cMark])
	}
	switch {
	case pending:
		cols[cDir] = s.Timeline.Pending.Render(cols[cDir])
	case e.Dir == tape.DirSend:
		cols[cDir] = s.Timeline.Send.Render(cols[cDir])
	case e.Dir == tape.DirRecv:
		cols[cDir] = s.Timeline.Recv.Render(cols[cDir])
	default:
		cols[cDir] = s.Timeline.Lifecycle.Render(cols[cDir])
	}
	body := s.Timeline.Row
	switch {
	case t.isMatch(seq) && !t.only:
		body = s.Timeline.Match
	case pending:
		body = s.Timeline.Pending
	case r.faint:
		body = s.Timeline.Negotiation
	case e.Kind == tape.KindLifecycle:
		body = s.Timeline.Lifecycle
	}
	for _, i := range []int{cSeq, cTime, cServer, cMethod, cTarget, cLat} {
		if cols[i] != "" {
			cols[i] = body.Render(cols[i])
		}
	}
	if r.err {
		cols[cStatus] = s.Timeline.Error.Render(cols[cStatus])
		cols[cMethod] = s.Timeline.Error.Render(ansi.Strip(cols[cMethod]))
		cols[cSummary] = s.Timeline.Error.Render(cols[cSummary])
	} else if r.faint {
		cols[cStatus] = body.Render(cols[cStatus])
		cols[cSummary] = body.Render(cols[cSummary])
	} else {
		cols[cStatus] = body.Render(cols[cStatus])
		cols[cSummary] = s.Timeline.Summary.Render(cols[cSummary])
	}
	out := strings.Join(cols, "")
	if w := ansi.StringWidth(out); w < t.width {
		out += strings.Repeat(" ", t.width-w)
	}
	return ansi.Truncate(out, t.width, "")
}

// pad cuts or pads s to exactly w columns.
func pad(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w-1, "") + "…"
	}
	return s + strings.Repeat(" ", w-sw)
}

// cell pads s to w columns, keeping the last one blank as a separator.
func cell(s string, w int) string { return pad(s, w-1) + " " }

// padLeft right-aligns s in w columns.
func padLeft(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw > w {
		return ansi.Truncate(s, w, "")
	}
	return strings.Repeat(" ", w-sw) + s
}
