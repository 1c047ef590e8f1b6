package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// shadowTape is a stdio recording with --shadow-cmd: two calls, each
// copied to the lane a~shadow; B answers the first otherwise (43, not 42)
// and the second alike, only slower.
func shadowTape(t *testing.T) string {
	t.Helper()
	ts := func(ms int) string {
		return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	}
	meta := func(dir, server string, ms int, of string) string {
		m := `"_meta":{"dir":"` + dir + `","server":"` + server + `","ts":"` + ts(ms) + `"`
		if strings.HasSuffix(server, tape.ShadowSuffix) {
			m += `,"shadow":true`
			if of != "" {
				m += `,"shadowOf":` + of
			}
		}
		return m + "}}"
	}
	call := func(id, tool string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}},`
	}
	answer := func(id, text string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"content":[{"type":"text","text":"` + text + `"}]},`
	}
	lines := []string{
		`{"jsonrpc":"2.0","method":"$transport/start","params":{"command":"a"},` + meta("lifecycle", "a", 0, ""),
		call("1", "answer") + meta("send", "a", 10, ""),
		call("1", "answer") + meta("send", "a~shadow", 11, "1"),
		answer("1", "the answer is 42") + meta("recv", "a", 20, ""),
		answer("1", "the answer is 43") + meta("recv", "a~shadow", 21, "1"),
		call("2", "echo") + meta("send", "a", 30, ""),
		call("2", "echo") + meta("send", "a~shadow", 31, "2"),
		answer("2", "hi") + meta("recv", "a", 40, ""),
		answer("2", "hi") + meta("recv", "a~shadow", 90, "2"),
	}
	path := filepath.Join(t.TempDir(), "shadow.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// open on a tape with a shadow lane marks, at 80×24, the rows of the call
// the shadow answered otherwise (the request and A's answer) "≠ shadow",
// and no other row: not the call B answered alike but slower, not the
// lane's own rows.
func TestShadowRows(t *testing.T) {
	path := shadowTape(t)
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	m := New(x, Options{Name: "shadow", Path: path, CopyDir: t.TempDir(), Now: func() time.Time { return time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC) }})
	m = m.resize(80, 24)
	m = send(t, m, m.Init()())
	got := screen(m)
	checkSize(t, got, 80, 24)
	var marked []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "≠ shadow") {
			f := strings.Fields(strings.TrimLeft(l, "›▶◆● "))
			marked = append(marked, f[0])
		}
	}
	if strings.Join(marked, ",") != "1,3" {
		t.Errorf("rows marked ≠ shadow: %q, want 1 and 3 (the answer call's request and A's answer); screen:\n%s", marked, got)
	}
}
