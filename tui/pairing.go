package tui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
)

// Pairing shows a request and its response side by side, with the latency
// between them; on a notification or lifecycle record it shows that message
// alone. The key x (global) moves the timeline's cursor to the partner.
type Pairing struct {
	scrollPane

	x        *tape.Index
	seq      int
	unfolded bool
	shown    detailKey
	tasks    map[int]tape.Task // the tape's tasks by their creating request and its answer
}

// NewPairing returns an empty pairing pane.
func NewPairing(s *Styles) Pairing {
	return Pairing{scrollPane: newScrollPane(s), seq: -1}
}

// SetSize sets the pane's size.
func (p *Pairing) SetSize(w, h int) {
	p.resize(w, h)
	p.refresh()
}

// SetStyles switches the theme.
func (p *Pairing) SetStyles(s *Styles) { p.styles = s; p.refresh() }

// Show selects message seq of x.
func (p *Pairing) Show(x *tape.Index, seq int) {
	if p.seq != seq {
		p.unfolded = false
	}
	p.x, p.seq = x, seq
	p.refresh()
}

func (p *Pairing) refresh() {
	if p.x == nil || p.width == 0 {
		return
	}
	k := detailKey{p.x, p.seq, p.x.Len(), p.unfolded, p.styles, p.width, ""}
	if k == p.shown {
		return
	}
	same := k.x == p.shown.x && k.seq == p.shown.seq
	p.shown = k
	if p.seq < 0 || p.seq >= p.x.Len() {
		p.vp.SetContent("")
		return
	}
	p.vp.SetContent(p.render())
	if !same {
		p.vp.GotoTop()
	}
}

func (p *Pairing) render() string {
	s := p.styles
	pr := p.x.Pair(p.seq)
	e := p.x.Entry(p.seq)
	req, resp := p.seq, pr.Partner
	if e.Kind == tape.KindResponse {
		req, resp = pr.Partner, p.seq
	}
	var head string
	switch {
	case e.Kind != tape.KindRequest && e.Kind != tape.KindResponse:
		head = fmt.Sprintf("#%d %s: not part of a request/response pair", p.seq, e.Kind)
	case pr.Partner < 0 && e.Kind == tape.KindRequest:
		head = fmt.Sprintf("request #%d %s: no response on the tape", req, pr.Method)
	case pr.Partner < 0:
		head = fmt.Sprintf("response #%d: no request matched it (orphan)", resp)
	default:
		head = fmt.Sprintf("request #%d  ⇄  response #%d   %s   latency %s", req, resp, pr.Method, tape.FormatLatency(1, pr.Latency))
		if pr.Late {
			head += "   (late: after its cancellation)"
		}
	}
	colW := max((p.width-3)/2, 10)
	left := p.column(req, "request", colW)
	right := p.column(resp, "response", colW)
	if e.Kind != tape.KindRequest && e.Kind != tape.KindResponse {
		left, right = p.column(p.seq, e.Kind.String(), colW), nil
	}
	var b strings.Builder
	b.WriteString(s.Detail.Header.Render(head))
	if k, ok := p.tasks[p.seq]; ok {
		for _, l := range taskTimeline(p.x, k, s) {
			b.WriteString("\n" + ansi.Truncate(l, p.width, "…"))
		}
		b.WriteByte('\n')
	}
	sep := s.Detail.Separate.Render(" │ ")
	for i := range max(len(left), len(right)) {
		b.WriteByte('\n')
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		b.WriteString(padANSI(l, colW) + sep + r)
	}
	return b.String()
}

// column renders message seq as wrapped lines of at most w columns.
func (p *Pairing) column(seq int, title string, w int) []string {
	s := p.styles
	if seq < 0 {
		return []string{s.Detail.Key.Render("(no " + title + ")")}
	}
	e, err := p.x.Message(seq)
	if err != nil {
		return []string{s.Timeline.Error.Render(err.Error())}
	}
	hdr := fmt.Sprintf("%s #%d %s %s", title, seq, arrow(e.Dir), e.Server)
	if !e.Time.IsZero() {
		hdr += " " + e.Time.Format("15:04:05.000")
	}
	body := e.Raw
	if e.Kind != tape.KindInvalid {
		body = tape.StripMeta(e.Raw)
	}
	text := highlightJSON(prettyJSON(body, !p.unfolded), s.Detail.Chroma)
	lines := []string{s.Detail.Key.Render(ansi.Truncate(hdr, w, "…"))}
	for _, l := range strings.Split(text, "\n") {
		lines = append(lines, strings.Split(ansi.Hardwrap(l, w, true), "\n")...)
	}
	return lines
}

// padANSI pads a styled string to w columns.
func padANSI(s string, w int) string {
	if sw := ansi.StringWidth(s); sw < w {
		return s + strings.Repeat(" ", w-sw)
	}
	return ansi.Truncate(s, w, "")
}

// Update scrolls and folds when the pane has the focus.
func (p Pairing) Update(msg tea.Msg) (Pairing, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && p.focused && key.Matches(k, p.KeyMap.Unfold) {
		p.unfolded = !p.unfolded
		p.refresh()
		return p, nil
	}
	cmd := p.scroll(msg)
	return p, cmd
}

// View renders the pane, exactly its height.
func (p Pairing) View() string { return p.vp.View() }
