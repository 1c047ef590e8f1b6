package tui

// Live intercept (tapedeck debug -- SERVER, debug --upstream URL): the
// debugger sits between a live client and a live server, the session is
// recorded to the tape it follows, and a message a breakpoint matches is
// held, in either direction, until the user forwards it (a), drops it (d),
// answers it with an error (!) or edits it (e, in $EDITOR; the edit must
// be a JSON-RPC message of the same kind and id, and a sends it, as in
// mitmproxy). r sends the request at
// the cursor to the server again and shows its new answer beside the
// recorded one. The keys are mitmproxy's, which users of intercepting
// proxies know. Every screen shares the failure keys } and { and restart
// (R), so r, e and d mean one thing each.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"

	"charm.land/bubbles/v2/key"
	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// InterceptKeyMap are the keys of the intercept mode.
type InterceptKeyMap struct {
	Forward, Drop, Error, Edit, Resend key.Binding
}

// DefaultInterceptKeyMap returns mitmproxy's keys.
func DefaultInterceptKeyMap() InterceptKeyMap {
	return InterceptKeyMap{
		Forward: key.NewBinding(key.WithKeys("a"), key.WithHelp("a", "accept: forward it")),
		Drop:    key.NewBinding(key.WithKeys("d"), key.WithHelp("d", "drop it")),
		Error:   key.NewBinding(key.WithKeys("!"), key.WithHelp("!", "answer with an error")),
		Edit:    key.NewBinding(key.WithKeys("e"), key.WithHelp("e", "edit it, then a sends")),
		Resend:  key.NewBinding(key.WithKeys("r"), key.WithHelp("r", "re-send the request")),
	}
}

// ShortHelp implements help.KeyMap.
func (k InterceptKeyMap) ShortHelp() []key.Binding {
	return []key.Binding{k.Forward, k.Drop, k.Error, k.Edit, k.Resend}
}

// FullHelp implements help.KeyMap.
func (k InterceptKeyMap) FullHelp() [][]key.Binding { return [][]key.Binding{k.ShortHelp()} }

// interceptMsg carries a debug.InterceptEvent into Update.
type interceptMsg struct{ ev debug.InterceptEvent }

// editedMsg is the editor's return.
type editedMsg struct {
	id   int
	path string
	err  error
}

// interceptState is the app's view of the intercept session, if any.
type interceptState struct {
	s      debug.Intercept
	held   *debug.InterceptEvent   // the message on show, awaiting a verdict
	edited []byte                  // the held message as edited (e), sent by a; nil when unedited
	queue  []*debug.InterceptEvent // more held messages, in order
	resent *debug.InterceptEvent   // the last re-sent request's answer, on show
	closed bool
	bps    string // the breakpoints last given to the session
}

func (c interceptState) active() bool { return c.s != nil }

func (c interceptState) nextCmd() tea.Cmd {
	if c.s == nil || c.closed {
		return nil
	}
	s := c.s
	return func() tea.Msg { return interceptMsg{s.Next()} }
}

// interceptEvent handles what the session reported.
func (m Model) interceptEvent(msg interceptMsg) (tea.Model, tea.Cmd) {
	ev := msg.ev
	switch ev.Kind {
	case debug.InterceptHeld:
		e := ev
		if e.Breakpoint != "" {
			m.play.hits++ // the status's "bp N · hits M" counts holds as playback counts stops
		}
		if m.icpt.held == nil {
			m.icpt.held = &e
			m.icpt.resent = nil
		} else {
			m.icpt.queue = append(m.icpt.queue, &e)
		}
	case debug.InterceptResent:
		e := ev
		m.icpt.resent = &e
		m.notify(true, "the re-sent request was answered: the new answer is beside the recorded one")
	case debug.InterceptInfo:
		m.notify(true, ev.Text)
	case debug.InterceptClosed:
		m.icpt.closed = true
		return m, nil
	}
	return m, m.icpt.nextCmd()
}

// syncBreakpoints gives the session the breakpoints when they changed.
func (m Model) syncBreakpoints() (Model, tea.Cmd) {
	if !m.icpt.active() {
		return m, nil
	}
	bs := m.player.Breakpoints()
	var sb strings.Builder
	for _, b := range bs {
		fmt.Fprintf(&sb, "%s %v\n", b, b.Disabled)
	}
	if sb.String() == m.icpt.bps {
		return m, nil
	}
	m.icpt.bps = sb.String()
	s := m.icpt.s
	return m, func() tea.Msg { s.SetBreakpoints(bs); return nil }
}

// interceptKey takes the intercept mode's keys; ok is false for others.
func (m Model) interceptKey(msg tea.KeyPressMsg) (tea.Model, tea.Cmd, bool) {
	k := DefaultInterceptKeyMap()
	h := m.icpt.held
	switch {
	case key.Matches(msg, k.Resend):
		mm, cmd := m.resend()
		return mm, cmd, true
	case h == nil && key.Matches(msg, k.Forward, k.Drop, k.Error, k.Edit):
		m.notify(true, "nothing is held: a breakpoint (b, :break) holds the messages it matches")
		return m, nil, true
	case h == nil:
		return m, nil, false
	case key.Matches(msg, k.Forward) && m.icpt.edited != nil:
		return m.settle(debug.Verdict{Action: debug.Edited, Raw: m.icpt.edited}, "sent as edited")
	case key.Matches(msg, k.Forward):
		return m.settle(debug.Verdict{Action: debug.Forward}, "forwarded")
	case key.Matches(msg, k.Drop):
		return m.settle(debug.Verdict{Action: debug.Drop}, "dropped")
	case key.Matches(msg, k.Error):
		return m.settle(debug.Verdict{Action: debug.AnswerError}, "answered with an error")
	case key.Matches(msg, k.Edit):
		return m.edit()
	}
	return m, nil, false
}

// settle gives the held message its verdict and shows the next one.
func (m Model) settle(v debug.Verdict, done string) (tea.Model, tea.Cmd, bool) {
	h, s := m.icpt.held, m.icpt.s
	m.icpt.held, m.icpt.edited = nil, nil
	if len(m.icpt.queue) > 0 {
		m.icpt.held, m.icpt.queue = m.icpt.queue[0], m.icpt.queue[1:]
	}
	m.notify(true, fmt.Sprintf("%s %s", describeHeld(h), done))
	return m, func() tea.Msg { s.Settle(h.ID, v); return nil }, true
}

// edit opens the held message in $EDITOR (vi without one).
func (m Model) edit() (tea.Model, tea.Cmd, bool) {
	h := m.icpt.held
	src := h.Raw
	if m.icpt.edited != nil {
		src = m.icpt.edited // editing again starts from the edit
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, src, "", "  ") != nil {
		pretty.Write(src)
	}
	pretty.WriteByte('\n')
	dir := m.opts.CopyDir
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, "tapedeck-held-*.json")
	if err != nil {
		m.notify(false, "edit: "+err.Error())
		return m, nil, true
	}
	_, err = f.Write(pretty.Bytes())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		m.notify(false, "edit: "+err.Error())
		return m, nil, true
	}
	editor := os.Getenv("VISUAL")
	if editor == "" {
		editor = os.Getenv("EDITOR")
	}
	if editor == "" {
		editor = "vi"
	}
	id, path := h.ID, f.Name()
	cmd, ctx, cancel := editorCommand(editor, path, maxEditTime)
	return m, tea.ExecProcess(cmd, func(err error) tea.Msg {
		cancel()
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the editor did not exit in %s and was stopped", maxEditTime)
		}
		return editedMsg{id: id, path: path, err: err}
	}), true
}

// maxEditTime bounds an edit: the editor runs while the whole debugger
// waits (the terminal is its), so an $EDITOR that never exits is stopped
// after it, and the message stays held. A rule's delay has the same bound
// (rules.MaxDelay): a message held longer is held past any session.
const maxEditTime = 10 * time.Minute

// maxEdit bounds an edited message: the line limit of the stdio edges and
// of a tape (64 MiB). An edit past it is refused, read no further.
const maxEdit = 64 << 20

// editorCommand runs editor (a command line, as $EDITOR holds) on path,
// killed after limit (ctx then says context.DeadlineExceeded); cancel
// releases its timer once it has ended.
func editorCommand(editor, path string, limit time.Duration) (*exec.Cmd, context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	args := append(strings.Fields(editor), path)
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.WaitDelay = time.Second
	return cmd, ctx, cancel
}

// readEdit reads the edited file: a regular file of at most max bytes (an
// editor may have put anything at the path).
func readEdit(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("expected the edited file, found a %s at %s", st.Mode().Type(), path)
	}
	if st.Size() > max {
		return nil, fmt.Errorf("expected an edit of at most %d bytes (the line limit), found %d", max, st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err == nil && int64(len(data)) > max {
		err = fmt.Errorf("expected an edit of at most %d bytes (the line limit), found more", max)
	}
	return data, err
}

// edited checks the edit and, when it is a message of the same kind and
// id, sends it instead of the held one; otherwise it stays held.
func (m Model) edited(msg editedMsg) (tea.Model, tea.Cmd) {
	data, rerr := readEdit(msg.path, maxEdit)
	os.Remove(msg.path)
	h := m.icpt.held
	if h == nil || h.ID != msg.id {
		return m, nil
	}
	if msg.err != nil {
		m.notify(false, fmt.Sprintf("edit: the editor failed (%v); the message is still held", msg.err))
		return m, nil
	}
	if rerr != nil {
		m.notify(false, "edit refused, the message is still held: "+rerr.Error())
		return m, nil
	}
	raw, problem := checkEdit(h.Raw, data)
	if problem != "" {
		m.notify(false, "edit refused: "+problem+"; the message is still held")
		return m, nil
	}
	// As in mitmproxy, an edit is not sent until accepted: a sends it,
	// e edits it again, d and ! drop it or answer with an error instead.
	m.icpt.edited = raw
	m.notify(true, describeHeld(h)+" edited: a sends the edit, e edits again, d drops it")
	return m, nil
}

// checkEdit returns the edited message compacted, or what is wrong with
// it: it must be one JSON-RPC message of the held one's kind and id.
func checkEdit(held, edited []byte) ([]byte, string) {
	if len(edited) > maxEdit {
		return nil, fmt.Sprintf("expected at most %d bytes (the line limit), found %d", maxEdit, len(edited))
	}
	var c bytes.Buffer
	if err := json.Compact(&c, bytes.TrimSpace(edited)); err != nil {
		return nil, "expected JSON, found: " + err.Error()
	}
	raw := c.Bytes()
	es, hs := tape.Classify(raw), tape.Classify(held)
	if len(es) != 1 || !es[0].IsWire() {
		if len(es) == 1 && es[0].Problem != "" {
			return nil, "expected one JSON-RPC message: " + es[0].Problem
		}
		return nil, "expected one JSON-RPC message"
	}
	if len(hs) != 1 {
		return raw, ""
	}
	if es[0].Kind != hs[0].Kind {
		return nil, fmt.Sprintf("expected a %s, as held, found a %s", hs[0].Kind, es[0].Kind)
	}
	if !tape.EqualJSON([]byte(es[0].ID), []byte(hs[0].ID)) && (es[0].ID != "" || hs[0].ID != "") {
		return nil, fmt.Sprintf("expected id %s, as held, found %s", orNone(string(hs[0].ID)), orNone(string(es[0].ID)))
	}
	return raw, ""
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// resend sends the request at the cursor to the server again.
func (m Model) resend() (Model, tea.Cmd) {
	seq := m.timeline.Cursor()
	if seq < 0 || seq >= m.x.Len() {
		return m, nil
	}
	e := m.x.Entry(seq)
	if e.Kind != tape.KindRequest || e.Dir != tape.DirSend {
		m.notify(false, "r re-sends a client's request: put the cursor on one")
		return m, nil
	}
	rec, err := m.x.Message(seq)
	if err != nil {
		m.notify(false, "re-send: "+err.Error())
		return m, nil
	}
	raw := tape.StripMeta(rec.Raw)
	s := m.icpt.s
	m.notify(true, fmt.Sprintf("re-sent #%d %s to the server", seq, e.Method))
	return m, func() tea.Msg {
		if err := s.Resend(raw); err != nil {
			return errMsg{fmt.Errorf("re-send: %w", err)}
		}
		return nil
	}
}

// describeHeld names a held message: "send tools/call echo id 3".
func describeHeld(h *debug.InterceptEvent) string {
	es := tape.Classify(h.Raw)
	if len(es) != 1 {
		return string(h.Dir) + " message"
	}
	e := es[0]
	s := string(h.Dir) + " " + e.Kind.String()
	if e.Method != "" {
		s += " " + e.Method
	}
	if t := tape.Target(e.Method, h.Raw); t != "" {
		s += " " + t
	}
	if e.ID != "" {
		s += " id " + string(e.ID)
	}
	return s
}

// interceptStatus is the status bar's account of the intercept.
func (m Model) interceptStatus() (string, bool) {
	c := m.icpt
	switch {
	case c.held != nil:
		more := ""
		if n := len(c.queue); n > 0 {
			more = fmt.Sprintf(" (%d more)", n)
		}
		// The verdicts' keys are on the hint bar.
		if c.edited != nil {
			return fmt.Sprintf("HELD %s%s, edited", describeHeld(c.held), more), true
		}
		return fmt.Sprintf("HELD %s%s", describeHeld(c.held), more), true
	case c.closed:
		return "intercept ended", false
	}
	return "intercepting: breakpoints hold live messages", false
}

// interceptView is the lower pane while a message is held, or a re-sent
// request's answer is on show beside the recorded one.
func (m Model) interceptView() (string, bool) {
	w, s := m.width, m.styles
	switch c := m.icpt; {
	case c.held != nil:
		head := s.Status.Alert.Render(" HELD ") + " " + describeHeld(c.held)
		if c.held.Breakpoint != "" {
			head += s.App.Subtitle.Render(" · breakpoint " + c.held.Breakpoint)
		}
		if c.edited != nil {
			head += s.Status.Alert.Render(" EDITED: a sends this ")
			return head + "\n" + heldJSON(c.edited, w, s), true
		}
		return head + "\n" + heldJSON(c.held.Raw, w, s), true
	case c.resent != nil:
		half := max((w-3)/2, 10)
		recorded := m.recordedAnswer(c.resent.Request)
		left := s.Detail.Header.Render("recorded answer") + "\n" + heldJSON(recorded, half, s)
		right := s.Detail.Header.Render("answer now") + "\n" + heldJSON(c.resent.Raw, half, s)
		return lipgloss.JoinHorizontal(lipgloss.Top, lipgloss.NewStyle().Width(half).Render(left), " │ ", lipgloss.NewStyle().Width(half).Render(right)), true
	}
	return "", false
}

// recordedAnswer finds the recorded answer to the request raw (the first
// recorded request with the same method and params, and its pair).
func (m Model) recordedAnswer(raw []byte) []byte {
	for i := range m.x.Len() {
		e := m.x.Entry(i)
		if e.Kind != tape.KindRequest || e.Dir != tape.DirSend {
			continue
		}
		rec, err := m.x.Message(i)
		if err != nil || !sameCall(tape.StripMeta(rec.Raw), raw) {
			continue
		}
		if p := m.x.Pair(i); p.Partner >= 0 {
			if ans, err := m.x.Message(p.Partner); err == nil {
				return tape.StripMeta(ans.Raw)
			}
		}
		return nil
	}
	return nil
}

// sameCall compares two requests by method and params.
func sameCall(a, b []byte) bool {
	var x, y struct {
		Method string          `json:"method"`
		Params json.RawMessage `json:"params"`
	}
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return x.Method == y.Method && tape.EqualJSON(x.Params, y.Params)
}

// prettyJSON indents and colours raw for a column of width w.
func heldJSON(raw []byte, w int, s *Styles) string {
	if raw == nil {
		return s.App.Subtitle.Render("(none on the tape)")
	}
	var b bytes.Buffer
	if json.Indent(&b, raw, "", "  ") != nil {
		b.Reset()
		b.Write(raw)
	}
	return ansi.Hardwrap(highlightJSON(b.String(), s.Detail.Chroma), w, true)
}
