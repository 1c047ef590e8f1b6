package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// TestDiffViewShowsClientBytes: the client's side of the diff is the
// request as the client sent it, in its key order and with its own _meta;
// the recorded side leaves out the recorder's _meta.
func TestDiffViewShowsClientBytes(t *testing.T) {
	v := NewDiffView(NewStyles(true))
	v.SetSize(160, 60)
	v.Show(debug.LiveDivergence{Divergence: debug.Divergence{Expected: 2, Message: "replay mismatch", Raw: []byte(`{"params":{"name":"y"},"method":"tools/call","_meta":{"trace":"t1"},"id":"b","jsonrpc":"2.0"}`), Diff: []tape.DiffOp{{Op: "replace", Path: "/params/name"}}}, Recorded: []byte(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}`)})
	var right []string // the client's column, one key a line
	for _, l := range strings.Split(ansi.Strip(v.View()), "\n") {
		if _, r, ok := strings.Cut(l, " │ "); ok {
			right = append(right, strings.TrimSpace(r))
		}
	}
	got := strings.Join(right, "\n")
	last := -1
	for _, k := range []string{`"params"`, `"method"`, `"_meta"`, `"trace": "t1"`, `"id"`, `"jsonrpc"`} {
		i := strings.Index(got, k)
		if i < 0 || i < last {
			t.Fatalf("the client's side lacks %s or shows it out of the order sent:\n%s", k, got)
		}
		last = i
	}
	if s := ansi.Strip(v.View()); strings.Contains(s, `"dir"`) {
		t.Errorf("the recorded side shows the recorder's _meta:\n%s", s)
	}
}

// A change below a long _meta is on screen when the diff opens: the body
// scrolls to the first changed line, under a header that stays.
func TestDiffViewScrollsToChange(t *testing.T) {
	var meta strings.Builder
	for i := range 40 {
		if i > 0 {
			meta.WriteString(",")
		}
		fmt.Fprintf(&meta, `"k%02d":%d`, i, i)
	}
	msg := func(v string) []byte {
		return []byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"_meta":{` + meta.String() + `},"name":"echo","arguments":{"message":"` + v + `"}}}`)
	}
	v := NewDiffView(NewStyles(true))
	v.SetSize(120, 15)
	v.Show(debug.LiveDivergence{Divergence: debug.Divergence{Expected: 5, Message: "replay mismatch", Raw: msg("bye"), Diff: []tape.DiffOp{{Op: "replace", Path: "/params/arguments/message"}}}, Recorded: msg("hi")})
	s := ansi.Strip(v.View())
	for _, want := range []string{"divergence: replay mismatch", "changed: params.arguments.message", `"message": "hi"`, `"message": "bye"`} {
		if !strings.Contains(s, want) {
			t.Errorf("the diff does not show %s:\n%s", want, s)
		}
	}
	if n := strings.Count(s, "\n") + 1; n > 15 {
		t.Errorf("the diff is %d lines, the pane 15", n)
	}
}
