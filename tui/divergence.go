package tui

import (
	"fmt"
	"strconv"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
)

func itoa(n int) string { return strconv.Itoa(n) }

// liveEvent takes what the live session reported and waits for more.
func (m Model) liveEvent(msg liveMsg) (tea.Model, tea.Cmd) {
	ev := msg.ev
	if ev.State != "" {
		m.live.st = ev.State
	}
	if ev.Err != nil {
		m.notice, m.noticeOK = ev.Err.Error(), false
	}
	var cmds []tea.Cmd
	if ev.Connected && !m.ctl.Playing() && m.live.pending == nil {
		m.ctl.Play(m.now())
		m.playGen++
		cmds = append(cmds, m.scheduleTick())
	}
	if ev.Divergence != nil {
		d := ev.Divergence
		m.live.pending, m.live.any = d, true
		m.live.resume = m.ctl.Playing()
		m.ctl.Pause(m.now())
		m.playGen++
		if d.Seq >= 0 {
			m.timeline.MarkDiverged(d.Seq)
			m.selectSeq(d.Seq)
		}
		m.diff.Show(*d)
		m.lower = viewDiff
		m.notice, m.noticeOK = fmt.Sprintf("client diverged at #%d: a answer anyway · e send the error · s skip the recorded request", d.Seq), false
		m.syncPlayback()
	}
	if ev.Closed {
		m.live.st = "closed"
		return m, tea.Batch(cmds...)
	}
	return m, tea.Batch(append(cmds, m.live.nextCmd())...)
}

// divergenceKey handles a, e and s while a divergence waits for a choice.
func (m Model) divergenceKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := DefaultDivergenceKeyMap()
	var r Resolution
	switch {
	case key.Matches(msg, k.Answer):
		r = ResolveAnswer
	case key.Matches(msg, k.Error):
		r = ResolveError
	case key.Matches(msg, k.Skip):
		r = ResolveSkip
	default:
		return m, nil, false
	}
	s := m.live.s
	m.live.pending = nil
	names := [...]string{"answered with the recorded response", "sent the divergence error", "skipped the recorded request"}
	m.notice, m.noticeOK = names[r], true
	m.lower = viewMessage
	m.showCursor()
	resolve := func() tea.Msg { s.Resolve(r); return nil }
	if m.live.resume {
		// Play on, so that the recorded answer (held until playback
		// delivers it) reaches the client.
		m.ctl.Play(m.now())
		m.playGen++
		return m, tea.Batch(resolve, m.scheduleTick()), true
	}
	return m, resolve, true
}
