package tui

// The protocol state at the cursor: what a client and a server had agreed
// and listed as of the selected message. A forward scan of the index
// (extended as the tape grows) keeps, per server, the positions of the
// messages that change that state: initialize requests, list answers,
// list_changed notifications, and the requests that stayed unanswered for
// long. The state at any message is then a few binary searches and the
// bodies of a handful of messages (cached), so moving the cursor costs the
// same on a tape of ten messages or a million.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// pendingWindow is how far back from the cursor the pending requests are
// looked for message by message; requests answered further away than this
// (or never) are kept in stateIndex.long.
const pendingWindow = 4096

// stateIndex is the forward scan.
type stateIndex struct {
	x       *tape.Index
	scanned int
	inits   map[string][]int // server → its initialize requests (client → server)
	lists   map[string][]int // server + "\x00" + list method → answers to it
	changed map[string][]int // server + "\x00" + notification → list_changed notifications
	long    []int            // requests answered more than pendingWindow messages later, or never
	bodies  map[int][]byte   // message bodies read for the pane, by seq
	tasks   []tape.Task      // the tape's tasks (state_tasks.go), found when taskN != its length
	taskN   int
}

func newStateIndex(x *tape.Index) *stateIndex {
	return &stateIndex{x: x, inits: map[string][]int{}, lists: map[string][]int{}, changed: map[string][]int{}, bodies: map[int][]byte{}}
}

// extend scans the messages indexed since the last call. A request is
// judged long once its answer is known, or when it is still unanswered:
// unanswered requests are looked at again on each extend.
func (s *stateIndex) extend() {
	n := s.x.Len()
	// Requests found unanswered may have been answered since.
	s.long = slices.DeleteFunc(s.long, func(i int) bool {
		p := s.x.Pair(i).Partner
		return p >= 0 && p-i <= pendingWindow
	})
	for i := s.scanned; i < n; i++ {
		e := s.x.Entry(i)
		switch {
		case e.Kind == tape.KindRequest && e.Dir == tape.DirSend:
			if e.Method == "initialize" {
				s.inits[e.Server] = append(s.inits[e.Server], i)
			}
			if p := s.x.Pair(i).Partner; p < 0 || p-i > pendingWindow {
				s.long = append(s.long, i)
			}
		case e.Kind == tape.KindResponse && e.Dir == tape.DirRecv:
			if l, ok := tape.ListOf(s.x.MethodOf(i)); ok {
				k := e.Server + "\x00" + l.Method
				s.lists[k] = append(s.lists[k], i)
			}
		case e.Kind == tape.KindNotification && strings.HasSuffix(e.Method, "/list_changed"):
			k := e.Server + "\x00" + e.Method
			s.changed[k] = append(s.changed[k], i)
		}
	}
	slices.Sort(s.long)
	s.scanned = n
	if len(s.bodies) > 256 {
		clear(s.bodies)
	}
}

// body returns message seq without its tape metadata.
func (s *stateIndex) body(seq int) []byte {
	if b, ok := s.bodies[seq]; ok {
		return b
	}
	m, err := s.x.Message(seq)
	if err != nil {
		return nil
	}
	b := tape.StripMeta(m.Raw)
	s.bodies[seq] = b
	return b
}

// lastAtOrBefore returns the last of the sorted seqs at or before seq, and
// its index in seqs, or -1.
func lastAtOrBefore(seqs []int, seq int) (int, int) {
	i := sort.SearchInts(seqs, seq+1) - 1
	if i < 0 {
		return -1, -1
	}
	return seqs[i], i
}

// listing is one list answer's names.
type listing struct {
	seq   int
	names []string
}

// protoState is the protocol state as of one message.
type protoState struct {
	server, session        string
	at                     int
	asked, version         string
	clientInfo, serverInfo string
	clientCaps, serverCaps string
	initAt                 int
	lists                  []listState
	pending                []int
	tasks                  []taskState
}

// listState is one list as last listed, and how it changed.
type listState struct {
	method, member string
	last           *listing
	prev           *listing
	changedBetween int // a list_changed between prev and last (its seq), or -1
	changedSince   int // a list_changed after last (its seq), or -1
}

// stateAt computes the state as of message seq.
func (s *stateIndex) stateAt(seq int) protoState {
	s.extend()
	e := s.x.Entry(seq)
	server := e.Server
	st := protoState{at: seq, server: server, initAt: -1}
	if hm := tape.ParseHTTPMeta(s.body0(seq)); hm.HTTP {
		st.session = hm.Session
		if hm.NewSession != "" {
			st.session = hm.NewSession
		}
	}
	if init, _ := lastAtOrBefore(s.inits[server], seq); init >= 0 {
		st.initAt = init
		req := s.body(init)
		p := gjson.GetBytes(req, "params")
		st.asked = p.Get("protocolVersion").String()
		st.clientInfo = strings.TrimSpace(p.Get("clientInfo.name").String() + " " + p.Get("clientInfo.version").String())
		st.clientCaps = capsText(p.Get("capabilities"))
		if ans := s.x.Pair(init).Partner; ans >= 0 && ans <= seq {
			r := gjson.GetBytes(s.body(ans), "result")
			st.version = r.Get("protocolVersion").String()
			st.serverInfo = strings.TrimSpace(r.Get("serverInfo.name").String() + " " + r.Get("serverInfo.version").String())
			st.serverCaps = capsText(r.Get("capabilities"))
		}
	}
	for _, l := range tape.Lists() {
		ls := listState{method: l.Method, member: l.Member, changedBetween: -1, changedSince: -1}
		answers := s.lists[server+"\x00"+l.Method]
		last, i := lastAtOrBefore(answers, seq)
		if last >= 0 {
			ls.last = &listing{seq: last, names: s.names(last, l)}
			if i > 0 {
				ls.prev = &listing{seq: answers[i-1], names: s.names(answers[i-1], l)}
			}
		}
		changes := s.changed[server+"\x00"+l.Changed]
		if c, _ := lastAtOrBefore(changes, seq); c >= 0 {
			switch {
			case ls.last != nil && c > ls.last.seq:
				ls.changedSince = c
			case ls.last != nil && ls.prev != nil && c > ls.prev.seq:
				ls.changedBetween = c
			}
		}
		if ls.last != nil || ls.changedSince >= 0 {
			st.lists = append(st.lists, ls)
		}
	}
	st.pending = s.pendingAt(seq)
	st.tasks = s.tasksAt(server, seq)
	return st
}

// body0 is the message with its tape metadata (for the HTTP dialect).
func (s *stateIndex) body0(seq int) []byte {
	m, err := s.x.Message(seq)
	if err != nil {
		return nil
	}
	return m.Raw
}

// names returns the names (or URIs) of a list answer's items.
func (s *stateIndex) names(seq int, l tape.List) []string {
	var out []string
	for _, it := range gjson.GetBytes(s.body(seq), "result."+l.Member).Array() {
		out = append(out, it.Get(l.Key).String())
	}
	return out
}

// pendingAt returns the client requests sent at or before seq and not
// answered by then, oldest first.
func (s *stateIndex) pendingAt(seq int) []int {
	var out []int
	for _, i := range s.long {
		if i > seq {
			break
		}
		if p := s.x.Pair(i).Partner; p < 0 || p > seq {
			out = append(out, i)
		}
	}
	for i := max(seq-pendingWindow, 0); i <= seq; i++ {
		e := s.x.Entry(i)
		if e.Kind != tape.KindRequest || e.Dir != tape.DirSend {
			continue
		}
		if p := s.x.Pair(i).Partner; p > seq && p-i <= pendingWindow && !slices.Contains(out, i) {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return out
}

// capsText lists a capabilities object's members, with their sub-flags:
// "tools{listChanged}, logging".
func capsText(caps gjson.Result) string {
	if !caps.IsObject() {
		return "none"
	}
	var parts []string
	caps.ForEach(func(k, v gjson.Result) bool {
		p := k.String()
		var subs []string
		if v.IsObject() {
			v.ForEach(func(sk, sv gjson.Result) bool {
				if sv.Type != gjson.False {
					subs = append(subs, sk.String())
				}
				return true
			})
		}
		if len(subs) > 0 {
			p += "{" + strings.Join(subs, ",") + "}"
		}
		parts = append(parts, p)
		return true
	})
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// diffNames returns what is in b and not a (added) and in a and not b.
func diffNames(a, b []string) (added, removed []string) {
	in := func(xs []string, x string) bool { return slices.Contains(xs, x) }
	for _, n := range b {
		if !in(a, n) {
			added = append(added, n)
		}
	}
	for _, n := range a {
		if !in(b, n) {
			removed = append(removed, n)
		}
	}
	return added, removed
}

// renderState draws the state pane.
func renderState(st protoState, x *tape.Index, s *Styles, width int) string {
	var b strings.Builder
	kv := func(k, v string) {
		b.WriteString(s.Detail.Key.Render(pad(k, 10)) + " " + s.Detail.Value.Render(v) + "\n")
	}
	head := fmt.Sprintf("protocol state as of #%d · server %s", st.at, st.server)
	if st.session != "" {
		head += " · session " + st.session
	}
	b.WriteString(s.Detail.Header.Render(head) + "\n\n")
	renderTasks(&b, st.tasks, x, st.at, s, kv)
	if st.initAt < 0 {
		kv("handshake", "none yet (no initialize before this message)")
	} else {
		v := st.version
		switch {
		case v == "":
			v = "not answered yet (asked " + st.asked + ")"
		case v != st.asked:
			v += " (the client asked " + st.asked + ")"
		}
		kv("protocol", v+fmt.Sprintf("  · initialize #%d", st.initAt))
		kv("client", st.clientInfo+" · capabilities: "+st.clientCaps)
		if st.serverInfo != "" {
			kv("server", st.serverInfo+" · capabilities: "+st.serverCaps)
		}
	}
	for _, l := range st.lists {
		b.WriteString("\n")
		if l.last == nil {
			kv(l.member, fmt.Sprintf("never listed; changed at #%d", l.changedSince))
			continue
		}
		kv(l.member, fmt.Sprintf("%d as listed at #%d: %s", len(l.last.names), l.last.seq, strings.Join(l.last.names, ", ")))
		if l.prev != nil {
			added, removed := diffNames(l.prev.names, l.last.names)
			change := "the same as at #" + fmt.Sprint(l.prev.seq)
			if len(added)+len(removed) > 0 {
				var parts []string
				for _, a := range added {
					parts = append(parts, "+"+a)
				}
				for _, r := range removed {
					parts = append(parts, "−"+r)
				}
				change = fmt.Sprintf("since #%d: %s", l.prev.seq, strings.Join(parts, " "))
			}
			if l.changedBetween >= 0 {
				change += fmt.Sprintf(" (list_changed at #%d)", l.changedBetween)
			}
			kv("", change)
		}
		if l.changedSince >= 0 {
			kv("", s.Timeline.Error.Render(fmt.Sprintf("list_changed at #%d: not listed again yet", l.changedSince)))
		}
	}
	b.WriteString("\n")
	if len(st.pending) == 0 {
		kv("pending", "no request awaits an answer")
	} else {
		verb := " await an answer:"
		if len(st.pending) == 1 {
			verb = " awaits an answer:"
		}
		kv("pending", text.Plural(len(st.pending), "request")+verb)
		at := x.Entry(st.at).Time
		for _, i := range st.pending {
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

	idx   *stateIndex
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
		p.x, p.idx = x, newStateIndex(x)
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
	p.vp.SetContent(ansi.Wrap(renderState(p.idx.stateAt(p.seq), p.x, p.styles, p.width), p.width, ""))
}

// Update scrolls when the pane has the focus.
func (p StatePane) Update(msg tea.Msg) (StatePane, tea.Cmd) {
	cmd := p.scroll(msg)
	return p, cmd
}

// View renders the pane.
func (p StatePane) View() string { return p.vp.View() }
