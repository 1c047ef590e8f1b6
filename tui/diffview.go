package tui

import (
	"strconv"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/replay/live"
	"github.com/tapedeck/tapedeck/tape"
)

// DiffView shows a divergence: the recorded (expected) request beside the
// client's (actual) one, as structures, with the lines of every changed JSON
// path highlighted and the paths listed above.
type DiffView struct {
	scrollPane

	d *live.Divergence
}

// NewDiffView returns an empty diff pane.
func NewDiffView(s *Styles) DiffView {
	return DiffView{scrollPane: newScrollPane(s)}
}

// SetSize sets the pane's size.
func (v *DiffView) SetSize(w, h int) {
	v.resize(w, h)
	v.refresh()
}

// SetStyles switches the theme.
func (v *DiffView) SetStyles(s *Styles) { v.styles = s; v.refresh() }

// Show displays d.
func (v *DiffView) Show(d live.Divergence) {
	v.d = &d
	v.refresh()
	v.vp.GotoTop()
}

func (v *DiffView) refresh() {
	if v.d == nil || v.width == 0 {
		return
	}
	v.vp.SetContent(renderDiff(*v.d, v.width, v.styles))
}

// renderDiff draws expected and actual side by side.
func renderDiff(d live.Divergence, width int, s *Styles) string {
	changed := map[string]bool{}
	for _, p := range d.Paths {
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
	side := func(title string, raw []byte, st func(...string) string) []string {
		out := []string{s.Detail.Header.Render(title)}
		if len(raw) == 0 {
			return append(out, s.Detail.Key.Render("(nothing)"))
		}
		text, marked := prettyJSONMarked(raw, mark)
		for i, l := range strings.Split(text, "\n") {
			for _, w := range strings.Split(ansi.Hardwrap(l, colW, true), "\n") {
				if marked[i] {
					w = st(w)
				}
				out = append(out, w)
			}
		}
		return out
	}
	// The recorded side loses the recorder's _meta; the client's side is
	// the bytes it sent, its own _meta and key order included.
	left := side("expected (recorded) #"+strconv.Itoa(d.Seq), tape.StripMeta(d.Expected), s.Detail.Removed.Render)
	right := side("actual (client)", d.Actual, s.Detail.Added.Render)
	var b strings.Builder
	b.WriteString(s.Timeline.Error.Render("divergence: " + d.Reason))
	if len(d.Paths) > 0 {
		b.WriteString("\n" + s.Detail.Key.Render("changed: ") + s.Detail.Changed.Render(strings.Join(d.Paths, ", ")))
	}
	b.WriteString("\n" + s.Detail.Key.Render("a answer with the recorded response · e send the divergence error · s skip the recorded request"))
	sep := s.Detail.Separate.Render(" │ ")
	for i := range max(len(left), len(right)) {
		l, r := "", ""
		if i < len(left) {
			l = left[i]
		}
		if i < len(right) {
			r = right[i]
		}
		b.WriteString("\n" + padANSI(l, colW) + sep + r)
	}
	return b.String()
}

// Update scrolls when the pane has the focus.
func (v DiffView) Update(msg tea.Msg) (DiffView, tea.Cmd) {
	cmd := v.scroll(msg)
	return v, cmd
}

// View renders the pane.
func (v DiffView) View() string {
	if v.d == nil {
		return v.styles.Detail.Key.Render("no divergence")
	}
	return v.vp.View()
}
