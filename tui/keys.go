package tui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/viewport"
	tea "charm.land/bubbletea/v2"
)

// KeyMap is the app's global keys: they work whichever pane has the focus.
// It implements help.KeyMap; the help overlay (?) shows it with the focused
// pane's keys.
type KeyMap struct {
	Quit        key.Binding
	Help        key.Binding
	SwitchPane  key.Binding
	Play        key.Binding
	StepForward key.Binding
	StepBack    key.Binding
	NextRequest key.Binding
	PrevRequest key.Binding
	SpeedUp     key.Binding
	SpeedDown   key.Binding
	Breakpoint  key.Binding
	Breakpoints key.Binding
	Search      key.Binding
	NextMatch   key.Binding
	PrevMatch   key.Binding
	NextFailure key.Binding
	PrevFailure key.Binding
	OnlyMatches key.Binding
	Tasks       key.Binding
	Restart     key.Binding
	Partner     key.Binding
	Link        key.Binding
	Copy        key.Binding
	Command     key.Binding
	ViewMessage key.Binding
	ViewPair    key.Binding
	ViewStats   key.Binding
	ViewState   key.Binding
	Escape      key.Binding
}

// DefaultKeyMap returns the global keys.
func DefaultKeyMap() KeyMap {
	return KeyMap{
		Quit:        key.NewBinding(key.WithKeys("q", "ctrl+c"), key.WithHelp("q", "quit")),
		Help:        key.NewBinding(key.WithKeys("?"), key.WithHelp("?", "help")),
		SwitchPane:  key.NewBinding(key.WithKeys("tab", "shift+tab"), key.WithHelp("tab", "switch pane")),
		Play:        key.NewBinding(key.WithKeys("space"), key.WithHelp("space", "play/pause")),
		StepForward: key.NewBinding(key.WithKeys("l", "right"), key.WithHelp("l/→", "step forward")),
		StepBack:    key.NewBinding(key.WithKeys("h", "left"), key.WithHelp("h/←", "step back")),
		NextRequest: key.NewBinding(key.WithKeys("]"), key.WithHelp("]", "next request")),
		PrevRequest: key.NewBinding(key.WithKeys("["), key.WithHelp("[", "previous request")),
		SpeedUp:     key.NewBinding(key.WithKeys("+", "="), key.WithHelp("+", "faster")),
		SpeedDown:   key.NewBinding(key.WithKeys("-"), key.WithHelp("-", "slower")),
		Breakpoint:  key.NewBinding(key.WithKeys("b"), key.WithHelp("b", "break on method")),
		Breakpoints: key.NewBinding(key.WithKeys("B"), key.WithHelp("B", "breakpoints")),
		Search:      key.NewBinding(key.WithKeys("/"), key.WithHelp("/", "filter")),
		NextMatch:   key.NewBinding(key.WithKeys("n"), key.WithHelp("n", "next match")),
		PrevMatch:   key.NewBinding(key.WithKeys("N"), key.WithHelp("N", "previous match")),
		NextFailure: key.NewBinding(key.WithKeys("}"), key.WithHelp("}", "next failure")),
		PrevFailure: key.NewBinding(key.WithKeys("{"), key.WithHelp("{", "previous failure")),
		OnlyMatches: key.NewBinding(key.WithKeys("f"), key.WithHelp("f", "only matches")),
		Tasks:       key.NewBinding(key.WithKeys("T"), key.WithHelp("T", "expand/fold task polls")),
		Restart:     key.NewBinding(key.WithKeys("R"), key.WithHelp("R", "restart from the top")),
		Partner:     key.NewBinding(key.WithKeys("x"), key.WithHelp("x", "jump to partner")),
		Link:        key.NewBinding(key.WithKeys("L"), key.WithHelp("L", "follow resource_link")),
		Copy:        key.NewBinding(key.WithKeys("y"), key.WithHelp("y", "copy message")),
		Command:     key.NewBinding(key.WithKeys(":"), key.WithHelp(":", "command")),
		ViewMessage: key.NewBinding(key.WithKeys("1"), key.WithHelp("1", "message view")),
		ViewPair:    key.NewBinding(key.WithKeys("2"), key.WithHelp("2", "pairing view")),
		ViewStats:   key.NewBinding(key.WithKeys("3"), key.WithHelp("3", "stats view")),
		ViewState:   key.NewBinding(key.WithKeys("4"), key.WithHelp("4", "protocol state")),
		Escape:      key.NewBinding(key.WithKeys("esc"), key.WithHelp("esc", "clear filter")),
	}
}

// ShortHelp implements help.KeyMap.
func (k KeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Help, k.Play, k.StepForward, k.NextFailure, k.Breakpoint, k.Search, k.Command, k.Quit}
}

// FullHelp implements help.KeyMap.
func (k KeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{
		{k.Play, k.StepForward, k.StepBack, k.NextRequest, k.PrevRequest, k.SpeedUp, k.SpeedDown},
		{k.Breakpoint, k.Breakpoints, k.Search, k.NextMatch, k.PrevMatch, k.OnlyMatches, k.Escape},
		{k.NextFailure, k.PrevFailure, k.Restart, k.Tasks},
		{k.Partner, k.Link, k.Copy, k.Command, k.ViewMessage, k.ViewPair, k.ViewStats, k.ViewState},
		{k.SwitchPane, k.Help, k.Quit},
	}
}

// TimelineKeyMap is the timeline's keys.
type TimelineKeyMap struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	First    key.Binding
	Last     key.Binding
	Open     key.Binding
}

// DefaultTimelineKeyMap returns the timeline's keys.
func DefaultTimelineKeyMap() TimelineKeyMap {
	return TimelineKeyMap{
		Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		First:    key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "first")),
		Last:     key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "last")),
		Open:     key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "open")),
	}
}

// ShortHelp implements help.KeyMap.
func (k TimelineKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.First, k.Last, k.Open}
}

// FullHelp implements help.KeyMap.
func (k TimelineKeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.First, k.Last, k.Open}}
}

// DetailKeyMap is the keys of the lower pane (message, pairing, stats).
type DetailKeyMap struct {
	Up       key.Binding
	Down     key.Binding
	PageUp   key.Binding
	PageDown key.Binding
	Top      key.Binding
	Bottom   key.Binding
	Unfold   key.Binding
}

// scroll moves vp for the scrolling keys of km and reports whether msg was
// one of them: the lower panes share it.
func (km DetailKeyMap) scroll(vp *viewport.Model, msg tea.KeyPressMsg) bool {
	switch {
	case key.Matches(msg, km.Up):
		vp.ScrollUp(1)
	case key.Matches(msg, km.Down):
		vp.ScrollDown(1)
	case key.Matches(msg, km.PageUp):
		vp.PageUp()
	case key.Matches(msg, km.PageDown):
		vp.PageDown()
	case key.Matches(msg, km.Top):
		vp.GotoTop()
	case key.Matches(msg, km.Bottom):
		vp.GotoBottom()
	default:
		return false
	}
	return true
}

// DefaultDetailKeyMap returns the lower pane's keys.
func DefaultDetailKeyMap() DetailKeyMap {
	return DetailKeyMap{
		Up:       key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "scroll up")),
		Down:     key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "scroll down")),
		PageUp:   key.NewBinding(key.WithKeys("pgup", "ctrl+u"), key.WithHelp("pgup", "page up")),
		PageDown: key.NewBinding(key.WithKeys("pgdown", "ctrl+d"), key.WithHelp("pgdn", "page down")),
		Top:      key.NewBinding(key.WithKeys("g", "home"), key.WithHelp("g", "top")),
		Bottom:   key.NewBinding(key.WithKeys("G", "end"), key.WithHelp("G", "bottom")),
		Unfold:   key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "fold/unfold")),
	}
}

// ShortHelp implements help.KeyMap.
func (k DetailKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Unfold}
}

// FullHelp implements help.KeyMap.
func (k DetailKeyMap) FullHelp() [][]key.Binding {
	return [][]key.Binding{{k.Up, k.Down, k.PageUp, k.PageDown, k.Top, k.Bottom, k.Unfold}}
}

// PromptKeyMap is the keys of the command line and the filter prompt.
type PromptKeyMap struct {
	Submit key.Binding
	Cancel key.Binding
}

// DefaultPromptKeyMap returns the prompt's keys.
func DefaultPromptKeyMap() PromptKeyMap {
	return PromptKeyMap{
		Submit: key.NewBinding(key.WithKeys("enter"), key.WithHelp("enter", "run")),
		Cancel: key.NewBinding(key.WithKeys("esc", "ctrl+c"), key.WithHelp("esc", "cancel")),
	}
}

// ShortHelp implements help.KeyMap.
func (k PromptKeyMap) ShortHelp() []key.Binding { return []key.Binding{k.Submit, k.Cancel} }

// FullHelp implements help.KeyMap.
func (k PromptKeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// DivergenceKeyMap is the choices offered when a live client diverges.
type DivergenceKeyMap struct {
	Answer    key.Binding
	Error     key.Binding
	ErrorKeep key.Binding
	Skip      key.Binding
}

// DefaultDivergenceKeyMap returns the divergence choices.
func DefaultDivergenceKeyMap() DivergenceKeyMap {
	return DivergenceKeyMap{
		Answer:    key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "answer as recorded")),
		Error:     key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "send the error, pass the request")),
		ErrorKeep: key.NewBinding(key.WithKeys("w"), key.WithHelp("w", "send the error, wait for it")),
		Skip:      key.NewBinding(key.WithKeys("s"), key.WithHelp("s", "skip the recorded request")),
	}
}

// ShortHelp implements help.KeyMap.
func (k DivergenceKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Answer, k.Error, k.ErrorKeep, k.Skip}
}

// FullHelp implements help.KeyMap.
func (k DivergenceKeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// BreakpointsKeyMap is the keys of the breakpoint list (B).
type BreakpointsKeyMap struct {
	Up     key.Binding
	Down   key.Binding
	Toggle key.Binding
	Delete key.Binding
	Close  key.Binding
}

// DefaultBreakpointsKeyMap returns the breakpoint list's keys.
func DefaultBreakpointsKeyMap() BreakpointsKeyMap {
	return BreakpointsKeyMap{
		Up:     key.NewBinding(key.WithKeys("k", "up"), key.WithHelp("k/↑", "up")),
		Down:   key.NewBinding(key.WithKeys("j", "down"), key.WithHelp("j/↓", "down")),
		Toggle: key.NewBinding(key.WithKeys("space", "enter"), key.WithHelp("space", "enable/disable")),
		Delete: key.NewBinding(key.WithKeys("delete", "backspace"), key.WithHelp("del", "delete")),
		Close:  key.NewBinding(key.WithKeys("esc", "B"), key.WithHelp("esc", "close")),
	}
}

// ShortHelp implements help.KeyMap.
func (k BreakpointsKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Up, k.Down, k.Toggle, k.Delete, k.Close}
}

// FullHelp implements help.KeyMap.
func (k BreakpointsKeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }
