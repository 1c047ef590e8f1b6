package tui

import (
	"io"
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/tape"
)

// open A --diff B: the calls side by side, the changed ones marked, the
// cursor on the first difference, n to the next, the JSON difference below.
func TestCompareView(t *testing.T) {
	mk := func(answer, desc string) (*tape.Index, string) {
		data := `{"jsonrpc":"2.0","id":1,"method":"tools/list","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"answer","description":"` + desc + `"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.001Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.002Z"}}
{"jsonrpc":"2.0","id":2,"result":{"content":[]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.003Z"}}
{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"answer","arguments":{}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.004Z"}}
{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"` + answer + `"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.005Z"}}
`
		x := tape.NewIndex(strings.NewReader(data))
		if err := x.Extend(int64(len(data)), nil); err != nil {
			t.Fatal(err)
		}
		return x, data
	}
	xa, da := mk("42", "old")
	xb, db := mk("43", "new")
	side := func(x *tape.Index, data string) compare.Side {
		return compare.Side{Name: "t", Index: x, Open: func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(data)), nil }}
	}
	r, err := compare.Compare(side(xa, da), side(xb, db), compare.Options{LatencyRatio: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var m tea.Model = NewCompare(xa, xb, "a.jsonl", "b.jsonl", r, false)
	m, _ = m.Update(tea.WindowSizeMsg{Width: 120, Height: 30})
	s := ansi.Strip(m.View().Content)
	for _, want := range []string{"A a.jsonl · B b.jsonl", "tool answer changed", "›~ #0 tools/list", " = #2 tools/call echo", " ~ #4 tools/call answer", "/result/tools/0/description: \"old\" → \"new\""} {
		if !strings.Contains(s, want) {
			t.Errorf("the view lacks %q:\n%s", want, s)
		}
	}
	m, _ = m.Update(tea.KeyPressMsg{Code: 'n', Text: "n"})
	s = ansi.Strip(m.View().Content)
	if !strings.Contains(s, "›~ #4 tools/call answer") || !strings.Contains(s, `/result/content/0/text: "42" → "43"`) {
		t.Errorf("n did not move to the next difference:\n%s", s)
	}
	// The two answers side by side: A's and B's headers and texts on one line.
	for _, pair := range [][2]string{{"A #4", "B #4"}, {`"text": "42"`, `"text": "43"`}} {
		found := false
		for _, l := range strings.Split(s, "\n") {
			if i, j := strings.Index(l, pair[0]), strings.Index(l, pair[1]); i >= 0 && j > i {
				found = true
			}
		}
		if !found {
			t.Errorf("%s and %s are not side by side:\n%s", pair[0], pair[1], s)
		}
	}
	if n := strings.Count(s, "\n") + 1; n != 30 {
		t.Errorf("the view is %d lines, the screen 30", n)
	}
}
