package tui

// The shadow column mark: a tape recorded with --shadow holds a server's
// calls and its shadow lane's copies (tape.ShadowServer); the rows of a
// call whose copy the shadow answered otherwise say so ("≠ shadow"),
// by the rules of diff --shadow (compare.Shadow: volatile fields ignored,
// latencies not counted). It is computed once a load, off the render path,
// in a tea.Cmd over an index of its own (the app's grows as it follows),
// and again when a followed tape grew while it ran.

import (
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/tape"
)

// shadowState is the last shadow comparison and whether one runs.
type shadowState struct {
	busy bool
	n    int // the app's index length when the last one started
}

// shadowDoneMsg carries which messages belong to a call the shadow
// answered otherwise: the request and its answer, on A's side, with the
// difference's kind.
type shadowDoneMsg struct {
	x     *tape.Index
	n     int
	diffs map[int]string
	err   error
}

// hasShadowLane says whether x names a shadow lane.
func hasShadowLane(x *tape.Index) bool {
	for _, s := range x.Servers() {
		if strings.HasSuffix(s, tape.ShadowSuffix) {
			return true
		}
	}
	return false
}

// shadowCmd starts a shadow comparison of the tape if it has a lane, one
// is not running, and the tape grew since the last one.
func (m *Model) shadowCmd() tea.Cmd {
	n := m.x.Len()
	if m.shadow.busy || m.load.active || m.opts.Path == "" || n == m.shadow.n || !hasShadowLane(m.x) {
		return nil
	}
	m.shadow.busy, m.shadow.n = true, n
	x, path := m.x, m.opts.Path
	return func() tea.Msg {
		diffs, err := shadowDiffs(path)
		return shadowDoneMsg{x: x, n: n, diffs: diffs, err: err}
	}
}

// shadowDiffs compares the tape at path with its shadow lanes: the seqs
// of A's requests and answers in a call that differs, and how.
func shadowDiffs(path string) (map[int]string, error) {
	side, err := compare.OpenSide(path)
	if err != nil {
		return nil, err
	}
	defer side.Index.Close()
	r, err := compare.Shadow(side, compare.Options{})
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, s := range r.Servers {
		for _, c := range s.Calls {
			if c.Kind == "latency" || c.Kind == "onlyB" || c.A < 0 {
				continue // a slower B is no other answer; a call of B's own has no row of A's
			}
			out[c.A] = c.Kind
			if p := side.Index.Pair(c.A); p.Partner >= 0 {
				out[p.Partner] = c.Kind
			}
		}
	}
	return out, nil
}

// shadowDone shows a comparison's marks, and starts another if the tape
// grew meanwhile.
func (m Model) shadowDone(msg shadowDoneMsg) (tea.Model, tea.Cmd) {
	if msg.x != m.x {
		return m, nil // a tape since replaced
	}
	m.shadow.busy = false
	if msg.err != nil {
		return m, func() tea.Msg { return errMsg{msg.err} }
	}
	m.timeline.SetShadowDiffs(msg.diffs)
	return m, m.shadowCmd()
}

// shadowMark is a row's mark for a shadow difference of kind: a status
// (an error, a tool error, no answer) named as such, any other "≠ shadow".
func shadowMark(kind string) string {
	if kind == "status" {
		return "≠ shadow status"
	}
	return "≠ shadow"
}
