package tui

// The side-by-side view of two sessions (tapedeck open A --diff B): the
// calls of A and B aligned row by row as tapedeck diff aligns them, the
// changed rows marked, and below the selected row what changed (the JSON
// differences) or the call on its one side.

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// CompareModel is the side-by-side program. Build it with NewCompare.
type CompareModel struct {
	styles  *Styles
	xa, xb  *tape.Index
	nameA   string
	nameB   string
	report  compare.Report
	rows    []compareRow
	cursor  int
	offset  int
	width   int
	height  int
	detail  viewport.Model
	notice  string
	keys    compareKeys
	changed []int // rows with a difference, in order
}

type compareRow struct {
	server string
	a, b   int
	diffs  []compare.CallDiff
}

type compareKeys struct {
	Up, Down, PageUp, PageDown, First, Last, Next, Prev, Quit key.Binding
}

// NewCompare returns the side-by-side view of report, whose sides are xa
// (named nameA) and xb.
func NewCompare(xa, xb *tape.Index, nameA, nameB string, report compare.Report, light bool) CompareModel {
	m := CompareModel{styles: NewStyles(!light), xa: xa, xb: xb, nameA: nameA, nameB: nameB, report: report, detail: viewport.New()}
	m.keys = compareKeys{
		Up:       key.NewBinding(key.WithKeys("k", "up")),
		Down:     key.NewBinding(key.WithKeys("j", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d")),
		First:    key.NewBinding(key.WithKeys("g", "home")),
		Last:     key.NewBinding(key.WithKeys("G", "end")),
		Next:     key.NewBinding(key.WithKeys("n", "e", "tab")),
		Prev:     key.NewBinding(key.WithKeys("N", "E", "shift+tab")),
		Quit:     key.NewBinding(key.WithKeys("q", "ctrl+c")),
	}
	for _, s := range report.Servers {
		for _, al := range s.Aligned {
			r := compareRow{server: s.Server, a: al.A, b: al.B}
			for _, d := range al.Diffs {
				r.diffs = append(r.diffs, s.Calls[d])
			}
			if len(r.diffs) > 0 {
				m.changed = append(m.changed, len(m.rows))
			}
			m.rows = append(m.rows, r)
		}
	}
	if len(m.changed) > 0 {
		m.cursor = m.changed[0]
	}
	m.notice = fmt.Sprintf("%s · n/N next/previous difference · q quits", text.Plural(report.Differences(), "difference"))
	return m
}

// Init implements tea.Model.
func (m CompareModel) Init() tea.Cmd { return nil }

// Update implements tea.Model.
func (m CompareModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
		m.layout()
	case tea.KeyPressMsg:
		k := m.keys
		switch {
		case key.Matches(msg, k.Quit):
			return m, tea.Quit
		case key.Matches(msg, k.Up):
			m.move(-1)
		case key.Matches(msg, k.Down):
			m.move(1)
		case key.Matches(msg, k.PageUp):
			m.move(-m.listHeight())
		case key.Matches(msg, k.PageDown):
			m.move(m.listHeight())
		case key.Matches(msg, k.First):
			m.move(-len(m.rows))
		case key.Matches(msg, k.Last):
			m.move(len(m.rows))
		case key.Matches(msg, k.Next):
			m.jump(1)
		case key.Matches(msg, k.Prev):
			m.jump(-1)
		default:
			m.detail, _ = m.detail.Update(msg)
		}
	}
	return m, nil
}

func (m *CompareModel) listHeight() int { return max((m.height-5)/2, 3) }

// sessionChanges sums up what changed besides the calls: the handshake
// and the definitions.
func (m CompareModel) sessionChanges() string {
	var parts []string
	for _, s := range m.report.Servers {
		if s.OnlyIn != "" {
			parts = append(parts, fmt.Sprintf("server %s only in %s", s.Server, s.OnlyIn))
		}
		for _, c := range []*compare.Change{s.Protocol, s.ServerInfo} {
			if c != nil {
				parts = append(parts, fmt.Sprintf("%s %s → %s", c.What, c.A, c.B))
			}
		}
		for _, c := range s.Caps {
			parts = append(parts, "capability "+c.What+" changed")
		}
		for _, d := range s.Definitions {
			parts = append(parts, fmt.Sprintf("%s %s %s", d.Kind, d.Name, d.Change))
		}
	}
	if len(parts) == 0 {
		return "same handshake and definitions"
	}
	return strings.Join(parts, " · ")
}

func (m *CompareModel) move(d int) {
	if len(m.rows) == 0 {
		return
	}
	m.cursor = min(max(m.cursor+d, 0), len(m.rows)-1)
	m.layout()
}

func (m *CompareModel) jump(dir int) {
	for _, i := range m.changed {
		if dir > 0 && i > m.cursor {
			m.cursor = i
			m.layout()
			return
		}
	}
	if dir < 0 {
		for k := len(m.changed) - 1; k >= 0; k-- {
			if m.changed[k] < m.cursor {
				m.cursor = m.changed[k]
				m.layout()
				return
			}
		}
	}
	m.notice = "no difference that way"
}

// layout scrolls the list to the cursor and fills the detail pane.
func (m *CompareModel) layout() {
	h := m.listHeight()
	if m.cursor < m.offset {
		m.offset = m.cursor
	}
	if m.cursor >= m.offset+h {
		m.offset = m.cursor - h + 1
	}
	m.detail.SetWidth(m.width)
	m.detail.SetHeight(max(m.height-h-5, 1))
	m.detail.SetContent(ansi.Wrap(m.detailText(), max(m.width, 20), ""))
	m.detail.GotoTop()
}

func (m CompareModel) detailText() string {
	if len(m.rows) == 0 {
		return "no calls on either tape"
	}
	r := m.rows[m.cursor]
	s := m.styles
	var b strings.Builder
	if len(r.diffs) == 0 {
		b.WriteString(s.Detail.Key.Render("the same call and the same answer on both sides") + "\n\n")
	}
	for _, d := range r.diffs {
		switch d.Kind {
		case "onlyA":
			b.WriteString(s.Detail.Removed.Render(fmt.Sprintf("only in A: #%d %s %s", d.A, d.Method, d.Target)) + "\n  " + d.Params + "\n")
		case "onlyB":
			b.WriteString(s.Detail.Added.Render(fmt.Sprintf("only in B: #%d %s %s", d.B, d.Method, d.Target)) + "\n  " + d.Params + "\n")
		case "status":
			b.WriteString(s.Timeline.Error.Render(fmt.Sprintf("answer: %s → %s", d.StatusA, d.StatusB)) + "\n")
		case "latency":
			b.WriteString(fmt.Sprintf("latency: %s → %s\n", tape.FormatLatency(1, d.LatencyA), tape.FormatLatency(1, d.LatencyB)))
		case "params", "result":
			what := "params"
			if d.Kind == "result" {
				what = "answer"
			}
			b.WriteString(s.Detail.Changed.Render(what+" changed:") + "\n")
			for _, op := range d.Diff {
				path := op.Path
				if path == "" {
					path = "/"
				}
				b.WriteString("  " + path + ": " + s.Detail.Removed.Render(orAbsent(op.Op != "add", op.ExpectedJSON())) + " → " + s.Detail.Added.Render(orAbsent(op.Op != "remove", op.ActualJSON())) + "\n")
			}
		}
	}
	// The answers themselves, side by side, as the pairing and divergence
	// views show theirs.
	half := max((m.width-3)/2, 10)
	var cols []string
	for _, side := range []struct {
		name string
		x    *tape.Index
		seq  int
	}{{"A", m.xa, r.a}, {"B", m.xb, r.b}} {
		col := s.Detail.Header.Render(side.name + ": none")
		if side.seq >= 0 {
			col = s.Detail.Header.Render(fmt.Sprintf("%s #%d", side.name, side.seq))
			if p := side.x.Pair(side.seq); p.Partner >= 0 {
				if msg, err := side.x.Message(p.Partner); err == nil {
					col += "\n" + ansi.Hardwrap(prettyJSON(tape.StripMeta(msg.Raw), true), half, true)
				}
			}
		}
		cols = append(cols, lipgloss.NewStyle().Width(half).Render(col))
	}
	sep := s.Detail.Separate.Render(strings.TrimSuffix(strings.Repeat(" │ \n", max(lipgloss.Height(cols[0]), lipgloss.Height(cols[1]))), "\n"))
	b.WriteString("\n" + lipgloss.JoinHorizontal(lipgloss.Top, cols[0], sep, cols[1]))
	return b.String()
}

func orAbsent(present bool, s string) string {
	if !present {
		return "(absent)"
	}
	return s
}

// View implements tea.Model.
func (m CompareModel) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.WindowTitle = "tapedeck diff"
	if m.width == 0 {
		return v
	}
	s := m.styles
	half := max((m.width-6)/2, 10)
	var b strings.Builder
	b.WriteString(padANSI(s.App.Title.Render("tapedeck")+" "+s.App.Subtitle.Render(fmt.Sprintf("A %s · B %s", m.nameA, m.nameB)), m.width) + "\n")
	b.WriteString(padANSI(s.Detail.Changed.Render(ansi.Truncate(m.sessionChanges(), m.width, "…")), m.width) + "\n")
	b.WriteString(s.Timeline.Header.Render(pad("  A", half+1)+" "+pad("B", half)) + "\n")
	h := m.listHeight()
	for line := range h {
		i := m.offset + line
		if i >= len(m.rows) {
			b.WriteString(strings.Repeat(" ", m.width) + "\n")
			continue
		}
		r := m.rows[i]
		mark := "="
		switch {
		case r.a < 0:
			mark = "+"
		case r.b < 0:
			mark = "-"
		case len(r.diffs) > 0:
			mark = "~"
		}
		cur := " "
		if i == m.cursor {
			cur = "›"
		}
		row := cur + mark + " " + pad(m.callText(m.xa, r.a), half-1) + " │ " + pad(m.callText(m.xb, r.b), half)
		switch {
		case i == m.cursor:
			row = s.Timeline.Cursor.Render(pad(row, m.width))
		case mark == "-":
			row = s.Detail.Removed.Render(row)
		case mark == "+":
			row = s.Detail.Added.Render(row)
		case mark == "~":
			row = s.Detail.Changed.Render(row)
		}
		b.WriteString(padANSI(row, m.width) + "\n")
	}
	b.WriteString(s.App.Subtitle.Render(strings.Repeat("─", m.width)) + "\n")
	b.WriteString(fitHeight(m.detail.View(), max(m.height-h-5, 1), m.width) + "\n")
	b.WriteString(padANSI(s.Status.Info.Render(" "+m.notice), m.width))
	v.SetContent(b.String())
	return v
}

// callText is a call's cell: seq, method, target, status, latency.
func (m CompareModel) callText(x *tape.Index, seq int) string {
	if seq < 0 {
		return ""
	}
	e := x.Entry(seq)
	s := fmt.Sprintf("#%d %s", seq, e.Method)
	if name := callName(x, seq, e.Method); name != "" {
		s += " " + name
	}
	p := x.Pair(seq)
	if p.Partner >= 0 {
		if x.Negotiation(p.Partner) {
			s += " · negotiation"
		} else {
			s += " · " + x.Failure(p.Partner).String()
		}
		if p.Timed {
			s += " " + tape.FormatLatency(1, p.Latency)
		}
	} else {
		s += " · no answer"
	}
	return s
}
