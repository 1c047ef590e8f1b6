package tui

// Screens: the keys on show together, one key map a screen. The hint bar,
// the help overlay (?) and the README's key table are all generated from
// them, so they cannot drift from what the keys do; TestScreenKeys fails
// when two bindings of one screen share a key.

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
)

// screenKeys is one screen's keys.
type screenKeys struct {
	name string
	// hints is the hint bar, most useful first; help and quit are pinned
	// at its end and always shown.
	hints []key.Binding
	// groups is the help overlay, the screen's own keys first.
	groups [][]key.Binding
}

// pair is one hint for two bindings ("l/h step"): its keys are theirs.
func pair(a, b key.Binding, desc string) key.Binding {
	first := func(k key.Binding) string { s, _, _ := strings.Cut(k.Help().Key, "/"); return s }
	return key.NewBinding(key.WithKeys(append(a.Keys(), b.Keys()...)...), key.WithHelp(first(a)+"/"+first(b), desc))
}

// helpQuit are the hints every screen ends with.
func (m Model) helpQuit() []key.Binding {
	q := m.KeyMap.Quit
	if m.opts.QuitLabel != "" {
		q.SetHelp(q.Help().Key, m.opts.QuitLabel)
	}
	return []key.Binding{m.KeyMap.Help, q}
}

// screenKeys is the screen on show now.
func (m Model) screenKeys() screenKeys {
	switch {
	case m.bplist.IsOpen():
		return breakpointsScreen(m.bplist.KeyMap)
	case m.icpt.active():
		return interceptScreen(m.KeyMap, DefaultInterceptKeyMap(), m.paneKeys(), m.icpt.held != nil)
	case m.live.active():
		return debugScreen(m.KeyMap, DefaultDivergenceKeyMap(), m.paneKeys(), m.live.diverged())
	}
	return openScreen(m.KeyMap, m.paneKeys())
}

// paneKeys is the focused pane's keys.
func (m Model) paneKeys() [][]key.Binding {
	if m.focus == focusTimeline {
		return m.timeline.KeyMap.FullHelp()
	}
	return m.detail.KeyMap.FullHelp()
}

// openScreen is open TAPE's keys.
func openScreen(k KeyMap, pane [][]key.Binding) screenKeys {
	return screenKeys{
		name: "open",
		hints: []key.Binding{k.Play, pair(k.StepForward, k.StepBack, "step"), pair(k.NextFailure, k.PrevFailure, "failures"),
			k.Search, k.Breakpoint, k.Partner, k.SwitchPane, k.Command},
		groups: append(k.FullHelp(), pane...),
	}
}

// debugScreen is debug TAPE's keys: a divergence's choices first, so that
// they are on the help's first lines.
func debugScreen(k KeyMap, d DivergenceKeyMap, pane [][]key.Binding, diverged bool) screenKeys {
	s := screenKeys{
		name: "debug TAPE",
		hints: []key.Binding{k.Play, pair(k.StepForward, k.StepBack, "step"), pair(k.NextFailure, k.PrevFailure, "failures"),
			k.Restart, k.Breakpoint, k.Search, k.Command},
		groups: append(append(d.FullHelp(), k.FullHelp()...), pane...),
	}
	if diverged {
		tab := k.SwitchPane
		tab.SetHelp(tab.Help().Key, "diff")
		s.hints = append(d.ShortHelp(), tab)
	}
	return s
}

// interceptScreen is the live intercept's keys (debug -- SERVER): the
// held message's verdicts first; restart means nothing there.
func interceptScreen(k KeyMap, i InterceptKeyMap, pane [][]key.Binding, held bool) screenKeys {
	k.Restart.SetEnabled(false)
	s := screenKeys{
		name:   "intercept",
		hints:  []key.Binding{k.Breakpoint, i.Resend, pair(k.NextFailure, k.PrevFailure, "failures"), k.Search, k.Command},
		groups: append(append(i.FullHelp(), k.FullHelp()...), pane...),
	}
	if held {
		s.hints = i.ShortHelp()
	}
	return s
}

// breakpointsScreen is the breakpoint list's keys (B).
func breakpointsScreen(k BreakpointsKeyMap) screenKeys {
	return screenKeys{name: "breakpoints", hints: k.ShortHelp()[:len(k.ShortHelp())-1], groups: k.FullHelp()}
}

// enabled flattens groups to their enabled bindings.
func enabled(groups ...[]key.Binding) []key.Binding {
	var out []key.Binding
	for _, g := range groups {
		for _, b := range g {
			if b.Enabled() {
				out = append(out, b)
			}
		}
	}
	return out
}

// KeyTable is the README's key table: each key of open, debug TAPE and the
// live intercept, and what it does on each (TestREADMEKeyTable checks the
// README against it).
func KeyTable() string {
	k := DefaultKeyMap()
	var pane [][]key.Binding
	pane = append(pane, DefaultTimelineKeyMap().FullHelp()...)
	pane = append(pane, DefaultDetailKeyMap().FullHelp()...)
	screens := []screenKeys{
		openScreen(k, pane),
		debugScreen(k, DefaultDivergenceKeyMap(), pane, false),
		interceptScreen(k, DefaultInterceptKeyMap(), pane, false),
	}
	type row struct {
		key   string
		descs []string
	}
	var rows []*row
	byKey := map[string]*row{}
	for i, s := range screens {
		for _, b := range enabled(s.groups...) {
			h := b.Help()
			r := byKey[h.Key]
			if r == nil {
				r = &row{key: h.Key, descs: make([]string, len(screens))}
				byKey[h.Key] = r
				rows = append(rows, r)
			}
			if r.descs[i] == "" {
				r.descs[i] = h.Desc
			} else if !strings.Contains(r.descs[i], h.Desc) {
				r.descs[i] += "; " + h.Desc // the timeline's and the lower pane's meaning of one key
			}
		}
	}
	var b strings.Builder
	b.WriteString("| key | `open` | `debug TAPE` | `debug -- SERVER` (intercept) |\n|---|---|---|---|\n")
	for _, r := range rows {
		cells := make([]string, len(r.descs))
		for i, d := range r.descs {
			cells[i] = d
			if d == "" {
				cells[i] = "—"
			}
		}
		fmt.Fprintf(&b, "| `%s` | %s |\n", strings.ReplaceAll(r.key, "|", `\|`), strings.Join(cells, " | "))
	}
	return b.String()
}
