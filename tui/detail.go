package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
)

// Detail shows one message: a header of what the index knows about it, then
// the message as it crossed the wire (without the tape's _meta), pretty
// printed, highlighted, folded when large and wrapped to the pane.
type Detail struct {
	scrollPane

	x        *tape.Index
	t0       time.Time
	seq      int
	unfolded bool
	marks    []string  // what the filter asks for, marked in the body
	shown    detailKey // what the viewport holds, to skip needless work
}

type detailKey struct {
	x        *tape.Index
	seq      int
	n        int // the index's length: a pending request may get its answer
	unfolded bool
	styles   *Styles
	width    int
	marks    string
}

// NewDetail returns an empty detail pane.
func NewDetail(s *Styles) Detail {
	return Detail{scrollPane: newScrollPane(s), seq: -1}
}

// SetSize sets the pane's size.
func (d *Detail) SetSize(w, h int) {
	d.resize(w, h)
	d.refresh()
}

// SetStyles switches the theme.
func (d *Detail) SetStyles(s *Styles) { d.styles = s; d.refresh() }

// Show selects message seq of x (-1 for none).
func (d *Detail) Show(x *tape.Index, seq int) {
	if d.x != x || d.t0.IsZero() {
		d.t0 = startTime(x) // again while a tape indexed in the background has no time yet
	}
	if d.seq != seq {
		d.unfolded = false
	}
	d.x, d.seq = x, seq
	d.refresh()
}

func (d *Detail) refresh() {
	if d.x == nil || d.width == 0 {
		return
	}
	k := detailKey{d.x, d.seq, d.x.Len(), d.unfolded, d.styles, d.width, strings.Join(d.marks, "\x00")}
	if k == d.shown {
		return
	}
	sameMsg := k.x == d.shown.x && k.seq == d.shown.seq
	d.shown = k
	if d.seq < 0 || d.seq >= d.x.Len() {
		d.vp.SetContent("")
		return
	}
	content, first := markLines(renderMessage(d.x, d.seq, d.t0, d.unfolded, d.styles), d.marks, d.styles.Detail.Mark)
	d.vp.SetContent(ansi.Hardwrap(content, d.width, true))
	if !sameMsg {
		d.vp.GotoTop()
		if first > 0 {
			d.vp.SetYOffset(max(first-2, 0)) // the first mark in view
		}
	}
}

// SetHighlights sets the words marked in the message (the filter's); nil
// marks nothing.
func (d *Detail) SetHighlights(words []string) {
	d.marks = words
	d.refresh()
}

// markLines styles every case-insensitive occurrence of words in the
// rendered text s, keeping its colours, and returns the first marked
// line (-1 when none).
func markLines(s string, words []string, st lipgloss.Style) (string, int) {
	if len(words) == 0 {
		return s, -1
	}
	lines := strings.Split(s, "\n")
	first := -1
	for li, line := range lines {
		plain := ansi.Strip(line)
		low := strings.ToLower(plain)
		var spans [][2]int
		for _, w := range words {
			w = strings.ToLower(w)
			if w == "" {
				continue
			}
			for off := 0; ; {
				i := strings.Index(low[off:], w)
				if i < 0 {
					break
				}
				spans = append(spans, [2]int{off + i, off + i + len(w)})
				off += i + len(w)
			}
		}
		if len(spans) == 0 {
			continue
		}
		if first < 0 {
			first = li
		}
		slices.SortFunc(spans, func(a, b [2]int) int { return a[0] - b[0] })
		var ranges []lipgloss.Range
		end := 0
		for _, sp := range spans {
			if sp[0] < end {
				continue // overlapping: the earlier one is marked
			}
			// Ranges count cells; the offsets are bytes of the plain text.
			ranges = append(ranges, lipgloss.NewRange(ansi.StringWidth(plain[:sp[0]]), ansi.StringWidth(plain[:sp[1]]), st))
			end = sp[1]
		}
		lines[li] = lipgloss.StyleRanges(line, ranges...)
	}
	return strings.Join(lines, "\n"), first
}

// renderMessage is the header and highlighted body of message seq.
func renderMessage(x *tape.Index, seq int, t0 time.Time, unfolded bool, s *Styles) string {
	e, err := x.Message(seq)
	if err != nil {
		return s.Timeline.Error.Render(err.Error())
	}
	p := x.Pair(seq)
	var b strings.Builder
	b.WriteString(s.Detail.Header.Render(fmt.Sprintf("#%d", seq)))
	kv := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteString("  " + s.Detail.Key.Render(k) + " " + s.Detail.Value.Render(v))
	}
	kv("line", fmt.Sprint(e.Line))
	kv(string(e.Dir), arrow(e.Dir)+" "+e.Server)
	kv(e.Kind.String(), firstNonEmpty(e.Method, p.Method))
	if e.ID != "" {
		kv("id", string(e.ID))
	}
	if !e.Time.IsZero() {
		kv("at", e.Time.Format(tape.TimeFormat))
		if !t0.IsZero() {
			kv("+", relTime(e.Time.Sub(t0)))
		}
	}
	b.WriteByte('\n')
	switch {
	case p.Partner >= 0:
		kv("partner", fmt.Sprintf("#%d (x jumps)", p.Partner))
		kv("latency", tape.FormatLatency(1, p.Latency))
	case p.Pending:
		kv("pending", "no response on the tape")
	case p.Orphan:
		kv("orphan", "no request matched this response")
	}
	for _, flag := range []struct {
		on   bool
		name string
	}{{p.Cancelled, "cancelled"}, {p.Late, "late (after its cancellation)"}, {p.Reordered, "recorded before its request"}} {
		if flag.on {
			kv("note", flag.name)
		}
	}
	if e.Batch > 0 {
		kv("batch", fmt.Sprint(e.Batch))
	}
	if e.Problem != "" {
		kv("problem", e.Problem)
	}
	var originals []tape.Injection
	for _, in := range tape.Injections(e.Raw) {
		b.WriteByte('\n')
		kv("injected", injectionText(in))
		if len(in.Original) > 0 {
			originals = append(originals, in)
		}
	}
	b.WriteString("\n\n")
	body := e.Raw
	if e.Kind != tape.KindInvalid {
		body = tape.StripMeta(e.Raw)
	}
	pretty := prettyJSON(body, !unfolded)
	b.WriteString(highlightJSON(pretty, s.Detail.Chroma))
	if !unfolded && pretty != prettyJSON(body, false) {
		b.WriteString("\n" + s.Detail.Folded.Render("(folded: enter in this pane unfolds)"))
	}
	for _, in := range originals {
		b.WriteString("\n\n" + s.Detail.Header.Render("before rule "+in.Rule+" ("+in.Action+")") + "\n")
		b.WriteString(highlightJSON(prettyJSON(in.Original, !unfolded), s.Detail.Chroma))
	}
	return b.String()
}

// injectionText says what a rule did: "rule echo-fails: error, answered in
// its place (dropped)".
func injectionText(in tape.Injection) string {
	s := "rule " + in.Rule + ": " + in.Action
	switch {
	case in.Audit:
		s += " (audit: not done)"
	case in.Injected:
		s += " (this message is the rule's own)"
	case in.Dropped:
		s += " (went no further)"
	case len(in.Original) > 0:
		s += " (the original is below)"
	}
	if in.DelayMS > 0 {
		s += fmt.Sprintf(" held %dms", in.DelayMS)
	}
	if in.Note != "" {
		s += " · " + in.Note
	}
	return s
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// Update scrolls and folds when the pane has the focus; the wheel scrolls
// whenever the app routes it here.
func (d Detail) Update(msg tea.Msg) (Detail, tea.Cmd) {
	if k, ok := msg.(tea.KeyPressMsg); ok && d.focused && key.Matches(k, d.KeyMap.Unfold) {
		d.unfolded = !d.unfolded
		d.refresh()
		return d, nil
	}
	cmd := d.scroll(msg)
	return d, cmd
}

// View renders the pane, exactly its height.
func (d Detail) View() string { return d.vp.View() }
