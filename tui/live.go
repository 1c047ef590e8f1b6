package tui

import (
	tea "charm.land/bubbletea/v2"
)

// Live is a live client session for "tapedeck debug": a client connected to
// the replay engine, whose messages the debugger delivers under its
// breakpoints and whose divergences it shows. It is defined here, where it
// is used; cmd/tapedeck adapts the replay engine to it.
type Live interface {
	// Next blocks until the session has something to report.
	Next() LiveEvent
	// Deliver lets the engine send the recorded messages seqs to the client.
	Deliver(seqs []int)
	// Resolve answers the pending divergence.
	Resolve(r Resolution)
	// Close ends the session.
	Close() error
}

// Resolution is the user's answer to a divergence.
type Resolution int

// Resolutions, chosen with a, e and s.
const (
	ResolveAnswer Resolution = iota // answer with the recorded response anyway
	ResolveError                    // send the divergence error to the client
	ResolveSkip                     // skip the recorded request
)

// LiveEvent is one thing that happened on a live session.
type LiveEvent struct {
	State      string      // the client's state for the status bar ("connected", "waiting", "closed")
	Connected  bool        // a client just connected: playback starts
	Divergence *Divergence // set when the client diverged
	Err        error
	Closed     bool
}

// Divergence is a live client's request that did not match the tape.
type Divergence struct {
	Seq      int      // the recorded message expected next
	Reason   string   // why it did not match
	Expected []byte   // the recorded request
	Actual   []byte   // the client's request
	Paths    []string // the changed JSON paths, e.g. params.arguments.limit
}

// liveMsg carries a LiveEvent into Update.
type liveMsg struct{ ev LiveEvent }

// liveState is the app's view of the live session, if any.
type liveState struct {
	s       Live
	st      string
	pending *Divergence
	any     bool // a divergence happened (the diff view is available)
	resume  bool // playback was on when the divergence paused it
}

func (l *liveState) init(s Live) { l.s, l.st = s, "waiting for a client" }

func (l liveState) active() bool        { return l.s != nil }
func (l liveState) diverged() bool      { return l.pending != nil }
func (l liveState) hasDivergence() bool { return l.any }
func (l liveState) state() string {
	if l.pending != nil {
		return "DIVERGED at #" + itoa(l.pending.Seq)
	}
	return l.st
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
	s := l.s
	return func() tea.Msg { s.Deliver(seqs); return nil }
}

func (l liveState) closeCmd() tea.Cmd {
	if l.s == nil {
		return nil
	}
	s := l.s
	return func() tea.Msg { _ = s.Close(); return nil }
}
