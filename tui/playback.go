package tui

import (
	"fmt"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// Playback semantics: the debug.Player's position splits the tape in
// two. Messages before it are delivered and drawn normally; the message at
// it (marked ▶) and everything after are not delivered yet and are drawn
// dimmed, never hidden, so the user can look ahead and set breakpoints
// there. Stepping and playing move the position, and the cursor follows the
// last message delivered (or the message a breakpoint stopped before).

// playTickMsg asks the app to deliver the messages that fell due.
type playTickMsg struct{ gen int }

// maxTick bounds the wait between ticks so the status bar's clock moves.
const maxTick = 250 * time.Millisecond

// scheduleTick returns the command that wakes playback when the next
// message falls due.
func (m Model) scheduleTick() tea.Cmd {
	due, ok := m.player.NextDue()
	if !ok {
		return nil
	}
	d := time.Duration(0)
	if !due.IsZero() {
		d = due.Sub(m.now())
	}
	d = min(max(d, time.Millisecond), maxTick)
	gen := m.play.gen
	return m.tick(d, func(time.Time) tea.Msg { return playTickMsg{gen} })
}

func (m Model) togglePlay() (tea.Model, tea.Cmd) {
	if m.player.Playing() {
		m.player.Pause(m.now())
		m.play.gen++
		m.syncPlayback()
		return m, nil
	}
	if m.player.Position() >= m.x.Len() {
		m.player.Seek(0) // at the end: play again from the start
	}
	m.play.lastHit = nil
	m.play.started = true
	m.timeline.SetHit(-1)
	m.player.Play(m.now())
	m.play.gen++
	return m.playTick(playTickMsg{m.play.gen})
}

// playTick delivers what fell due, stops on a breakpoint, and schedules the
// next tick.
func (m Model) playTick(msg playTickMsg) (tea.Model, tea.Cmd) {
	if msg.gen != m.play.gen || !m.player.Playing() {
		return m, nil
	}
	delivered, hit := m.player.Advance(m.now())
	var cmds []tea.Cmd
	if len(delivered) > 0 {
		cmds = append(cmds, m.live.deliveredCmd(delivered))
		m.selectSeq(delivered[len(delivered)-1])
	}
	if hit != nil {
		m.play.hits++
		m.play.lastHit = hit
		m.timeline.SetHit(hit.Seq)
		m.selectSeq(hit.Seq)
		m.notify(true, fmt.Sprintf("breakpoint %d (%s) before #%d", hit.Breakpoint.ID, hit.Breakpoint, hit.Seq))
	}
	if m.player.Position() >= m.x.Len() && m.player.Playing() {
		m.player.Pause(m.now()) // played to the end
		m.notify(true, "end of the tape")
	}
	m.syncPlayback()
	cmds = append(cmds, m.scheduleTick())
	return m, tea.Batch(cmds...)
}

// step delivers one message forward (dir 1) or takes one back (dir -1).
func (m Model) step(dir int) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	m.play.started = true
	if dir > 0 {
		seq, ok := m.player.Step()
		if !ok {
			if m.player.Position() < m.x.Len() {
				m.notify(true, fmt.Sprintf("the tape waits for the client's #%d %s", m.player.Position(), m.methodOf(m.player.Position())))
			} else {
				m.notify(true, "at the end of the tape")
			}
			return m, nil
		}
		cmd = m.live.deliveredCmd([]int{seq})
		m.selectSeq(seq)
	} else {
		seq, ok := m.player.StepBack()
		if !ok {
			m.notify(true, "at the start of the tape")
			return m, nil
		}
		m.selectSeq(seq) // the message taken back, now the next one (▶)
	}
	m.play.lastHit = nil
	m.timeline.SetHit(-1)
	m.syncPlayback()
	return m, cmd
}

// seekRequest moves the position to the next (dir 1) or previous (-1)
// client request after or before the cursor: it becomes the next message.
func (m Model) seekRequest(dir int) Model {
	n := m.x.Len()
	for i := m.timeline.Cursor() + dir; i >= 0 && i < n; i += dir {
		if e := m.x.Entry(i); e.Kind == tape.KindRequest && e.Dir == tape.DirSend {
			m.player.Seek(i)
			m.play.started = true
			m.selectSeq(i)
			m.syncPlayback()
			return m
		}
	}
	m.notify(true, "no request that way")
	return m
}

// jumpFailure moves the cursor to the next (dir 1) or previous (-1) failed
// response (a JSON-RPC error or a tool error) after or before the cursor.
func (m Model) jumpFailure(dir int) Model {
	i := m.x.NextFailure(m.timeline.Cursor()+dir, dir)
	if i < 0 {
		m.notify(true, "no failure that way")
		return m
	}
	m.selectSeq(i)
	m.notify(false, fmt.Sprintf("%s: %s", m.x.Failure(i), m.methodOf(i)))
	return m
}

// changeSpeed moves one step along speeds.
func (m Model) changeSpeed(dir int) (tea.Model, tea.Cmd) {
	cur := m.player.Speed()
	i := 0
	for j, s := range speeds {
		if s == cur {
			i = j
		}
	}
	i = min(max(i+dir, 0), len(speeds)-1)
	return m.setSpeed(speeds[i])
}

func (m Model) setSpeed(x float64) (tea.Model, tea.Cmd) {
	m.player.SetSpeed(x, m.now())
	m.notify(true, "speed "+speedText(x))
	if m.player.Playing() {
		m.play.gen++
		return m, m.scheduleTick()
	}
	return m, nil
}

func speedText(x float64) string {
	if x == 0 {
		return "instant"
	}
	return fmt.Sprintf("%g×", x)
}

// toggleBreakpoint adds or removes a breakpoint on the method under the
// cursor (a response's is its request's method); on a call that names a
// tool, prompt or resource it asks which: that method, or that one target.
func (m Model) toggleBreakpoint() Model {
	seq := m.timeline.Cursor()
	if seq < 0 {
		return m
	}
	e := m.x.Entry(seq)
	method := e.Method
	if e.Kind == tape.KindResponse {
		method = m.x.Pair(seq).Method
	}
	if method == "" {
		m.notify(false, "no method here to break on")
		return m
	}
	if target := m.timeline.cache.get(seq).tool; target != "" && method == "tools/call" {
		m.play.ask = &breakChoice{method: method, tool: target}
		m.notify(true, fmt.Sprintf("break on: m every %s · t the tool %s · esc neither", method, target))
		return m
	}
	return m.toggleMethodBreak(method)
}

// breakChoice is b's question on a call: its method, or its tool.
type breakChoice struct{ method, tool string }

// breakChoiceKey answers b's question.
func (m Model) breakChoiceKey(msg tea.KeyPressMsg) Model {
	c := m.play.ask
	m.play.ask = nil
	switch msg.String() {
	case "m":
		return m.toggleMethodBreak(c.method)
	case "t":
		for _, b := range m.player.Breakpoints() {
			if b.Tool == c.tool {
				m.player.RemoveBreakpoint(b.ID)
				m.notify(true, "breakpoint on the tool "+c.tool+" removed")
				m.syncPlayback()
				return m
			}
		}
		if _, err := m.player.AddBreakpoint(debug.Breakpoint{Tool: c.tool}); err != nil {
			m.notify(false, err.Error())
			return m
		}
		m.notify(true, "breakpoint on the tool "+c.tool)
		m.syncPlayback()
		return m
	}
	m.notify(true, "no breakpoint set")
	return m
}

// toggleMethodBreak adds or removes the breakpoint on method.
func (m Model) toggleMethodBreak(method string) Model {
	if m.player.ToggleMethod(method) {
		m.notify(true, "breakpoint on "+method)
	} else {
		m.notify(true, "breakpoint on "+method+" removed")
	}
	m.syncPlayback()
	return m
}

// syncPlayback copies the player's state to the timeline's marks.
func (m *Model) syncPlayback() {
	m.timeline.SetPosition(m.player.Position(), m.play.started && (!m.opts.Follow || m.player.Position() < m.x.Len()))
	methods := map[string]bool{}
	for _, b := range m.player.Breakpoints() {
		if b.Method != "" && !b.Disabled {
			methods[b.Method] = true
		}
	}
	m.timeline.SetBreakpointMethods(methods)
}

// tapeClock is the tape time reached: the last delivered message's offset
// from the start.
// tapeLength is the time from the tape's first timestamp to its last.
func (m Model) tapeLength() (time.Duration, bool) {
	if m.timeline.t0.IsZero() {
		return 0, false
	}
	for i := m.x.Len() - 1; i >= 0; i-- {
		if t := m.x.Entry(i).Time; !t.IsZero() {
			return t.Sub(m.timeline.t0), true
		}
	}
	return 0, false
}

func (m Model) tapeClock() string {
	pos := m.player.Position()
	if pos == 0 || m.timeline.t0.IsZero() {
		return relTime(0)
	}
	for i := pos - 1; i >= 0 && i >= pos-64; i-- {
		if t := m.x.Entry(i).Time; !t.IsZero() {
			return relTime(t.Sub(m.timeline.t0))
		}
	}
	return "?"
}
