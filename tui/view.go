package tui

// Rendering: the root model's View, laid out as the title bar, the
// timeline, the lower pane (message, pairing, stats or diff) with its
// title, the status bar, and the overlays (help, prompt, breakpoints).

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/text"
)

// View draws the screen: title, timeline, lower pane, status line, with the
// help or breakpoint overlay on top.
func (m Model) View() tea.View {
	var v tea.View
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "tapedeck — " + m.opts.Name
	if m.width == 0 || m.height == 0 {
		v.SetContent("")
		return v
	}
	v.SetContent(m.render())
	return v
}

// render is the screen as a string; View wraps it and tests snapshot it.
func (m Model) render() string {
	_, lh := m.paneHeights()
	status := m.statusView()
	// A notice too long for the status line takes lines from the lower
	// pane, which keeps at least one.
	extra := min(strings.Count(status, "\n"), lh-1)
	if extra < strings.Count(status, "\n") {
		status = strings.Join(strings.Split(status, "\n")[strings.Count(status, "\n")-extra:], "\n")
	}
	parts := []string{
		m.titleView(),
		m.timeline.View(),
		m.lowerTitleView(),
		fitHeight(m.lowerView(), lh-extra, m.width),
		status,
		m.hintView(),
	}
	screen := strings.Join(parts, "\n")
	switch {
	case m.showLog:
		screen = overlay(screen, m.messagesView(), m.width, m.height)
	case m.showHelp:
		screen = overlay(screen, m.helpView(), m.width, m.height)
	case m.bplist.IsOpen():
		screen = overlay(screen, m.bplist.View(), m.width, m.height)
	}
	return screen
}

func (m Model) lowerView() string {
	if v, ok := m.interceptView(); ok {
		return v
	}
	switch m.lower {
	case viewPair:
		return m.pairing.View()
	case viewStats:
		return m.stats.View()
	case viewState:
		return m.state.View()
	case viewDiff:
		return m.diff.View()
	}
	return m.detail.View()
}

func (m Model) titleView() string {
	s := m.styles
	n := m.x.Len()
	title := s.App.Title.Render("tapedeck") + " " + s.App.Subtitle.Render(fmt.Sprintf("%s · %s · %s", m.opts.Name, text.Plural(n, "message"), serverSummary(m.x.Servers())))
	if m.opts.Follow {
		title += s.App.Subtitle.Render(" · following")
	}
	return padANSI(title, m.width)
}

func serverSummary(servers []string) string {
	switch len(servers) {
	case 0:
		return "no servers"
	case 1:
		return "server " + servers[0]
	}
	return fmt.Sprintf("%d servers", len(servers))
}

func (m Model) lowerTitleView() string {
	s := m.styles
	var tabs []string
	for i, name := range viewNames {
		if lowerView(i) == viewDiff && !m.live.hasDivergence() {
			continue
		}
		if lowerView(i) == m.lower {
			tabs = append(tabs, s.Detail.Header.Render("["+name+"]"))
		} else {
			tabs = append(tabs, s.App.Subtitle.Render(" "+name+" "))
		}
	}
	rule := "─"
	st := s.App.Subtitle
	if m.focus == focusLower {
		st = s.Detail.Header
		rule = "━"
	}
	left := st.Render(rule+rule+" ") + strings.Join(tabs, " ") + " "
	return left + st.Render(strings.Repeat(rule, max(m.width-ansi.StringWidth(left), 0)))
}

// fitHeight pads or cuts s to exactly h lines of width w.
func fitHeight(s string, h, w int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > h {
		lines = lines[:h]
	}
	for i := range lines {
		lines[i] = padANSI(lines[i], w)
	}
	for len(lines) < h {
		lines = append(lines, strings.Repeat(" ", w))
	}
	return strings.Join(lines, "\n")
}

// overlay draws box centred over screen.
func overlay(screen, box string, w, h int) string {
	bw, bh := lipgloss.Width(box), lipgloss.Height(box)
	x, y := max((w-bw)/2, 0), max((h-bh)/2, 0)
	c := lipgloss.NewCompositor(lipgloss.NewLayer(screen), lipgloss.NewLayer(box).X(x).Y(y).Z(1))
	lines := strings.Split(c.Render(), "\n")
	for i := range lines {
		lines[i] = ansi.Truncate(lines[i], w, "")
	}
	return strings.Join(lines, "\n")
}

// helpLines is the help overlay's content: the screen's keys, flowed into
// as many columns as the screen takes, its own keys first; then the notes
// when they fit, else a pointer to open --help.
func (m Model) helpLines() []string {
	binds := enabled(m.screenKeys().groups...)
	kw, dw := 0, 0
	for _, b := range binds {
		kw = max(kw, ansi.StringWidth(b.Help().Key))
		dw = max(dw, ansi.StringWidth(b.Help().Desc))
	}
	inner := m.overlayInner()
	colW := kw + 1 + dw + 2
	ncols := max(min((inner+2)/colW, len(binds)), 1)
	rows := (len(binds) + ncols - 1) / ncols
	st := m.styles.Help
	lines := make([]string, rows)
	for i, b := range binds {
		h := b.Help()
		cell := st.FullKey.Render(pad(h.Key, kw+1)) + st.FullDesc.Render(pad(h.Desc, dw))
		if i/rows < ncols-1 {
			cell += "  "
		}
		lines[i%rows] += cell
	}
	notes := ansi.Wordwrap("playback: messages from ▶ on are not delivered yet and show faint; ◆ a breakpoint stop, ● a breakpoint, ✗ a divergence.\n"+
		"filter: method: tool: dir: server: kind: status: id: and free text; F:A,B for either; !TERM or -F:V for not (open --help has it all).\n"+
		"commands: goto N | goto 12.5s · break tools/call | tool=NAME | error | when EXPR · delete N · speed X · filter Q · write FILE · messages · q", min(inner, ncols*colW+20), " ")
	noteLines := strings.Split(m.styles.App.Subtitle.Render(notes), "\n")
	if len(lines)+1+len(noteLines) <= m.overlayRows() {
		return append(append(lines, ""), noteLines...)
	}
	return append(lines, m.styles.App.Subtitle.Render("the filter grammar and commands: tapedeck open --help"))
}

// helpView is the help overlay (?): the screen's keys, scrolling (j/k)
// when they do not fit.
func (m Model) helpView() string {
	body, _ := scrollBox(m.helpLines(), m.overlayTop, m.overlayRows())
	head := m.styles.App.Title.Render("keys · "+m.screenKeys().name) + "  " + m.styles.App.Subtitle.Render("(any key closes)")
	return m.styles.App.Overlay.Render(head + "\n" + body)
}

// hintLine draws a key hint bar: each key and what it does, as many as
// fit in width, then pinned, which is always shown at the right end.
func hintLine(s *Styles, hints [][2]string, width int, pinned ...[2]string) string {
	st := s.Help
	render := func(hs [][2]string, room int) string {
		var b strings.Builder
		for i, h := range hs {
			part := st.ShortKey.Render(h[0]) + " " + st.ShortDesc.Render(h[1])
			if i > 0 {
				part = st.ShortSeparator.Render(" · ") + part
			}
			if ansi.StringWidth(b.String()+part) > room {
				break
			}
			b.WriteString(part)
		}
		return b.String()
	}
	right := render(pinned, width)
	if right != "" {
		right += " "
	}
	left := " " + render(hints, width-ansi.StringWidth(right)-4)
	return left + spaces(width-ansi.StringWidth(left)-ansi.StringWidth(right)) + right
}

// bindingHints turns bindings into hint bar entries.
func bindingHints(bs []key.Binding) [][2]string {
	var out [][2]string
	for _, b := range bs {
		if b.Enabled() {
			out = append(out, [2]string{b.Help().Key, b.Help().Desc})
		}
	}
	return out
}

// hintView is the key hint bar: the screen's hints, ? help and q quit.
func (m Model) hintView() string {
	return hintLine(m.styles, bindingHints(m.screenKeys().hints), m.width, bindingHints(m.helpQuit())...)
}

// plural writes "1 message", "2 messages".
