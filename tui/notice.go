package tui

// Notices: one helper (notify, in the shape of bubbles' list
// NewStatusMessage) sets the status bar's message, logs it for :messages
// and times it out. Each notice says the essential part first (the file,
// the reason), so what is cut off is the least of it; a notice too long
// for the status line takes a line of its own, wrapped to two.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// noticeTimeout is how long a notice stays on the status bar (a key
// press clears it sooner); :messages keeps every one.
const noticeTimeout = 10 * time.Second

// maxNotices bounds the message log.
const maxNotices = 500

// notice is one status message as it was shown.
type notice struct {
	at   time.Time
	text string
	ok   bool
}

// noticeExpiredMsg clears the notice of generation gen, unless a newer
// one replaced it.
type noticeExpiredMsg struct{ gen int }

// notify shows s on the status bar (an alert unless ok) and logs it.
// Update, seeing a new notice, returns the command that clears it after
// noticeTimeout (bubbles' NewStatusMessage returns that command itself;
// here most call sites return a Model alone, so Update carries it once
// for all of them).
func (m *Model) notify(ok bool, s string) {
	m.notice, m.noticeOK = s, ok
	m.noticeGen++
	m.notices = append(m.notices, notice{at: m.now(), text: s, ok: ok})
	if len(m.notices) > maxNotices {
		m.notices = append(m.notices[:0], m.notices[len(m.notices)-maxNotices:]...)
	}
}

// expireNotice is the command that clears the current notice after
// noticeTimeout.
func (m Model) expireNotice() tea.Cmd {
	gen := m.noticeGen
	return m.noticeAfter(noticeTimeout, func(time.Time) tea.Msg { return noticeExpiredMsg{gen} })
}

// noticeExpired clears the notice if msg's is still on show.
func (m Model) noticeExpired(msg noticeExpiredMsg) (tea.Model, tea.Cmd) {
	if msg.gen == m.noticeGen {
		m.notice = ""
	}
	return m, nil
}

// noticeLines is the notice as the status bar shows it when it does not
// fit beside the segments: its own line, wrapped to at most two, the
// second cut with an ellipsis (:messages has it whole).
func noticeLines(s string, w int) []string {
	w = max(w-2, 10) // the style's padding
	lines := strings.Split(ansi.Wrap(s, w, ""), "\n")
	if len(lines) > 2 {
		lines = lines[:2]
		lines[1] = ansi.Truncate(lines[1], w-1, "") + "…"
		lines[1] = ansi.Truncate(lines[1], w, "…")
	}
	return lines
}

// messagesLines is the message log, oldest first, each notice wrapped to w.
func (m Model) messagesLines(w int) []string {
	if len(m.notices) == 0 {
		return []string{m.styles.App.Subtitle.Render("no messages yet")}
	}
	var out []string
	for _, n := range m.notices {
		mark, st := "  ", m.styles.Help.FullDesc
		if !n.ok {
			mark, st = "✗ ", m.styles.Timeline.Error
		}
		head := m.styles.App.Subtitle.Render(n.at.Format("15:04:05")) + " " + mark
		body := strings.Split(ansi.Wrap(n.text, max(w-11, 10), ""), "\n")
		for i, l := range body {
			if i > 0 {
				head = spaces(11)
			}
			out = append(out, head+st.Render(l))
		}
	}
	return out
}

// scrollBox is an overlay's content cut to the lines that fit in h rows
// from top, with a line saying what lies above and below; top is clamped.
func scrollBox(lines []string, top, h int) (string, int) {
	if len(lines) <= h {
		return strings.Join(lines, "\n"), 0
	}
	h = max(h-1, 1) // the scroll line
	top = min(max(top, 0), len(lines)-h)
	more := fmt.Sprintf("lines %d–%d of %d · j/k scroll · any other key closes", top+1, top+h, len(lines))
	return strings.Join(lines[top:top+h], "\n") + "\n" + more, top
}

// overlayKey scrolls the help or the message log (j/k, the arrows, page
// up and down); any other key closes it.
func (m Model) overlayKey(msg tea.KeyPressMsg) Model {
	page := max(m.height-8, 1)
	switch msg.String() {
	case "j", "down":
		m.overlayTop++
	case "k", "up":
		m.overlayTop--
	case "pgdown", "ctrl+d", "space":
		m.overlayTop += page
	case "pgup", "ctrl+u":
		m.overlayTop -= page
	default:
		m.showHelp, m.showLog = false, false
		return m
	}
	// Clamp to what the overlay shows, so scrolling back starts at once.
	if m.showLog {
		_, m.overlayTop = scrollBox(m.messagesLines(m.overlayInner()), m.overlayTop, m.overlayRows())
	} else {
		_, m.overlayTop = scrollBox(m.helpLines(), m.overlayTop, m.overlayRows())
	}
	return m
}

// overlayInner is the width inside an overlay's border and padding.
func (m Model) overlayInner() int { return max(m.width-6, 20) }

// overlayRows is how many lines of content an overlay shows below its
// heading: the screen less the border, the heading and its blank line.
func (m Model) overlayRows() int { return max(m.height-4, 3) }

// messagesView is the message log overlay (:messages), newest at the
// bottom.
func (m Model) messagesView() string {
	body, _ := scrollBox(m.messagesLines(m.overlayInner()), m.overlayTop, m.overlayRows())
	head := m.styles.App.Title.Render("messages") + "  " + m.styles.App.Subtitle.Render(fmt.Sprintf("(%d · any key closes)", len(m.notices)))
	return m.styles.App.Overlay.Width(m.width - 2).Render(head + "\n" + body)
}
