package tui

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/tape"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fakeClock is a clock tests move by hand; ticks advance it instead of sleeping.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// demoIndex indexes the embedded demo tape.
func demoIndex(t testing.TB) *tape.Index {
	t.Helper()
	x := tape.NewIndex(bytes.NewReader(assets.DemoTape))
	if err := x.Extend(int64(len(assets.DemoTape)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// newTestModel returns the app on the demo tape at 120×40 with a fake clock
// whose ticks fire at once.
func newTestModel(t testing.TB, opts Options) (Model, *fakeClock) {
	t.Helper()
	clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
	opts.Now = clock.now
	if opts.CopyDir == "" {
		opts.CopyDir = t.TempDir()
	}
	if opts.Name == "" {
		opts.Name = "demo"
	}
	m := New(demoIndex(t), opts)
	m.tick = func(d time.Duration, fn func(time.Time) tea.Msg) tea.Cmd {
		return func() tea.Msg { clock.t = clock.t.Add(d); return fn(clock.t) }
	}
	m.noticeAfter = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil } // notices stay: tests read them
	m = m.resize(120, 40)
	return m, clock
}

// send runs msg through Update and then every command it returns, feeding
// their messages back in, as the Bubble Tea runtime would (up to a bound, so
// a ticking playback ends).
func send(t testing.TB, m Model, msgs ...tea.Msg) Model {
	t.Helper()
	queue := append([]tea.Msg(nil), msgs...)
	for steps := 0; len(queue) > 0; steps++ {
		if steps > 10000 {
			t.Fatalf("more than 10000 messages: a command loop?")
		}
		msg := queue[0]
		queue = queue[1:]
		if _, ok := msg.(tea.QuitMsg); ok {
			m.quitting = true
			continue
		}
		if lm, ok := msg.(liveMsg); ok && lm.ev.Kind == 0 {
			continue // a fakeLive with nothing to report: Next would block
		}
		if im, ok := msg.(interceptMsg); ok && im.ev.Kind == 0 {
			continue // a fakeIntercept, likewise
		}
		if b, ok := msg.(tea.BatchMsg); ok {
			for _, c := range b {
				if c != nil {
					if out := c(); out != nil {
						queue = append(queue, out)
					}
				}
			}
			continue
		}
		next, cmd := m.Update(msg)
		m = next.(Model)
		if cmd != nil {
			if out := cmd(); out != nil {
				queue = append(queue, out)
			}
		}
	}
	return m
}

// keys turns "l l j :goto 3<enter>"-like input into key messages: each
// space-separated word is a key name, except text after ":" or "/" which is
// typed until "<enter>".
func keys(s ...string) []tea.Msg {
	var out []tea.Msg
	for _, k := range s {
		switch k {
		case "enter":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEnter})
		case "esc":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyEscape})
		case "tab":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyTab})
		case "space":
			out = append(out, tea.KeyPressMsg{Code: tea.KeySpace, Text: " "})
		case "up":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyUp})
		case "down":
			out = append(out, tea.KeyPressMsg{Code: tea.KeyDown})
		default:
			for _, r := range k {
				out = append(out, tea.KeyPressMsg{Code: r, Text: string(r)})
			}
		}
	}
	return out
}

// screen is the frame without colours.
func screen(m Model) string { return ansi.Strip(m.View().Content) }

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./tui -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("%s: screen differs from %s (go test ./tui -update rewrites it)\ngot:\n%s\nwant:\n%s", name, path, got, want)
	}
}

// findSeq returns the first message matching pred.
func findSeq(t testing.TB, x *tape.Index, pred func(e tape.Entry, p tape.Pair) bool) int {
	t.Helper()
	for i := range x.Len() {
		if pred(x.Entry(i), x.Pair(i)) {
			return i
		}
	}
	t.Fatal("no such message on the demo tape")
	return -1
}

func TestViewGolden(t *testing.T) {
	m0, _ := newTestModel(t, Options{})
	x := m0.x
	slowCall := findSeq(t, x, func(e tape.Entry, p tape.Pair) bool {
		return e.Kind == tape.KindRequest && e.Server == "sdk" && p.Latency > 200*time.Millisecond
	})
	cases := []struct {
		name  string
		input []tea.Msg
		then  []tea.Msg // sent after input's commands have run
	}{
		{"start", nil, nil},
		{"stepped", keys("l", "l", "l", "l", "l", "j", "j"), nil},
		{"pairing", append(keys(":goto "+strconv.Itoa(slowCall)), keys("enter", "2")...), nil},
		{"stats", keys("3"), nil},
		{"help", keys("?"), nil},
		{"filter", append(keys("/status:error"), keys("enter")...), nil},
		{"only-matches", append(keys("/tool:echo"), keys("enter")...), keys("f")},
		{"breakpoints", append(keys(":break tool=echo"), keys("enter", ":goto 15", "enter")...), keys("b", "m", "B")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _ := newTestModel(t, Options{})
			m = send(t, m, c.input...)
			m = send(t, m, c.then...)
			got := screen(m)
			if n := strings.Count(got, "\n") + 1; n != 40 {
				t.Errorf("screen has %d lines, want 40", n)
			}
			for i, l := range strings.Split(got, "\n") {
				if w := ansi.StringWidth(l); w > 120 {
					t.Errorf("line %d is %d columns wide, want at most 120: %q", i, w, l)
				}
			}
			golden(t, c.name, got)
		})
	}
}

func TestStepMovesPositionAndCursor(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("l", "l", "l")...)
	if got := m.player.Position(); got != 3 {
		t.Errorf("position after 3 steps: got %d, want 3", got)
	}
	if got := m.timeline.Cursor(); got != 2 {
		t.Errorf("cursor after 3 steps: got %d, want 2 (the last delivered)", got)
	}
	m = send(t, m, keys("h")...)
	if got := m.player.Position(); got != 2 {
		t.Errorf("position after a step back: got %d, want 2", got)
	}
	if got := m.timeline.Cursor(); got != 2 {
		t.Errorf("cursor after a step back: got %d, want 2 (the message taken back)", got)
	}
	if !strings.Contains(screen(m), "2/79") {
		t.Errorf("status bar does not show 2/79:\n%s", screen(m))
	}
}

func TestPlayStopsAtBreakpoint(t *testing.T) {
	m, clock := newTestModel(t, Options{})
	start := clock.t
	m = send(t, m, keys(":break tool=echo")...)
	m = send(t, m, keys("enter")...)
	if n := len(m.player.Breakpoints()); n != 1 {
		t.Fatalf("breakpoints after :break tool=echo: got %d, want 1 (notice %q)", n, m.notice)
	}
	m = send(t, m, keys("space")...)
	want := findSeq(t, m.x, func(e tape.Entry, p tape.Pair) bool {
		return e.Kind == tape.KindRequest && e.Method == "tools/call" && callName(m.x, e.Seq, e.Method) == "echo"
	})
	if m.player.Playing() {
		t.Errorf("still playing after the breakpoint")
	}
	if got := m.player.Position(); got != want {
		t.Errorf("stopped at position %d, want %d (before the first echo call)", got, want)
	}
	if got := m.timeline.Cursor(); got != want {
		t.Errorf("cursor at %d, want %d", got, want)
	}
	if m.play.hits != 1 {
		t.Errorf("hits: got %d, want 1", m.play.hits)
	}
	// At 1× the fake clock moved by the recorded time up to the call.
	recorded := m.x.Entry(want).Time.Sub(startTime(m.x))
	if got := clock.t.Sub(start); got < recorded-time.Millisecond || got > recorded+maxTick {
		t.Errorf("played %v of clock time to reach a message recorded %v in", got, recorded)
	}
	if !strings.Contains(screen(m), "◆") {
		t.Errorf("the breakpoint stop is not marked on the timeline")
	}
	// Space again delivers the call and goes on to the next echo call.
	m = send(t, m, keys("space")...)
	if got := m.player.Position(); got <= want {
		t.Errorf("position after resuming: got %d, want past %d", got, want)
	}
}

func TestSpeedKeys(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("+", "+")...)
	if got := m.player.Speed(); got != 4 {
		t.Errorf("speed after ++ from 1×: got %g, want 4", got)
	}
	m = send(t, m, keys("-", "-", "-", "-", "-")...)
	if got := m.player.Speed(); got != 0.25 {
		t.Errorf("speed after 5 - : got %g, want the slowest, 0.25", got)
	}
	for range 12 {
		m = send(t, m, keys("+")...)
	}
	if got := m.player.Speed(); got != 0 {
		t.Errorf("speed after many +: got %g, want 0 (instant)", got)
	}
	m = send(t, m, keys("space")...)
	if got := m.player.Position(); got != m.x.Len() {
		t.Errorf("instant play delivered %d of %d", got, m.x.Len())
	}
}

func TestCommands(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, append(keys(":goto 12"), keys("enter")...)...)
	if got := m.player.Position(); got != 12 {
		t.Errorf(":goto 12: position %d, want 12", got)
	}
	m = send(t, m, append(keys(":goto 1.2s"), keys("enter")...)...)
	want := findSeq(t, m.x, func(e tape.Entry, _ tape.Pair) bool { return e.Time.Sub(startTime(m.x)) >= 1200*time.Millisecond })
	if got := m.player.Position(); got != want {
		t.Errorf(":goto 1.2s: position %d, want %d", got, want)
	}
	m = send(t, m, append(keys(":speed 8"), keys("enter")...)...)
	if got := m.player.Speed(); got != 8 {
		t.Errorf(":speed 8: speed %g", got)
	}
	m = send(t, m, append(keys(":break when params.arguments.ms > 300"), keys("enter")...)...)
	if bps := m.player.Breakpoints(); len(bps) != 1 || bps[0].Expr != "params.arguments.ms > 300" {
		t.Errorf(":break when: breakpoints %+v", bps)
	}
	m = send(t, m, append(keys(":frobnicate"), keys("enter")...)...)
	if !strings.Contains(m.notice, "frobnicate") || m.noticeOK {
		t.Errorf("unknown command: notice %q (ok %v), want an error naming it", m.notice, m.noticeOK)
	}
	m = send(t, m, append(keys(":q"), keys("enter")...)...)
	if !m.quitting {
		t.Errorf(":q did not quit")
	}
}

func TestFilterAndMatches(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("g")...) // from the top, not the first failure
	m = send(t, m, append(keys("/method:tools/call dir:send"), keys("enter")...)...)
	ms := m.timeline.Matches()
	if len(ms) == 0 {
		t.Fatalf("no matches for method:tools/call dir:send; notice %q", m.notice)
	}
	for _, s := range ms {
		if e := m.x.Entry(s); e.Method != "tools/call" || e.Dir != tape.DirSend {
			t.Errorf("match #%d is %s %s", s, e.Dir, e.Method)
		}
	}
	if got := m.timeline.Cursor(); got != ms[0] {
		t.Errorf("cursor after filtering: %d, want the first match %d", got, ms[0])
	}
	m = send(t, m, keys("n", "n")...)
	if got := m.timeline.Cursor(); got != ms[2] {
		t.Errorf("cursor after n n: %d, want %d", got, ms[2])
	}
	m = send(t, m, keys("N")...)
	if got := m.timeline.Cursor(); got != ms[1] {
		t.Errorf("cursor after N: %d, want %d", got, ms[1])
	}
	m = send(t, m, keys("x")...)
	if got, want := m.timeline.Cursor(), m.x.Pair(ms[1]).Partner; got != want {
		t.Errorf("x: cursor %d, want the partner %d", got, want)
	}
	m = send(t, m, keys("esc")...)
	if m.timeline.Matches() != nil {
		t.Errorf("esc did not clear the filter")
	}
	m = send(t, m, append(keys("/dir:sideways"), keys("enter")...)...)
	if m.noticeOK || !strings.Contains(m.notice, "sideways") {
		t.Errorf("bad filter: notice %q, want an error naming the value", m.notice)
	}
}

func TestFilterParse(t *testing.T) {
	f, err := ParseFilter(`method:tools/call,resources/read !tool:echo -dir:recv server:sdk status:error id:3 Hello -32601`)
	if err != nil {
		t.Fatal(err)
	}
	want := []term{
		{field: "method", values: []string{"tools/call", "resources/read"}},
		{not: true, field: "tool", values: []string{"echo"}},
		{not: true, field: "dir", values: []string{"recv"}, dirs: []tape.Dir{tape.DirRecv}},
		{field: "server", values: []string{"sdk"}},
		{field: "status", values: []string{"error"}},
		{field: "id", values: []string{"3"}},
		{text: []byte("hello")},
		{text: []byte("-32601")}, // an error code, not a negation
	}
	if !reflect.DeepEqual(f.terms, want) {
		t.Errorf("got %+v\nwant %+v", f.terms, want)
	}
	for _, bad := range []string{"dir:up", "status:weird", "kind:thing", "method:,"} {
		if _, err := ParseFilter(bad); err == nil {
			t.Errorf("ParseFilter(%q): no error", bad)
		}
	}
}

// The filter grammar on the demo tape: negation, OR within a field, kind
// and status, each against a count made by hand from the index.
func TestFilterGrammar(t *testing.T) {
	x := demoIndex(t)
	count := func(pred func(e tape.Entry, p tape.Pair) bool) int {
		n := 0
		for i := range x.Len() {
			if pred(x.Entry(i), x.Pair(i)) {
				n++
			}
		}
		return n
	}
	method := func(e tape.Entry, p tape.Pair) string {
		if e.Kind == tape.KindResponse {
			return p.Method
		}
		return e.Method
	}
	for _, c := range []struct {
		q    string
		want int
	}{
		{"!dir:lifecycle", count(func(e tape.Entry, _ tape.Pair) bool { return e.Dir != tape.DirLifecycle })},
		{"-kind:notification", count(func(e tape.Entry, _ tape.Pair) bool { return e.Kind != tape.KindNotification })},
		{"kind:request,notification", count(func(e tape.Entry, _ tape.Pair) bool {
			return e.Kind == tape.KindRequest || e.Kind == tape.KindNotification
		})},
		{"method:tools/call,resources/read", count(func(e tape.Entry, p tape.Pair) bool {
			return method(e, p) == "tools/call" || method(e, p) == "resources/read"
		})},
		{"status:tool-error", count(func(e tape.Entry, _ tape.Pair) bool { return e.Failed() == tape.ToolError })},
		{"status:rpc-error,tool-error", count(func(e tape.Entry, _ tape.Pair) bool { return e.Failed() != tape.NoFailure })},
		{"kind:response !status:ok", count(func(e tape.Entry, p tape.Pair) bool {
			return e.Kind == tape.KindResponse && (e.Failed() != tape.NoFailure || p.Orphan || e.Negotiation)
		})},
		{"-32601", 1},
		// The -32601 is the rejected server/discover probe: negotiation,
		// no rpc-error.
		{"!-32601 kind:response status:rpc-error", count(func(e tape.Entry, _ tape.Pair) bool { return e.Failed() == tape.RPCError })},
		{"status:negotiation", 2},
		{"status:negotiation kind:response -32601", 1},
	} {
		f, err := ParseFilter(c.q)
		if err != nil {
			t.Errorf("%q: %v", c.q, err)
			continue
		}
		got, _ := matchAll(x, f, x.Len(), nil)
		if len(got) != c.want || c.want == 0 {
			t.Errorf("%q matches %d messages, want %d (and more than none)", c.q, len(got), c.want)
		}
	}
}

func TestMouse(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("g")...) // the top of the tape on screen
	// Row 5 of the timeline is screen line 1 (title) + 1 (header) + 5.
	m = send(t, m, tea.MouseClickMsg{X: 10, Y: 7, Button: tea.MouseLeft})
	if got := m.timeline.Cursor(); got != 5 {
		t.Errorf("click on the 6th row: cursor %d, want 5", got)
	}
	m = send(t, m, tea.MouseWheelMsg{X: 10, Y: 7, Button: tea.MouseWheelDown})
	if got := m.timeline.Cursor(); got != 8 {
		t.Errorf("wheel down: cursor %d, want 8", got)
	}
}

func TestCopyAndPartner(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m = send(t, m, keys("g", "j", "y")...)
	if !strings.Contains(m.notice, "copied #1") {
		t.Errorf("y: notice %q", m.notice)
	}
	next, cmd := m.Update(keys("y")[0])
	m = next.(Model)
	if cmd == nil {
		t.Fatal("y returned no command")
	}
	if got := reflect.TypeOf(cmd()).String(); !strings.Contains(got, "Clipboard") {
		t.Errorf("y's command gives %s, want a clipboard message", got)
	}
}

func TestThemeFromBackground(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	if !m.styles.Dark {
		t.Fatal("the default theme is not dark")
	}
	m = send(t, m, tea.BackgroundColorMsg{Color: lightColor{}})
	if m.styles.Dark || m.detail.styles.Dark || m.timeline.styles.Dark {
		t.Errorf("a light background did not switch every pane to the light theme")
	}
}

type lightColor struct{}

func (lightColor) RGBA() (r, g, b, a uint32) { return 0xffff, 0xffff, 0xffff, 0xffff }

func TestCommandParse(t *testing.T) {
	for _, c := range []struct {
		in   string
		want command
		err  bool
	}{
		{"goto 120", command{name: "goto", seq: 120}, false},
		{"goto 12.5s", command{name: "goto", at: 12500 * time.Millisecond, atSet: true}, false},
		{"break tools/call", command{name: "break", arg: "tools/call"}, false},
		{"break when params.arguments.limit > 5", command{name: "break", arg: "when params.arguments.limit > 5"}, false},
		{"speed 4", command{name: "speed", speed: 4}, false},
		{"speed instant", command{name: "speed"}, false},
		{"q", command{name: "quit"}, false},
		{"goto", command{}, true},
		{"goto soon", command{}, true},
		{"speed fast", command{}, true},
		{"", command{}, true},
	} {
		got, err := parseCommand(c.in)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("parseCommand(%q) = %+v, %v; want %+v, error %v", c.in, got, err, c.want, c.err)
		}
	}
}

func TestPrettyJSONFolds(t *testing.T) {
	long := strings.Repeat("x", 1000)
	raw := []byte(`{"b":1,"a":"` + long + `","list":[` + strings.TrimSuffix(strings.Repeat("1,", 40), ",") + `],"n":1.50}`)
	folded := prettyJSON(raw, true)
	if !strings.Contains(folded, "…(+840 B)") || !strings.Contains(folded, "… 15 more items") {
		t.Errorf("folded output lacks its markers:\n%s", folded)
	}
	if strings.Index(folded, `"b"`) > strings.Index(folded, `"a"`) {
		t.Errorf("key order not kept:\n%s", folded)
	}
	if !strings.Contains(folded, "1.50") {
		t.Errorf("number literal rewritten:\n%s", folded)
	}
	if full := prettyJSON(raw, false); !strings.Contains(full, long) {
		t.Errorf("unfolded output cut the string")
	}
	if got := prettyJSON([]byte("not json"), true); got != "not json" {
		t.Errorf("non-JSON: got %q", got)
	}
}

// TestPrettyJSONDeepNesting: a message nested 100 000 deep is shown as
// recorded, at once, instead of being indented level by level.
func TestPrettyJSONDeepNesting(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}`
	if got := prettyJSON([]byte(deep), true); got != deep {
		t.Errorf("deep message: got %d bytes, want the %d recorded", len(got), len(deep))
	}
	if got, _ := prettyJSONMarked([]byte(deep), func([]string) bool { return true }); got != deep {
		t.Errorf("deep message, marked: got %d bytes", len(got))
	}
	if got := prettyJSON([]byte(`{"s":"[[[[","a":[1]}`), false); !strings.Contains(got, "\n") {
		t.Errorf("brackets inside a string counted as nesting: %q", got)
	}
}

// TestDetailWrapsOnce: the detail pane wraps a message's lines when it is
// shown, not on every frame (the viewport's soft wrap is quadratic in the
// length of a line, and a deeply nested message is one 200 KB line).
func TestDetailWrapsOnce(t *testing.T) {
	line := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `,"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}` + "\n"
	x := tape.NewIndex(bytes.NewReader([]byte(line)))
	if err := x.Extend(int64(len(line)), nil); err != nil {
		t.Fatal(err)
	}
	d := NewDetail(NewStyles(true))
	d.SetSize(80, 20)
	d.Show(x, 0)
	if d.vp.SoftWrap {
		t.Fatalf("the viewport soft-wraps every frame")
	}
	content := d.vp.GetContent()
	for i, l := range strings.Split(content, "\n") {
		if w := ansi.StringWidth(l); w > 80 {
			t.Fatalf("content line %d is %d columns wide, want at most 80", i, w)
		}
	}
	if n := strings.Count(content, "\n"); n < 200_000/80 {
		t.Errorf("%d content lines for a 200 KB message at 80 columns", n)
	}
}
