package tui

// The protocol state at the cursor: what a client and a server had agreed
// and listed as of the selected message, computed by tape.StateIndex and
// drawn here.

import (
	"fmt"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// capsText lists capabilities with their sub-flags: "tools{listChanged},
// logging", or "none".
func capsText(caps []tape.Capability) string {
	if len(caps) == 0 {
		return "none"
	}
	parts := make([]string, 0, len(caps))
	for _, c := range caps {
		p := c.Name
		if len(c.Flags) > 0 {
			p += "{" + strings.Join(c.Flags, ",") + "}"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, ", ")
}

// renderState draws the state pane.
func renderState(st tape.State, x *tape.Index, s *Styles, width int) string {
	var b strings.Builder
	kv := func(k, v string) {
		b.WriteString(s.Detail.Key.Render(pad(k, 10)) + " " + s.Detail.Value.Render(v) + "\n")
	}
	head := fmt.Sprintf("protocol state as of #%d · server %s", st.Seq, st.Server)
	if st.Session != "" {
		head += " · session " + st.Session
	}
	b.WriteString(s.Detail.Header.Render(head) + "\n\n")
	renderTasks(&b, st.Tasks, x, st.Seq, s, kv)
	if st.InitAt < 0 {
		kv("handshake", "none yet (no initialize or server/discover before this message)")
	} else {
		v := st.Version
		switch {
		case v == "":
			v = "not answered yet (asked " + st.Asked + ")"
		case v != st.Asked:
			v += " (the client asked " + st.Asked + ")"
		}
		by := "initialize"
		if st.Discover {
			by = "server/discover" // 2026-07-28: no initialize
		}
		kv("protocol", v+fmt.Sprintf("  · %s #%d", by, st.InitAt))
		kv("client", st.ClientInfo+" · capabilities: "+capsText(st.ClientCaps))
		if st.ServerInfo != "" {
			kv("server", st.ServerInfo+" · capabilities: "+capsText(st.ServerCaps))
		}
	}
	for _, l := range st.Lists {
		b.WriteString("\n")
		if l.Last == nil {
			kv(l.Member, fmt.Sprintf("never listed; changed at #%d", l.ChangedSince))
			continue
		}
		kv(l.Member, fmt.Sprintf("%d as listed at #%d: %s", len(l.Last.Names), l.Last.Seq, strings.Join(l.Last.Names, ", ")))
		if l.Prev != nil {
			added, removed := l.Added(), l.Removed()
			change := "the same as at #" + fmt.Sprint(l.Prev.Seq)
			if len(added)+len(removed) > 0 {
				var parts []string
				for _, a := range added {
					parts = append(parts, "+"+a)
				}
				for _, r := range removed {
					parts = append(parts, "−"+r)
				}
				change = fmt.Sprintf("since #%d: %s", l.Prev.Seq, strings.Join(parts, " "))
			}
			if l.ChangedBetween >= 0 {
				change += fmt.Sprintf(" (list_changed at #%d)", l.ChangedBetween)
			}
			kv("", change)
		}
		if l.ChangedSince >= 0 {
			kv("", s.Timeline.Error.Render(fmt.Sprintf("list_changed at #%d: not listed again yet", l.ChangedSince)))
		}
	}
	if len(st.Subscriptions) > 0 {
		b.WriteString("\n")
		kv("subscribed", strings.Join(st.Subscriptions, ", "))
	}
	b.WriteString("\n")
	if len(st.Pending) == 0 {
		kv("pending", "no request awaits an answer")
	} else {
		verb := " await an answer:"
		if len(st.Pending) == 1 {
			verb = " awaits an answer:"
		}
		kv("pending", text.Plural(len(st.Pending), "request")+verb)
		at := x.Entry(st.Seq).Time
		for _, i := range st.Pending {
			e := x.Entry(i)
			line := fmt.Sprintf("#%d %s", i, e.Method)
			if name := callName(x, i, e.Method); name != "" {
				line += " " + name
			}
			if !at.IsZero() && !e.Time.IsZero() {
				line += fmt.Sprintf(" (%s so far)", tape.FormatLatency(1, at.Sub(e.Time).Round(time.Millisecond)))
			}
			if p := x.Pair(i); p.Partner < 0 {
				line += " · never answered on the tape"
			}
			kv("", line)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}

// StatePane shows the protocol state as of the message under the cursor.
type StatePane struct {
	scrollPane

	idx   *tape.StateIndex
	x     *tape.Index
	seq   int
	shown detailKey
}

// NewStatePane returns an empty state pane.
func NewStatePane(s *Styles) StatePane { return StatePane{scrollPane: newScrollPane(s), seq: -1} }

// SetSize sets the pane's size.
func (p *StatePane) SetSize(w, h int) { p.resize(w, h); p.refresh() }

// SetStyles switches the theme.
func (p *StatePane) SetStyles(s *Styles) { p.styles = s; p.refresh() }

// Show selects message seq of x.
func (p *StatePane) Show(x *tape.Index, seq int) {
	if p.x != x {
		p.x, p.idx = x, tape.NewStateIndex(x)
	}
	p.seq = seq
	p.refresh()
}

func (p *StatePane) refresh() {
	if p.x == nil || p.width == 0 {
		return
	}
	k := detailKey{x: p.x, seq: p.seq, n: p.x.Len(), styles: p.styles, width: p.width}
	if k == p.shown {
		return
	}
	p.shown = k
	if p.seq < 0 || p.seq >= p.x.Len() {
		p.vp.SetContent("")
		return
	}
	p.vp.SetContent(ansi.Wrap(renderState(p.idx.At(p.seq), p.x, p.styles, p.width), p.width, ""))
}

// Update scrolls when the pane has the focus.
func (p StatePane) Update(msg tea.Msg) (StatePane, tea.Cmd) {
	cmd := p.scroll(msg)
	return p, cmd
}

// View renders the pane.
func (p StatePane) View() string { return p.vp.View() }
