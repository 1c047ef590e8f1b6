package tui

import (
	"fmt"
	"strings"
	"text/tabwriter"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// StatsPane shows tape.ComputeStats as a table per server and method: the
// same numbers "tapedeck stats" prints.
type StatsPane struct {
	scrollPane

	stats    *tape.Stats
	warnings []tape.Warning
}

// NewStatsPane returns an empty stats pane.
func NewStatsPane(s *Styles) StatsPane {
	return StatsPane{scrollPane: newScrollPane(s)}
}

// SetSize sets the pane's size.
func (p *StatsPane) SetSize(w, h int) {
	p.resize(w, h)
}

// SetStats shows st and the tape's warnings.
func (p *StatsPane) SetStats(st tape.Stats, warnings []tape.Warning) {
	p.stats = &st
	p.warnings = warnings
	p.vp.SetContent(p.render())
}

// HasStats reports whether stats were computed.
func (p StatsPane) HasStats() bool { return p.stats != nil }

func (p StatsPane) render() string {
	st := p.stats
	var b strings.Builder
	b.WriteString(p.styles.Detail.Header.Render(st.Summary()))
	b.WriteByte('\n')
	for _, ss := range st.Servers {
		b.WriteString("\n" + p.styles.Detail.Header.Render("server "+ss.Name()) + "\n")
		var t strings.Builder
		tw := tabwriter.NewWriter(&t, 0, 4, 1, ' ', 0)
		header, rows := ss.Table()
		fmt.Fprintln(tw, strings.Join(header, "\t"))
		for _, row := range rows {
			fmt.Fprintln(tw, strings.Join(row, "\t"))
		}
		tw.Flush()
		lines := strings.Split(strings.TrimRight(t.String(), "\n"), "\n")
		for i, l := range lines {
			if i == 0 {
				l = p.styles.Timeline.Header.Render(l)
			}
			b.WriteString(l + "\n")
		}
		for _, c := range ss.Context {
			b.WriteString(p.styles.Detail.Key.Render("context ") + c.String() + "\n")
		}
	}
	if len(p.warnings) > 0 {
		b.WriteString("\n" + p.styles.Detail.Header.Render("warnings") + "\n")
		for _, w := range p.warnings {
			b.WriteString(p.styles.Timeline.Error.Render(text.Safe(w.Error())) + "\n")
		}
		if more := st.Warnings - len(p.warnings); more > 0 {
			b.WriteString(p.styles.Detail.Key.Render(fmt.Sprintf("and %d more (tapedeck stats lists them)", more)) + "\n")
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// Update scrolls when the pane has the focus.
func (p StatsPane) Update(msg tea.Msg) (StatsPane, tea.Cmd) {
	cmd := p.scroll(msg)
	return p, cmd
}

// View renders the pane, exactly its height.
func (p StatsPane) View() string {
	if p.stats == nil {
		return p.styles.Detail.Key.Render("computing stats…")
	}
	return p.vp.View()
}
