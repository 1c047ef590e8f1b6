package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/text"
)

// liveEvent takes what the live session reported and waits for more.
func (m Model) liveEvent(msg liveMsg) (tea.Model, tea.Cmd) {
	ev := msg.ev
	var mm tea.Model = m
	var cmd tea.Cmd
	switch ev.Kind {
	case debug.Connected:
		mm, cmd = m.liveConnected(ev)
	case debug.Progress:
		mm, cmd = m.liveProgress(ev)
	case debug.Diverged:
		mm, cmd = m.liveDiverged(ev.Divergence), nil
	case debug.Disconnected:
		mm = m.liveDisconnected(ev)
	case debug.Failed:
		m.notify(false, ev.Err.Error())
		mm = m
	case debug.Note:
		m.notify(true, ev.Note)
		mm = m
	case debug.RunEnded:
		mm = m.liveRunEnded(ev.Run)
	case debug.Closed:
		m.live.client = clientClosed
		return m, nil
	}
	return mm, tea.Batch(cmd, mm.(Model).live.nextCmd())
}

// liveDisconnected says what went away with the client: the session
// dropped its queued answers and its divergences, so they no longer wait
// for a choice.
func (m Model) liveDisconnected(ev debug.Event) Model {
	m.live.client = clientDisconnected
	var lost []string
	if ev.Dropped > 0 {
		lost = append(lost, text.Plural(ev.Dropped, "queued answer"))
	}
	if ev.Abandoned > 0 {
		lost = append(lost, text.Plural(ev.Abandoned, "divergence")+" awaiting a choice")
		m.live.pending, m.live.waiting = nil, nil
		m.lower = viewMessage
		m.showCursor()
		m.syncPlayback()
	}
	if len(lost) > 0 {
		m.notify(true, "the client disconnected; dropped "+strings.Join(lost, " and "))
	} else {
		m.notify(true, "the client disconnected")
	}
	return m
}

// liveRunEnded takes a client run's end: the run joins the history in
// the status line, and the screen keeps showing how it went (position,
// divergence marks) until the next client connects, which starts from the
// top of the tape with the breakpoints kept.
func (m Model) liveRunEnded(r *debug.RunReport) Model {
	if r == nil {
		return m
	}
	m.live.runs = append(m.live.runs, *r)
	m.live.between = true
	m.live.pending, m.live.waiting = nil, nil
	if m.live.client == clientConnected {
		m.live.client = clientDisconnected
	}
	// Playback goes on to what the run reached (the tape's tail after the
	// client's last message); what it delivers now is for a run that
	// ended, and the session drops it.
	if m.lower == viewDiff {
		m.lower = viewMessage
		m.showCursor()
	}
	verdict := "followed the tape"
	if r.Failed() {
		verdict = text.Plural(r.Divergences, "divergence")
	}
	m.notify(!r.Failed(), fmt.Sprintf("run %d ended (%s): %s, %d of %d requests matched, %d unused; the next client starts run %d from the top", r.Run, r.Ended, verdict, r.Matched, r.Requests, r.Unused, r.Run+1))
	m.syncPlayback()
	return m
}

// newRun puts the tape back at its top for a new client run.
func (m Model) newRun() Model {
	m.live.between = false
	m.live.reached = -1
	m.player.Pause(m.now())
	m.play.gen++
	m.player.SetLimit(m.live.awaiting)
	m.player.Seek(0)
	m.play.lastHit = nil
	m.timeline.SetHit(-1)
	m.timeline.ClearDiverged()
	m.selectSeq(0)
	m.syncPlayback()
	return m
}

// liveConnected starts playback: from now on it follows the client.
func (m Model) liveConnected(ev debug.Event) (tea.Model, tea.Cmd) {
	m.live.client, m.live.transport = clientConnected, ev.Transport
	if ev.RunNo > 0 {
		m.live.run = ev.RunNo
	}
	m.live.session, m.live.sessions = ev.Session, ev.Sessions
	if m.live.between {
		m = m.newRun()
	}
	note := fmt.Sprintf("a client connected over %s: run %d", ev.Transport, max(m.live.run, 1))
	if ss := m.live.sessionText(); ss != "" {
		note += " · " + ss
	}
	m.notify(true, note)
	if m.player.Playing() || m.live.pending != nil {
		return m, nil
	}
	m.player.Play(m.now())
	m.play.gen++
	return m.playTick(playTickMsg{m.play.gen})
}

// liveProgress lets playback go up to the recorded client message the tape
// now waits for, timing what follows the message the client just sent from
// its arrival.
func (m Model) liveProgress(ev debug.Event) (tea.Model, tea.Cmd) {
	m.live.awaiting = ev.Awaiting
	if m.live.between {
		return m, nil // the next run's start: applied when its client connects
	}
	m.player.SetLimit(ev.Awaiting)
	if ev.Reached >= 0 && ev.Reached != m.live.reached {
		m.live.reached = ev.Reached
		m.player.Anchor(ev.Reached, m.now())
	}
	m.syncPlayback()
	if !m.player.Playing() {
		return m, nil
	}
	m.play.gen++
	return m.playTick(playTickMsg{m.play.gen})
}

// liveDiverged pauses playback and shows the divergence until the user
// chooses a, !, w or s.
func (m Model) liveDiverged(d *debug.LiveDivergence) Model {
	if m.live.pending != nil {
		// One choice at a time: it waits its turn, in order.
		m.live.waiting = append(m.live.waiting, d)
		if d.Expected >= 0 {
			m.timeline.MarkDiverged(d.Expected)
		}
		return m
	}
	m.live.pending, m.live.any = d, true
	m.live.resume = m.player.Playing()
	m.player.Pause(m.now())
	m.play.gen++
	if d.Expected >= 0 {
		m.timeline.MarkDiverged(d.Expected)
		m.selectSeq(d.Expected)
	}
	m.diff.Show(*d)
	m.lower = viewDiff
	if d.Expected < 0 {
		m.notify(false, fmt.Sprintf("client diverged %s: nothing recorded to answer with or skip: a, !, w or s send the divergence error", where(d)))
	} else {
		m.notify(false, fmt.Sprintf("client diverged %s: a answer as recorded · ! send the error · w the error, still waiting for it · s skip the recorded request", where(d)))
	}
	m.syncPlayback()
	return m
}

// divergenceKey handles a, !, w and s while a divergence waits for a choice.
func (m Model) divergenceKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := DefaultDivergenceKeyMap()
	var r debug.Resolution
	var done string // the notice once chosen
	switch {
	case key.Matches(msg, k.Answer):
		r, done = debug.AnswerRecorded, "answered with the recorded response"
	case key.Matches(msg, k.Error):
		r, done = debug.SendError, "sent the divergence error; the recorded request is passed (reported unused)"
	case key.Matches(msg, k.ErrorKeep):
		r, done = debug.SendErrorKeep, "sent the divergence error; the recorded request is still expected"
	case key.Matches(msg, k.Skip):
		r, done = debug.SkipRecorded, "skipped the recorded request"
	default:
		return m, nil, false
	}
	s, d := m.live.s, m.live.pending
	if d.Expected < 0 {
		// No recorded request was expected (past the tape's end): there
		// is no recorded answer to send and nothing to skip, so every
		// choice answers the client with the divergence error.
		switch r {
		case debug.AnswerRecorded:
			done = "nothing recorded to answer with " + where(d) + ": sent the divergence error instead"
		case debug.SkipRecorded:
			done = "nothing recorded to skip " + where(d) + ": sent the divergence error instead"
		default:
			done = "sent the divergence error"
		}
		r = debug.SendError
	}
	m.live.pending = nil
	resolve := func() tea.Msg { s.Resolve(d, r); return nil }
	if len(m.live.waiting) > 0 {
		// The next divergence in line takes the screen.
		next := m.live.waiting[0]
		m.live.waiting = m.live.waiting[1:]
		resume := m.live.resume
		m = m.liveDiverged(next)
		m.live.resume = resume
		return m, resolve, true
	}
	m.notify(true, done)
	m.lower = viewMessage
	m.showCursor()
	if m.live.resume {
		// Play on, so that the recorded answer (held until playback
		// delivers it) reaches the client.
		m.player.Play(m.now())
		m.play.gen++
		return m, tea.Batch(resolve, m.scheduleTick()), true
	}
	return m, resolve, true
}

// where says where divergence d happened: "at #5", or past the tape's end
// naming its last request; never "#-1".
func where(d *debug.LiveDivergence) string {
	switch {
	case d.Where != "":
		return d.Where
	case d.Expected >= 0:
		return fmt.Sprintf("at #%d", d.Expected)
	}
	return "where the tape holds no request to match"
}
