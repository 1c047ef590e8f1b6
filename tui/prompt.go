package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textinput"
	tea "charm.land/bubbletea/v2"
)

// promptKind says what a prompt's text is for.
type promptKind int

const (
	promptCommand promptKind = iota // ":" command line
	promptFilter                    // "/" filter
)

// promptSubmitMsg carries the text of a submitted prompt.
type promptSubmitMsg struct {
	kind promptKind
	text string
}

// promptCancelMsg says the prompt was dismissed.
type promptCancelMsg struct{ kind promptKind }

// Prompt is the one-line input at the bottom: the ":" command line and the
// "/" filter. It has the keyboard while it is open.
type Prompt struct {
	KeyMap PromptKeyMap

	input textinput.Model
	kind  promptKind
	open  bool
	width int
}

// NewPrompt returns a closed prompt.
func NewPrompt(s *Styles) Prompt {
	in := textinput.New()
	st := textinput.DefaultStyles(s.Dark)
	st.Cursor.Blink = false // a steady cursor: no timer ticks, stable snapshots
	st.Focused.Prompt = s.Status.Prompt
	in.SetStyles(st)
	return Prompt{KeyMap: DefaultPromptKeyMap(), input: in}
}

// Open opens the prompt for kind with initial text.
func (p *Prompt) Open(kind promptKind, text string) tea.Cmd {
	p.kind, p.open = kind, true
	p.input.Prompt = ":"
	p.input.Placeholder = "goto 120 · goto 12.5s · break tools/call · break tool=echo · break when params.arguments.limit > 5 · speed 4 · q"
	if kind == promptFilter {
		p.input.Prompt = "/"
		p.input.Placeholder = "method:tools/call tool:echo dir:send server:NAME status:error id:3 free text"
	}
	p.input.SetValue(text)
	p.input.CursorEnd()
	return p.input.Focus()
}

// OpenFilter opens the filter prompt empty, the filter in force (if any)
// as its placeholder.
func (p *Prompt) OpenFilter(current string) tea.Cmd {
	cmd := p.Open(promptFilter, "")
	if current != "" {
		p.input.Placeholder = "now: " + current + " (type a new filter; enter alone clears it)"
	}
	return cmd
}

// IsOpen reports whether the prompt has the keyboard.
func (p Prompt) IsOpen() bool { return p.open }

// SetWidth sets the prompt's width.
func (p *Prompt) SetWidth(w int) { p.width = w; p.input.SetWidth(max(w-2, 1)) }

// Update edits the text; enter submits and esc cancels, each as a message.
func (p Prompt) Update(msg tea.Msg) (Prompt, tea.Cmd) {
	if !p.open {
		return p, nil
	}
	if k, ok := msg.(tea.KeyPressMsg); ok {
		switch {
		case key.Matches(k, p.KeyMap.Submit):
			p.open = false
			p.input.Blur()
			sub := promptSubmitMsg{p.kind, p.input.Value()}
			return p, func() tea.Msg { return sub }
		case key.Matches(k, p.KeyMap.Cancel):
			p.open = false
			p.input.Blur()
			kind := p.kind
			return p, func() tea.Msg { return promptCancelMsg{kind} }
		}
	}
	var cmd tea.Cmd
	p.input, cmd = p.input.Update(msg)
	return p, cmd
}

// View renders the prompt line.
func (p Prompt) View() string { return padANSI(p.input.View(), p.width) }
