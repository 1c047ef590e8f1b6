package tui

import (
	"fmt"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/debug"
)

// liveMsg carries a debug.Event into Update.
type liveMsg struct{ ev debug.Event }

// clientState is where the live client is.
type clientState int

const (
	clientWaiting clientState = iota // no client yet
	clientConnected
	clientDisconnected
	clientClosed
)

// liveState is the app's view of the live session, if any.
type liveState struct {
	s         debug.Live
	client    clientState
	transport string
	reached   int                     // the recorded client message last reached, or -1
	awaiting  int                     // the recorded client message the tape waits for
	pending   *debug.LiveDivergence   // the divergence shown, awaiting a choice
	waiting   []*debug.LiveDivergence // more divergences after it, in order
	any       bool                    // a divergence happened (the diff view is available)
	resume    bool                    // playback was on when the divergence paused it
	run       int                     // the client run under way or last, from 1
	runs      []debug.RunReport       // the runs that ended
	between   bool                    // a run ended; the next client starts from the top
	session   int                     // HTTP: the client's session in its run, served by the recorded session of that number
	sessions  int                     // HTTP: the tape's recorded sessions
}

// sessionText says which recorded session serves the HTTP client's
// session, when the tape has several: "client session 2 → recorded
// session 2 of 3".
func (l liveState) sessionText() string {
	switch {
	case l.sessions < 2 || l.session < 1:
		return ""
	case l.session > l.sessions:
		return fmt.Sprintf("client session %d: past the tape's %d recorded sessions (refused; R restarts from the top)", l.session, l.sessions)
	}
	return fmt.Sprintf("client session %d → recorded session %d of %d", l.session, l.session, l.sessions)
}

func (l *liveState) init(s debug.Live) { l.s, l.reached = s, -1 }

func (l liveState) active() bool        { return l.s != nil }
func (l liveState) diverged() bool      { return l.pending != nil }
func (l liveState) hasDivergence() bool { return l.any }

// liveStatus is the status bar's account of the live client, and whether
// it needs the user's attention.
func (m Model) liveStatus() (string, bool) {
	l := m.live
	switch {
	case l.pending != nil:
		if n := len(l.waiting); n > 0 {
			return fmt.Sprintf("DIVERGED %s: a/!/w/s (%d more waiting)", where(l.pending), n), true
		}
		return fmt.Sprintf("DIVERGED %s: a/!/w/s", where(l.pending)), true
	case l.client == clientWaiting:
		return "waiting for a client", false
	case l.client == clientDisconnected:
		return "disconnected", false
	case l.client == clientClosed:
		return "closed", false
	case m.play.lastHit != nil && !m.player.Playing():
		return fmt.Sprintf("held at breakpoint %d before #%d", m.play.lastHit.Breakpoint.ID, m.play.lastHit.Seq), true
	}
	st := "connected"
	if l.transport != "" {
		st += " (" + l.transport + ")"
	}

	if l.awaiting < m.x.Len() && m.player.Position() >= l.awaiting {
		st += fmt.Sprintf(" · tape waits for its #%d %s", l.awaiting, m.methodOf(l.awaiting))
	}
	return st, false
}

// methodOf names message seq's method, a response by its request's.
func (m Model) methodOf(seq int) string {
	e := m.x.Entry(seq)
	if e.Method != "" {
		return e.Method
	}
	if p := m.x.Pair(seq); p.Method != "" {
		return "reply to " + p.Method
	}
	return e.Kind.String()
}

func (l liveState) initCmd() tea.Cmd { return l.nextCmd() }

func (l liveState) nextCmd() tea.Cmd {
	if l.s == nil {
		return nil
	}
	s := l.s
	return func() tea.Msg { return liveMsg{s.Next()} }
}

func (l liveState) deliveredCmd(seqs []int) tea.Cmd {
	if l.s == nil || len(seqs) == 0 || seqs[len(seqs)-1] < 0 {
		return nil
	}
	s, run := l.s, l.run
	return func() tea.Msg { s.Deliver(run, seqs); return nil }
}

func (l liveState) restartCmd() tea.Cmd {
	if l.s == nil {
		return nil
	}
	s := l.s
	return func() tea.Msg { s.Restart(); return nil }
}

// runsText sums up the runs that ended: "run 2 · before: 1 ✓ 1 ✗", with
// the recorded session serving the client when the tape has several
// ("run 2 · recorded session 2/3 · before: 1 ✓ 1 ✗").
func (l liveState) runsText() string {
	if l.run == 0 && len(l.runs) == 0 {
		return ""
	}
	s := fmt.Sprintf("run %d", max(l.run, 1))
	if l.sessions > 1 && l.session > 0 && !l.between {
		// The full account (client session → recorded session) is in the
		// notice Connected shows.
		s += fmt.Sprintf(" · recorded session %d/%d", l.session, l.sessions)
	}
	ok, bad := 0, 0
	for _, r := range l.runs {
		if r.Failed() {
			bad++
		} else {
			ok++
		}
	}
	if ok+bad > 0 {
		s += fmt.Sprintf(" · before: %d ✓ %d ✗", ok, bad)
	}
	return s
}

func (l liveState) closeCmd() tea.Cmd {
	if l.s == nil {
		return nil
	}
	s := l.s
	return func() tea.Msg { _ = s.Close(); return nil }
}
