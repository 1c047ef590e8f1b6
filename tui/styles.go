package tui

import (
	"image/color"

	"charm.land/bubbles/v2/help"
	"charm.land/lipgloss/v2"
)

// Styles is every style of the app in one place, built for a dark or a light
// terminal background (see NewStyles). Panes receive a pointer to the root's
// Styles so a theme change reaches all of them at once.
type Styles struct {
	Dark bool

	App struct {
		Title    lipgloss.Style
		Subtitle lipgloss.Style
		Border   lipgloss.Style // pane frames
		Focused  lipgloss.Style // the focused pane's frame
		Overlay  lipgloss.Style // help and breakpoint boxes
		Progress lipgloss.Style
	}
	Timeline struct {
		Header     lipgloss.Style
		Row        lipgloss.Style
		Cursor     lipgloss.Style // the selected row, focused
		CursorBlur lipgloss.Style // the selected row, unfocused
		Pending    lipgloss.Style // not yet delivered by playback
		Position   lipgloss.Style // the marker of the playback position
		Send       lipgloss.Style
		Recv       lipgloss.Style
		Lifecycle  lipgloss.Style
		Error      lipgloss.Style
		// Negotiation is a server/discover probe a server of an earlier
		// era rejected: version negotiation, faint, not a failure.
		Negotiation lipgloss.Style
		Diverged    lipgloss.Style
		Breakpoint  lipgloss.Style
		Match       lipgloss.Style // a row the search matches
		Summary     lipgloss.Style // the summary column
	}
	Detail struct {
		Header   lipgloss.Style
		Key      lipgloss.Style
		Value    lipgloss.Style
		Folded   lipgloss.Style
		Mark     lipgloss.Style // what the filter matched, in the message
		Added    lipgloss.Style // diff: only in actual
		Removed  lipgloss.Style // diff: only in expected
		Changed  lipgloss.Style // diff: a changed path
		Chroma   string         // chroma style name for JSON
		Separate lipgloss.Style // the rule between side-by-side columns
	}
	Status struct {
		Bar     lipgloss.Style
		Segment lipgloss.Style
		Playing lipgloss.Style
		Paused  lipgloss.Style
		Alert   lipgloss.Style
		Info    lipgloss.Style
		Prompt  lipgloss.Style
	}
	Help help.Styles
	// Background is the background the styles are built for (a dark or
	// a light terminal's), against which text has WCAG AA contrast.
	Background color.Color
}

// NewStyles builds the styles for a dark (true) or light (false) background.
func NewStyles(dark bool) *Styles {
	ld := lipgloss.LightDark(dark)
	c := func(light, darkc string) color.Color { return ld(lipgloss.Color(light), lipgloss.Color(darkc)) }
	var (
		fg     = c("#1f2328", "#d0d7de")
		dim    = c("#8c959f", "#6e7681")
		accent = c("#0969da", "#58a6ff")
		green  = c("#1a7f37", "#3fb950")
		red    = c("#cf222e", "#f85149")
		orange = c("#bc4c00", "#f0883e")
		purple = c("#8250df", "#bc8cff")
		selBg  = c("#ddf4ff", "#1f3a5f")
		blurBg = c("#eaeef2", "#30363d")
		barBg  = c("#eaeef2", "#21262d")
	)
	s := &Styles{Dark: dark}
	s.App.Title = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.App.Subtitle = lipgloss.NewStyle().Foreground(dim)
	s.App.Border = lipgloss.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(dim)
	s.App.Focused = lipgloss.NewStyle().Border(lipgloss.NormalBorder()).BorderForeground(accent)
	s.App.Overlay = lipgloss.NewStyle().Border(lipgloss.RoundedBorder()).BorderForeground(accent).Padding(0, 1)
	s.App.Progress = lipgloss.NewStyle().Foreground(accent)

	s.Timeline.Header = lipgloss.NewStyle().Bold(true).Foreground(dim)
	s.Timeline.Row = lipgloss.NewStyle().Foreground(fg)
	s.Timeline.Cursor = lipgloss.NewStyle().Background(selBg).Bold(true)
	s.Timeline.CursorBlur = lipgloss.NewStyle().Background(blurBg)
	s.Timeline.Pending = lipgloss.NewStyle().Foreground(dim).Faint(true)
	s.Timeline.Position = lipgloss.NewStyle().Foreground(orange).Bold(true)
	s.Timeline.Send = lipgloss.NewStyle().Foreground(accent)
	s.Timeline.Recv = lipgloss.NewStyle().Foreground(green)
	s.Timeline.Lifecycle = lipgloss.NewStyle().Foreground(dim)
	s.Timeline.Error = lipgloss.NewStyle().Foreground(red)
	s.Timeline.Negotiation = lipgloss.NewStyle().Foreground(dim).Faint(true)
	s.Timeline.Diverged = lipgloss.NewStyle().Foreground(red).Bold(true).Reverse(true)
	s.Timeline.Breakpoint = lipgloss.NewStyle().Foreground(red).Bold(true)
	s.Timeline.Match = lipgloss.NewStyle().Foreground(purple)
	s.Timeline.Summary = lipgloss.NewStyle().Foreground(dim)

	s.Detail.Header = lipgloss.NewStyle().Bold(true).Foreground(accent)
	s.Detail.Key = lipgloss.NewStyle().Foreground(dim)
	s.Detail.Value = lipgloss.NewStyle().Foreground(fg)
	s.Detail.Folded = lipgloss.NewStyle().Foreground(purple).Italic(true)
	s.Detail.Mark = lipgloss.NewStyle().Reverse(true).Bold(true)
	s.Detail.Added = lipgloss.NewStyle().Foreground(green).Bold(true)
	s.Detail.Removed = lipgloss.NewStyle().Foreground(red).Bold(true)
	s.Detail.Changed = lipgloss.NewStyle().Foreground(orange).Bold(true)
	s.Detail.Separate = lipgloss.NewStyle().Foreground(dim)
	s.Detail.Chroma = "github"
	if dark {
		s.Detail.Chroma = "monokai"
	}

	s.Status.Bar = lipgloss.NewStyle().Background(barBg).Foreground(fg)
	s.Status.Segment = lipgloss.NewStyle().Background(barBg).Foreground(fg).Padding(0, 1)
	s.Status.Playing = lipgloss.NewStyle().Background(green).Foreground(c("#ffffff", "#0d1117")).Bold(true).Padding(0, 1)
	s.Status.Paused = lipgloss.NewStyle().Background(dim).Foreground(c("#ffffff", "#0d1117")).Bold(true).Padding(0, 1)
	s.Status.Alert = lipgloss.NewStyle().Background(barBg).Foreground(red).Bold(true).Padding(0, 1)
	s.Status.Info = lipgloss.NewStyle().Background(barBg).Foreground(dim).Padding(0, 1)
	s.Status.Prompt = lipgloss.NewStyle().Foreground(accent).Bold(true)

	// The hint bar and the help overlay in the theme's colours: keys in
	// the text colour, what they do in a muted one that keeps WCAG AA
	// contrast (4.5:1) against the background (bubbles' 256-colour greys
	// 241 and 239 do not on a dark one).
	muted := c("#59636e", "#9198a1")
	s.Background = c("#ffffff", "#0d1117")
	s.Help = help.DefaultStyles(dark)
	s.Help.ShortKey = lipgloss.NewStyle().Foreground(fg).Bold(true)
	s.Help.ShortDesc = lipgloss.NewStyle().Foreground(muted)
	s.Help.ShortSeparator = lipgloss.NewStyle().Foreground(muted)
	s.Help.FullKey = lipgloss.NewStyle().Foreground(fg).Bold(true)
	s.Help.FullDesc = lipgloss.NewStyle().Foreground(muted)
	s.Help.FullSeparator = lipgloss.NewStyle().Foreground(muted)
	s.Help.Ellipsis = lipgloss.NewStyle().Foreground(muted)
	return s
}
