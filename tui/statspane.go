package tui

import (
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/tape"
)

// StatsPane shows tape.ComputeStats as a table per server and method: the
// same numbers "tapedeck stats" prints.
type StatsPane struct {
	KeyMap DetailKeyMap

	styles  *Styles
	vp      viewport.Model
	stats   *tape.Stats
	focused bool
	width   int
	height  int
}

// NewStatsPane returns an empty stats pane.
func NewStatsPane(s *Styles) StatsPane {
	vp := viewport.New()
	vp.FillHeight = true
	vp.MouseWheelEnabled = true
	return StatsPane{KeyMap: DefaultDetailKeyMap(), styles: s, vp: vp}
}

// SetSize sets the pane's size.
func (p *StatsPane) SetSize(w, h int) {
	p.width, p.height = w, h
	p.vp.SetWidth(w)
	p.vp.SetHeight(h)
}

// Focus gives the pane the keyboard.
func (p *StatsPane) Focus() { p.focused = true }

// Blur takes the keyboard away.
func (p *StatsPane) Blur() { p.focused = false }

// SetStats shows st.
func (p *StatsPane) SetStats(st tape.Stats) {
	p.stats = &st
	p.vp.SetContent(p.render())
}

// HasStats reports whether stats were computed.
func (p StatsPane) HasStats() bool { return p.stats != nil }

func (p StatsPane) render() string {
	st := p.stats
	var b strings.Builder
	b.WriteString(p.styles.Detail.Header.Render(fmt.Sprintf("%d messages (%d lifecycle, %d invalid), %d warnings",
		st.Messages, st.Lifecycle, st.Invalid, st.Warnings)))
	b.WriteByte('\n')
	for _, ss := range st.Servers {
		srv := ss.Server
		if srv == "" {
			srv = "(unnamed)"
		}
		b.WriteString("\n" + p.styles.Detail.Header.Render("server "+srv) + "\n")
		var t strings.Builder
		tw := tabwriter.NewWriter(&t, 0, 4, 1, ' ', 0)
		fmt.Fprintln(tw, "method\tdir\treq\tnotif\tresp\terrors\torphan\tpending\tcancel\tlate\tp50\tp95\tp99\tmax")
		for _, m := range ss.Methods {
			statsRow(tw, statsLabel(m), string(m.Dir), m)
		}
		statsRow(tw, "total", "", ss.Total)
		tw.Flush()
		lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
		for i, l := range lines {
			if i == 0 {
				l = p.styles.Timeline.Header.Render(l)
			}
			b.WriteString(l + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

func statsLabel(m tape.MethodStats) string {
	switch {
	case m.Method != "":
		return m.Method
	case m.Invalid > 0:
		return "(invalid lines)"
	}
	return "(orphan responses)"
}

func statsRow(w *tabwriter.Writer, label, dir string, m tape.MethodStats) {
	l := m.Latency
	fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\n", label, dir,
		m.Requests, m.Notifications, m.Responses, m.Errors, m.Orphans, m.Pending, m.Cancelled, m.Late,
		statDur(l.Count, l.P50), statDur(l.Count, l.P95), statDur(l.Count, l.P99), statDur(l.Count, l.Max))
}

// statDur formats like "tapedeck stats" does.
func statDur(n int, d time.Duration) string {
	if n == 0 {
		return "-"
	}
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}

// Update scrolls when the pane has the focus.
func (p StatsPane) Update(msg tea.Msg) (StatsPane, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if !p.focused {
			return p, nil
		}
		switch {
		case key.Matches(msg, p.KeyMap.Up):
			p.vp.ScrollUp(1)
		case key.Matches(msg, p.KeyMap.Down):
			p.vp.ScrollDown(1)
		case key.Matches(msg, p.KeyMap.PageUp):
			p.vp.PageUp()
		case key.Matches(msg, p.KeyMap.PageDown):
			p.vp.PageDown()
		case key.Matches(msg, p.KeyMap.Top):
			p.vp.GotoTop()
		case key.Matches(msg, p.KeyMap.Bottom):
			p.vp.GotoBottom()
		}
	case tea.MouseWheelMsg:
		var cmd tea.Cmd
		p.vp, cmd = p.vp.Update(msg)
		return p, cmd
	}
	return p, nil
}

// View renders the pane, exactly its height.
func (p StatsPane) View() string {
	if p.stats == nil {
		return p.styles.Detail.Key.Render("computing stats…")
	}
	return p.vp.View()
}
