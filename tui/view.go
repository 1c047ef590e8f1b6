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

// helpView is the help overlay: every key, flowed into as many columns as
// the screen takes, then the notes; at a small size the notes give way to
// a pointer to open --help, so the keys always fit (80×24 included).
func (m Model) helpView() string {
	var groups [][]key.Binding
	if m.icpt.active() {
		// The intercept's keys first; the ones they take over are left out.
		k := DefaultInterceptKeyMap()
		groups = append(groups, []key.Binding{k.Forward, k.Drop, k.Error, k.Edit, k.Resend})
		km := m.KeyMap
		km.NextFailure = key.NewBinding(key.WithKeys("}"), key.WithHelp("}", "next failure"))
		km.PrevFailure = key.NewBinding(key.WithKeys("{"), key.WithHelp("{", "previous failure"))
		km.Restart.SetEnabled(false)
		groups = append(groups, km.FullHelp()...)
	} else {
		groups = append(groups, m.KeyMap.FullHelp()...)
	}
	if m.focus == focusTimeline {
		groups = append(groups, m.timeline.KeyMap.FullHelp()...)
	} else {
		groups = append(groups, m.detail.KeyMap.FullHelp()...)
	}
	if m.live.active() {
		groups = append(groups, DefaultDivergenceKeyMap().FullHelp()...)
	}
	var binds []key.Binding
	for _, g := range groups {
		for _, b := range g {
			if b.Enabled() {
				binds = append(binds, b)
			}
		}
	}
	kw, dw := 0, 0
	for _, b := range binds {
		kw = max(kw, ansi.StringWidth(b.Help().Key))
		dw = max(dw, ansi.StringWidth(b.Help().Desc))
	}
	inner := max(m.width-6, 20) // border and padding
	colW := kw + 1 + dw + 2
	ncols := max(min(inner/colW, len(binds)), 1)
	rows := (len(binds) + ncols - 1) / ncols
	st := m.styles.Help
	var cols []string
	for c := range ncols {
		var lines []string
		for r := range rows {
			i := c*rows + r
			if i >= len(binds) {
				break
			}
			h := binds[i].Help()
			line := st.FullKey.Render(pad(h.Key, kw+1)) + st.FullDesc.Render(pad(h.Desc, dw))
			if c < ncols-1 {
				line += "  "
			}
			lines = append(lines, line)
		}
		cols = append(cols, strings.Join(lines, "\n"))
	}
	keys := lipgloss.JoinHorizontal(lipgloss.Top, cols...)
	notes := ansi.Wordwrap("playback: messages from ▶ on are not delivered yet and show faint; ◆ a breakpoint stop, ● a breakpoint, ✗ a divergence.\n"+
		"filter: method: tool: dir: server: kind: status: id: and free text; F:A,B for either; !TERM or -F:V for not (open --help has it all).\n"+
		"commands: goto N | goto 12.5s · break tools/call | tool=NAME | error | when EXPR · delete N · speed X · filter Q · write FILE · q", min(inner, lipgloss.Width(keys)+20), " ")
	head := m.styles.App.Title.Render("keys") + "  " + m.styles.App.Subtitle.Render("(any key closes)")
	body := head + "\n\n" + keys + "\n\n" + m.styles.App.Subtitle.Render(notes)
	if lipgloss.Height(body)+2 > m.height {
		body = head + "\n\n" + keys + "\n" + m.styles.App.Subtitle.Render("the filter grammar and commands: tapedeck open --help")
	}
	return m.styles.App.Overlay.Render(body)
}

// hintLine draws a key hint bar: each key and what it does, as many as
// fit in width, padded to it.
func hintLine(s *Styles, hints [][2]string, width int) string {
	st := s.Help
	var b strings.Builder
	b.WriteString(" ")
	for i, h := range hints {
		part := st.ShortKey.Render(h[0]) + " " + st.ShortDesc.Render(h[1])
		if i > 0 {
			part = st.ShortSeparator.Render(" · ") + part
		}
		if ansi.StringWidth(b.String()+part) > width {
			break
		}
		b.WriteString(part)
	}
	return padANSI(b.String(), width)
}

// hintView is the key hint bar: the keys that matter now.
func (m Model) hintView() string {
	var hints [][2]string
	switch {
	case m.icpt.held != nil:
		hints = [][2]string{{"a", "forward"}, {"d", "drop"}, {"!", "error"}, {"e", "edit"}, {"r", "re-send"}, {"?", "help"}}
	case m.icpt.active():
		hints = [][2]string{{"b", "break (holds)"}, {"r", "re-send"}, {"}/{", "failures"}, {"/", "filter"}, {":", "command"}, {"?", "help"}, {"q", "quit"}}
	case m.live.diverged():
		hints = [][2]string{{"a", "answer as recorded"}, {"e", "send the error"}, {"s", "skip the recorded request"}, {"tab", "diff"}, {"?", "help"}}
	case m.bplist.IsOpen():
		hints = [][2]string{{"j/k", "move"}, {"space", "enable/disable"}, {"d", "delete"}, {"esc", "close"}}
	default:
		quit := "quit"
		if m.opts.QuitLabel != "" {
			quit = m.opts.QuitLabel
		}
		hints = [][2]string{{"space", "play"}, {"l/h", "step"}, {"e/E", "failures"}, {"/", "filter"}, {"b", "break"}, {"x", "partner"}, {"tab", "pane"}, {":", "command"}, {"?", "help"}, {"q", quit}}
	}
	return hintLine(m.styles, hints, m.width)
}

// plural writes "1 message", "2 messages".
