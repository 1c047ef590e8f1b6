package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// DiffView shows a divergence: the recorded (expected) request beside the
// client's (actual) one, as structures, with the lines of every changed JSON
// path highlighted and the paths listed above.
type DiffView struct {
	scrollPane

	d *debug.LiveDivergence
}

// NewDiffView returns an empty diff pane.
func NewDiffView(s *Styles) DiffView {
	return DiffView{scrollPane: newScrollPane(s)}
}

// SetSize sets the pane's size.
func (v *DiffView) SetSize(w, h int) {
	v.width, v.height = w, h
	v.refresh()
}

// SetStyles switches the theme.
func (v *DiffView) SetStyles(s *Styles) { v.styles = s; v.refresh() }

// Show displays d, scrolled to its first changed line.
func (v *DiffView) Show(d debug.LiveDivergence) {
	v.d = &d
	first := v.refresh()
	v.vp.GotoTop()
	if first > 2 {
		v.vp.SetYOffset(first - 2)
	}
}

// header is the part that stays on screen: why, what changed, the keys
// and the column titles.
func (v *DiffView) header() string {
	if v.d == nil {
		return ""
	}
	s := v.styles
	d := *v.d
	colW := max((v.width-3)/2, 10)
	var b strings.Builder
	b.WriteString(s.Timeline.Error.Render(ansi.Truncate("divergence: "+d.Message, v.width, "…")))
	if len(d.Paths()) > 0 {
		b.WriteString("\n" + ansi.Truncate(s.Detail.Key.Render("changed: ")+s.Detail.Changed.Render(strings.Join(d.Paths(), ", ")), v.width, "…"))
	}
	exp := "expected (recorded) #" + strconv.Itoa(d.Expected)
	if d.Expected < 0 {
		exp = "expected (recorded): none"
	}
	b.WriteString("\n" + padANSI(s.Detail.Header.Render(exp), colW) + s.Detail.Separate.Render(" │ ") + s.Detail.Header.Render("actual (client)"))
	return b.String()
}

// refresh lays the pane out and returns the first changed line of the
// body (-1 when none is marked).
func (v *DiffView) refresh() int {
	if v.d == nil || v.width == 0 {
		return -1
	}
	v.vp.SetWidth(v.width)
	v.vp.SetHeight(max(v.height-lipglossHeight(v.header()), 1))
	body, first := renderDiff(*v.d, v.width, v.styles)
	v.vp.SetContent(body)
	return first
}

// renderDiff draws expected and actual side by side and returns the first
// line with a change.
func renderDiff(d debug.LiveDivergence, width int, s *Styles) (string, int) {
	changed := map[string]bool{}
	for _, p := range d.Paths() {
		changed[strings.TrimPrefix(p, "$.")] = true
	}
	mark := func(path []string) bool {
		// A path is marked when it, or one of its ancestors, changed.
		for i := len(path); i > 0; i-- {
			if changed[strings.Join(path[:i], ".")] {
				return true
			}
		}
		return false
	}
	colW := max((width-3)/2, 10)
	first := -1
	side := func(raw []byte, none string, st func(...string) string) []string {
		if len(raw) == 0 {
			out := strings.Split(ansi.Wordwrap(none, colW, " "), "\n")
			for i, l := range out {
				out[i] = s.Detail.Key.Render(l)
			}
			return out
		}
		var out []string
		text, marked := prettyJSONMarked(raw, mark)
		for i, l := range strings.Split(text, "\n") {
			for _, w := range strings.Split(ansi.Hardwrap(l, colW, true), "\n") {
				if marked[i] {
					w = st(w)
					if first < 0 || len(out) < first {
						first = len(out)
					}
				}
				out = append(out, w)
			}
		}
		return out
	}
	// The recorded side loses the recorder's _meta; the client's side is
	// the bytes it sent, its own _meta and key order included.
	none := "(no recorded request)"
	if d.Expected < 0 && d.Where != "" {
		none = "(no recorded request: " + d.Where + ")"
	}
	left := side(tape.StripMeta(d.Recorded), none, s.Detail.Removed.Render)
	right := side(d.Raw, "(nothing)", s.Detail.Added.Render)
	var b strings.Builder
	sep := s.Detail.Separate.Render(" │ ")
	for i := range max(len(left), len(right)) {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(padANSI(l, colW) + sep + r)
	}
	return b.String(), first
}

// Update scrolls when the pane has the focus.
func (v DiffView) Update(msg tea.Msg) (DiffView, tea.Cmd) {
	cmd := v.scroll(msg)
	return v, cmd
}

// View renders the pane: the header, then the body scrolled.
func (v DiffView) View() string {
	if v.d == nil {
		return v.styles.Detail.Key.Render("no divergence")
	}
	return v.header() + "\n" + v.vp.View()
}
