package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/tapedeck/tapedeck/debug"
)

// BreakpointList is the breakpoint overlay (B): the breakpoints with their
// numbers, one selected for deletion.
type BreakpointList struct {
	KeyMap BreakpointsKeyMap

	styles *Styles
	bps    []debug.Breakpoint
	cursor int
	open   bool
}

// NewBreakpointList returns a closed list.
func NewBreakpointList(s *Styles) BreakpointList {
	return BreakpointList{KeyMap: DefaultBreakpointsKeyMap(), styles: s}
}

// Open shows bps.
func (l *BreakpointList) Open(bps []debug.Breakpoint) {
	l.bps, l.open = bps, true
	l.cursor = min(l.cursor, max(len(bps)-1, 0))
}

// Close hides the list.
func (l *BreakpointList) Close() { l.open = false }

// IsOpen reports whether the list is shown (and has the keyboard).
func (l BreakpointList) IsOpen() bool { return l.open }

// Selected returns the breakpoint under the cursor.
func (l BreakpointList) Selected() (debug.Breakpoint, bool) {
	if l.cursor < len(l.bps) {
		return l.bps[l.cursor], true
	}
	return debug.Breakpoint{}, false
}

// Update moves the selection.
func (l BreakpointList) Update(msg tea.Msg) (BreakpointList, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, l.KeyMap.Up):
			l.cursor = max(l.cursor-1, 0)
		case key.Matches(k, l.KeyMap.Down):
			l.cursor = min(l.cursor+1, max(len(l.bps)-1, 0))
		}
	}
	return l, nil
}

// View renders the list as a box.
func (l BreakpointList) View() string {
	s := l.styles
	var b strings.Builder
	b.WriteString(s.App.Title.Render("breakpoints"))
	if len(l.bps) == 0 {
		b.WriteString("\n\n" + s.App.Subtitle.Render("none: b on a row breaks on its method; :break tools/call, tool=echo, error, when EXPR"))
	}
	for i, bp := range l.bps {
		line := fmt.Sprintf("%3d  %s", bp.ID, bp)
		if bp.Disabled {
			line += "  (disabled)"
		}
		if i == l.cursor {
			line = s.Timeline.Cursor.Render(line)
		}
		b.WriteString("\n" + line)
	}
	b.WriteString("\n\n" + s.App.Subtitle.Render("j/k select · space enable/disable · d delete · esc close"))
	return s.App.Overlay.Render(b.String())
}

func lipglossWidth(s string) int { return lipgloss.Width(s) }

func lipglossHeight(s string) int { return lipgloss.Height(s) }

func spaces(n int) string { return strings.Repeat(" ", max(n, 0)) }
