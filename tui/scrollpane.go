package tui

import (
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// scrollPane is what the lower panes (message, pairing, stats, diff) share:
// a viewport, its size, the focus gate and the scrolling keys. Each pane
// embeds it and sets the viewport's content.
type scrollPane struct {
	KeyMap DetailKeyMap

	styles  *Styles
	vp      viewport.Model
	focused bool
	width   int
	height  int
}

func newScrollPane(s *Styles) scrollPane {
	vp := viewport.New()
	// Panes wrap their content once, when they set it: the viewport's soft
	// wrap works per frame and is quadratic in a line's length.
	vp.FillHeight = true
	vp.MouseWheelEnabled = true
	return scrollPane{KeyMap: DefaultDetailKeyMap(), styles: s, vp: vp}
}

// resize sets the viewport to the pane's size.
func (p *scrollPane) resize(w, h int) {
	p.width, p.height = w, h
	p.vp.SetWidth(w)
	p.vp.SetHeight(h)
}

// Focus gives the pane the keyboard.
func (p *scrollPane) Focus() { p.focused = true }

// Blur takes the keyboard away.
func (p *scrollPane) Blur() { p.focused = false }

// scroll moves the viewport for the scrolling keys, when the pane has the
// focus, and for the mouse wheel, whenever the app routes it here.
func (p *scrollPane) scroll(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.KeyPressMsg:
		if p.focused {
			p.KeyMap.scroll(&p.vp, msg)
		}
	case tea.MouseWheelMsg:
		var cmd tea.Cmd
		p.vp, cmd = p.vp.Update(msg)
		return cmd
	}
	return nil
}
