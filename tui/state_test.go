package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
)

// stateTape: a handshake, tools listed, a tools/list_changed, tools listed
// again with one tool swapped, and a call left unanswered.
func stateTape(t *testing.T) *tape.Index {
	t.Helper()
	lines := []string{
		`send {"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"cli","version":"2"}}}`,
		`recv {"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"srv","version":"9"}}}`,
		`send {"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
		`recv {"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"alpha"},{"name":"beta"}]}}`,
		`recv {"jsonrpc":"2.0","method":"notifications/tools/list_changed"}`,
		`send {"jsonrpc":"2.0","id":2,"method":"tools/list"}`,
		`recv {"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"alpha"},{"name":"gamma"}]}}`,
		`send {"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"gamma"}}`,
		`send {"jsonrpc":"2.0","id":4,"method":"ping"}`,
		`recv {"jsonrpc":"2.0","id":4,"result":{}}`,
	}
	var b strings.Builder
	for i, l := range lines {
		dir, msg, _ := strings.Cut(l, " ")
		fmt.Fprintf(&b, `%s,"_meta":{"dir":%q,"server":"s","ts":"2026-01-01T00:00:0%d.000Z"}}`+"\n", msg[:len(msg)-1], dir, i)
	}
	x := tape.NewIndex(strings.NewReader(b.String()))
	if err := x.Extend(int64(b.Len()), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// The protocol state at the cursor: the handshake, the tools as last
// listed and what a list_changed changed, the requests pending then.
func TestStatePane(t *testing.T) {
	x := stateTape(t)
	idx := tape.NewStateIndex(x)
	render := func(seq int) string { return ansi.Strip(renderState(idx.At(seq), x, NewStyles(true), 200)) }
	for _, c := range []struct {
		seq       int
		want, not []string
	}{
		{0, []string{"protocol   not answered yet (asked 2025-11-25)", "client     cli 2 · capabilities: roots{listChanged}", "pending    1 request awaits"}, []string{"tools "}},
		{3, []string{"protocol   2025-06-18 (the client asked 2025-11-25)", "server     srv 9 · capabilities: tools{listChanged}", "tools      2 as listed at #3: alpha, beta", "no request awaits"}, nil},
		{4, []string{"list_changed at #4: not listed again yet"}, nil},
		{6, []string{"tools      2 as listed at #6: alpha, gamma", "since #3: +gamma −beta (list_changed at #4)"}, []string{"not listed again"}},
		{8, []string{"#7 tools/call gamma", "never answered on the tape", "#8 ping"}, nil},
		{9, []string{"#7 tools/call gamma"}, []string{"#8 ping"}},
	} {
		got := render(c.seq)
		for _, w := range c.want {
			if !strings.Contains(got, w) {
				t.Errorf("state at #%d lacks %q:\n%s", c.seq, w, got)
			}
		}
		for _, n := range c.not {
			if strings.Contains(got, n) {
				t.Errorf("state at #%d has %q:\n%s", c.seq, n, got)
			}
		}
	}
}

// The pane in the app: 4 shows it, and it follows the cursor.
func TestStatePaneFollowsCursor(t *testing.T) {
	x := stateTape(t)
	m := New(x, Options{Name: "s", CopyDir: t.TempDir()}).resize(160, 40)
	m = send(t, m, keys("4", "g")...)
	if s := ansi.Strip(m.state.View()); !strings.Contains(s, "as of #0") {
		t.Fatalf("state pane at the first row:\n%s", s)
	}
	m = send(t, m, keys("G")...)
	if s := ansi.Strip(m.state.View()); !strings.Contains(s, "as of #9") || !strings.Contains(s, "alpha, gamma") {
		t.Errorf("state pane at the last row:\n%s", s)
	}
}

// The resources subscribed to are drawn when there are any.
func TestStatePaneSubscriptions(t *testing.T) {
	x := stateTape(t)
	st := tape.StateAt(x, 3)
	if got := ansi.Strip(renderState(st, x, NewStyles(true), 200)); strings.Contains(got, "subscribed") {
		t.Errorf("no subscription, yet:\n%s", got)
	}
	st.Subscriptions = []string{"file:///a", "file:///b"}
	if got := ansi.Strip(renderState(st, x, NewStyles(true), 200)); !strings.Contains(got, "subscribed file:///a, file:///b") {
		t.Errorf("subscriptions not drawn:\n%s", got)
	}
}
