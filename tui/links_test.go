package tui

import (
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/tapetest"
)

// linkModel is the app on a tape shaped as server-everything's
// get-resource-links records: a tool answer with two resource_links, a
// read of another resource, then reads of the second link and the first,
// and a second tool answer whose link was never read.
func linkModel(t *testing.T) Model {
	t.Helper()
	const link = `{"type":"resource_link","uri":"demo://resource/static/document/%s","name":"%s","mimeType":"text/markdown"}`
	links := func(names ...string) string {
		var out []string
		for _, n := range names {
			out = append(out, strings.ReplaceAll(link, "%s", n))
		}
		return strings.Join(out, ",")
	}
	x, _ := tapetest.Build(t, "everything",
		tapetest.Line{Dir: tape.DirSend, MS: 0, Msg: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get-resource-links","arguments":{"count":2}}}`},                    // 0
		tapetest.Line{Dir: tape.DirRecv, MS: 2, Msg: `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"2 links"},` + links("architecture.md", "features.md") + `]}}`}, // 1
		tapetest.Line{Dir: tape.DirSend, MS: 5, Msg: `{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"demo://resource/static/document/other.md"}}`},                   // 2
		tapetest.Line{Dir: tape.DirRecv, MS: 6, Msg: `{"jsonrpc":"2.0","id":2,"result":{"contents":[{"uri":"demo://resource/static/document/other.md","text":"x"}]}}`},                   // 3
		tapetest.Line{Dir: tape.DirSend, MS: 8, Msg: `{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"demo://resource/static/document/features.md"}}`},                // 4
		tapetest.Line{Dir: tape.DirRecv, MS: 9, Msg: `{"jsonrpc":"2.0","id":3,"result":{"contents":[{"uri":"demo://resource/static/document/features.md","text":"f"}]}}`},                // 5
		tapetest.Line{Dir: tape.DirSend, MS: 10, Msg: `{"jsonrpc":"2.0","id":4,"method":"resources/read","params":{"uri":"demo://resource/static/document/architecture.md"}}`},           // 6
		tapetest.Line{Dir: tape.DirRecv, MS: 11, Msg: `{"jsonrpc":"2.0","id":4,"result":{"contents":[{"uri":"demo://resource/static/document/architecture.md","text":"a"}]}}`},           // 7
		tapetest.Line{Dir: tape.DirSend, MS: 20, Msg: `{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"get-resource-links","arguments":{"count":1}}}`},                   // 8
		tapetest.Line{Dir: tape.DirRecv, MS: 21, Msg: `{"jsonrpc":"2.0","id":5,"result":{"content":[` + links("never.md") + `]}}`},                                                       // 9
		tapetest.Line{Dir: tape.DirRecv, MS: 22, Msg: `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}`},                                         // 10
		tapetest.Line{Dir: tape.DirSend, MS: 23, Msg: `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get-resource-links","arguments":{"count":1}}}`},                   // 11
	)
	clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
	m := New(x, Options{Now: clock.now, CopyDir: t.TempDir(), Name: "links"})
	m.noticeAfter = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	return m.resize(160, 45)
}

// L on a row whose answer holds resource_links goes to the next
// resources/read of one of them (from the answer or its request alike),
// passing a read of another uri; where none was read, or the row holds no
// link, the status line says so and the cursor stays.
func TestFollowResourceLink(t *testing.T) {
	m := linkModel(t)
	for _, from := range []int{0, 1} {
		m.selectSeq(from)
		got := send(t, m, keys("L")...)
		if c := got.timeline.Cursor(); c != 4 {
			t.Errorf("L on #%d: cursor on #%d, want #4 (the first read of a linked uri)", from, c)
		}
	}
	m.selectSeq(9)
	got := send(t, m, keys("L")...)
	if c := got.timeline.Cursor(); c != 9 || !strings.Contains(got.notice, "no resources/read of demo://resource/static/document/never.md was recorded after #9") {
		t.Errorf("L on a link never read: cursor #%d, notice %q", c, got.notice)
	}
	m.selectSeq(2)
	got = send(t, m, keys("L")...)
	if c := got.timeline.Cursor(); c != 2 || got.notice != "#2's answer holds no resource_link" {
		t.Errorf("L on a row without a link: cursor #%d, notice %q", c, got.notice)
	}
	if !strings.Contains(screen(got), "#2's answer holds no resource_link") {
		t.Errorf("the status line does not show the notice:\n%s", screen(got))
	}
	for seq, want := range map[int]string{
		10: "#10 is a notification (notifications/message): L follows a resource_link in an answer",
		11: "#11 was never answered on the tape: no resource_link to follow",
	} {
		m.selectSeq(seq)
		got = send(t, m, keys("L")...)
		if c := got.timeline.Cursor(); c != seq || got.notice != want {
			t.Errorf("L on #%d: cursor #%d, notice %q, want %q", seq, c, got.notice, want)
		}
	}
}
