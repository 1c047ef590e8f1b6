package tui

import (
	"bytes"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// fakeLive records what the app asks of a live session; Next reports
// nothing (Kind 0), which send drops, so tests feed events by hand.
type fakeLive struct {
	mu        sync.Mutex
	delivered []int
	resolved  []debug.Resolution
	restarts  int
}

func (f *fakeLive) Restart() {
	f.mu.Lock()
	f.restarts++
	f.mu.Unlock()
}

func (f *fakeLive) Next() debug.Event { return debug.Event{} }
func (f *fakeLive) Deliver(_ int, seqs []int) {
	f.mu.Lock()
	f.delivered = append(f.delivered, seqs...)
	f.mu.Unlock()
}
func (f *fakeLive) Resolve(_ *debug.LiveDivergence, r debug.Resolution) {
	f.mu.Lock()
	f.resolved = append(f.resolved, r)
	f.mu.Unlock()
}
func (f *fakeLive) Close() error { return nil }

func (f *fakeLive) last() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.delivered) == 0 {
		return -1
	}
	return slices.Max(f.delivered)
}

// statusLine is the screen's status line, above the key hint bar.
func statusLine(m Model) string {
	lines := strings.Split(screen(m), "\n")
	return lines[len(lines)-2]
}

func liveEv(ev debug.Event) liveMsg { return liveMsg{ev} }

// TestLiveStatusStates walks a live client through its states and checks
// the status bar and the playback position at each: waiting, connected
// (the tape waits for the client's next message), held at a breakpoint,
// diverged (resolved with e), disconnected.
func TestLiveStatusStates(t *testing.T) {
	f := &fakeLive{}
	m, _ := newTestModel(t, Options{Live: f})
	m.player.SetSpeed(0, m.now())
	if st := statusLine(m); !strings.Contains(st, "client: waiting for a client") || !strings.Contains(st, "0/79") {
		t.Fatalf("before the client: status %q", st)
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: -1, Awaiting: 3}))
	if m.player.Position() != 0 {
		t.Fatalf("playback moved before the client connected: position %d", m.player.Position())
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Connected, Transport: "http"}))
	if st := statusLine(m); !strings.Contains(st, "client: connected (http) · tape waits for its #3 initialize") || !strings.Contains(st, "3/79") {
		t.Errorf("connected: status %q, want the tape waiting for #3 at 3/79", st)
	}
	if f.last() != 2 {
		t.Errorf("delivered up to #%d, want #2 (before the awaited #3)", f.last())
	}
	// The client sends #3: the tape plays up to its next awaited message.
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: 3, Awaiting: 11}))
	if m.player.Position() != 11 || f.last() != 10 {
		t.Errorf("after #3: position %d, delivered up to #%d; want 11 and #10", m.player.Position(), f.last())
	}
	// A breakpoint on tools/call holds the first call once the client sends it.
	if _, err := m.player.AddBreakpoint(debug.Breakpoint{Method: "tools/call"}); err != nil {
		t.Fatal(err)
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: 11, Awaiting: 19}))
	if st := statusLine(m); !strings.Contains(st, "client: held at breakpoint 1 before #15") {
		t.Errorf("at the breakpoint: status %q", st)
	}
	if f.last() != 14 {
		t.Errorf("delivered up to #%d while held before #15, want #14", f.last())
	}
	m = send(t, m, keys("space")...)
	if m.player.Position() != 17 || f.last() != 16 {
		t.Errorf("after continuing: position %d, delivered #%d; want 17 (the next tools/call stops it) and #16", m.player.Position(), f.last())
	}
	m.player.RemoveBreakpoint(1)
	m = send(t, m, keys("space")...)
	// A divergence stops playback and waits for a, e or s.
	m = send(t, m, liveEv(debug.Event{Kind: debug.Diverged, Divergence: &debug.LiveDivergence{Divergence: debug.Divergence{Expected: 19, Message: "replay mismatch", Raw: []byte(`{"id":2}`), Diff: []tape.DiffOp{{Op: "replace", Path: "/id"}}}, Recorded: []byte(`{"id":1}`)}}))
	st := statusLine(m)
	if !strings.Contains(st, "client: DIVERGED at #19") || m.player.Playing() || m.lower != viewDiff {
		t.Errorf("diverged: status %q, playing %v, lower pane %v", st, m.player.Playing(), m.lower)
	}
	if l := rowOf(screen(m), 19); !strings.Contains(l, "✗") {
		t.Errorf("row 19 is not marked ✗: %q", l)
	}
	golden(t, "live-diverged", screen(m))
	m = send(t, m, keys("!")...)
	if !slices.Equal(f.resolved, []debug.Resolution{debug.SendError}) || m.live.diverged() || !m.player.Playing() {
		t.Errorf("after !: resolved %v, still diverged %v, playing %v", f.resolved, m.live.diverged(), m.player.Playing())
	}
	if st := statusLine(m); !strings.Contains(st, "client: connected (http) · tape waits for its #19") {
		t.Errorf("after !: status %q", st)
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Disconnected}))
	if st := statusLine(m); !strings.Contains(st, "client: disconnected") {
		t.Errorf("disconnected: status %q", st)
	}
}

// rowOf returns the screen line of timeline row seq.
func rowOf(s string, seq int) string {
	for _, l := range strings.Split(s, "\n") {
		f := strings.Fields(strings.TrimLeft(l, "●◆✗▶› "))
		if len(f) > 0 && f[0] == strconv.Itoa(seq) {
			return l
		}
	}
	return ""
}

// TestLiveTimingFollowsClient: at 1×, what follows a client's message is
// timed from its arrival: the recorded progress notifications and the
// response of call #27 come 301 ms (their recorded span) after the client
// sent it, however long the client took to send it.
func TestLiveTimingFollowsClient(t *testing.T) {
	f := &fakeLive{}
	m, clock := newTestModel(t, Options{Live: f})
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: -1, Awaiting: 27}), liveEv(debug.Event{Kind: debug.Connected, Transport: "stdio"}))
	if m.player.Position() != 27 {
		t.Fatalf("position %d, want 27 (waiting for the client's call)", m.player.Position())
	}
	clock.t = clock.t.Add(time.Minute) // the client thinks for a minute
	start := clock.t
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: 27, Awaiting: 32}))
	want := m.x.Entry(31).Time.Sub(m.x.Entry(27).Time)
	if got := clock.t.Sub(start); got < want || got > want+time.Millisecond {
		t.Errorf("the response came %v after the client's call, want its recorded %v", got, want)
	}
	if m.player.Position() != 32 || f.last() != 31 {
		t.Errorf("position %d, delivered #%d; want 32 and #31", m.player.Position(), f.last())
	}
}

// TestFilterGrowMatchesFullFilter grows a tape a few lines at a time, as
// follow mode sees it, and checks that the incremental matches equal a
// filter over the whole tape after each growth, for filters whose answer
// for an old row changes when later rows arrive: a request answered, a
// request cancelled, a response recorded before its request.
func TestFilterGrowMatchesFullFilter(t *testing.T) {
	extra := `{"jsonrpc":"2.0","id":90,"result":{},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T14:42:33.600Z"}}
{"jsonrpc":"2.0","id":90,"method":"ping","_meta":{"dir":"send","server":"everything","ts":"2026-05-16T14:42:33.601Z"}}
{"jsonrpc":"2.0","id":91,"method":"tools/call","params":{"name":"echo","arguments":{}},"_meta":{"dir":"send","server":"everything","ts":"2026-05-16T14:42:33.602Z"}}
{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":91},"_meta":{"dir":"send","server":"everything","ts":"2026-05-16T14:42:33.603Z"}}
{"jsonrpc":"2.0","id":91,"result":{},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T14:42:33.604Z"}}
`
	// The demo tape ends with $transport/close records: put the extra lines
	// before them so they share the connection.
	lines := strings.SplitAfter(strings.TrimSuffix(string(assets.DemoTape), "\n"), "\n")
	all := strings.Join(lines[:len(lines)-2], "") + extra + strings.Join(lines[len(lines)-2:], "")
	data := []byte(all)
	var ends []int64
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, int64(i+1))
		}
	}
	for _, q := range []string{"status:pending", "status:orphan", "status:cancelled", "status:ok method:tools/call", "method:ping", "tool:echo", "status:error", "echo"} {
		f, err := ParseFilter(q)
		if err != nil {
			t.Fatal(err)
		}
		x := tape.NewIndex(bytes.NewReader(data))
		var matches, watch []int
		n := 0
		for k := range ends { // a line at a time: every intermediate state
			if err := x.Extend(ends[k], nil); err != nil {
				t.Fatal(err)
			}
			if n == 0 {
				matches, watch = matchAll(x, f, x.Len(), nil)
			} else {
				matches, watch = matchGrow(x, f, matches, n, x.Len(), watch, nil)
			}
			n = x.Len()
			full, _ := matchAll(x, f, n, nil)
			if !slices.Equal(matches, full) {
				t.Fatalf("%q after %d messages: incremental %v, full %v", q, n, matches, full)
			}
		}
		if n != len(ends) {
			t.Fatalf("grew to %d messages, want %d", n, len(ends))
		}
	}
}

// TestLiveDivergencesQueue: while one divergence waits for a choice, the
// next waits its turn and takes the screen after the first is resolved.
func TestLiveDivergencesQueue(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m.live.init(&fakeLive{})
	m = m.liveDiverged(&debug.LiveDivergence{Divergence: debug.Divergence{Expected: 3}})
	m = m.liveDiverged(&debug.LiveDivergence{Divergence: debug.Divergence{Expected: 5}})
	if st, _ := m.liveStatus(); st != "DIVERGED at #3: a/!/w/s (1 more waiting)" {
		t.Fatalf("status %q", st)
	}
	next, _, ok := m.divergenceKey(tea.KeyPressMsg{Code: '!', Text: "!"})
	if !ok {
		t.Fatal("! not taken as a resolution")
	}
	m = next.(Model)
	if st, _ := m.liveStatus(); st != "DIVERGED at #5: a/!/w/s" {
		t.Fatalf("after the first choice, status %q", st)
	}
}

// TestLiveDisconnectDropsDivergences: when the client goes away with
// divergences awaiting a choice, the session drops them, and so does the
// app: a/!/w/s no longer apply and the notice says what was dropped.
func TestLiveDisconnectDropsDivergences(t *testing.T) {
	m, _ := newTestModel(t, Options{})
	m.live.init(&fakeLive{})
	m = m.liveDiverged(&debug.LiveDivergence{Divergence: debug.Divergence{Expected: 3}})
	m = m.liveDiverged(&debug.LiveDivergence{Divergence: debug.Divergence{Expected: 5}})
	mm, _ := m.liveEvent(liveEv(debug.Event{Kind: debug.Disconnected, Dropped: 1, Abandoned: 2}))
	m = mm.(Model)
	if m.live.diverged() || len(m.live.waiting) != 0 {
		t.Fatalf("after the disconnect: pending %v, waiting %d, want none", m.live.pending, len(m.live.waiting))
	}
	if want := "the client disconnected; dropped 1 queued answer and 2 divergences awaiting a choice"; m.notice != want {
		t.Errorf("notice %q, want %q", m.notice, want)
	}
	if st, _ := m.liveStatus(); st != "disconnected" {
		t.Errorf("status %q, want disconnected", st)
	}
}

// A client run's end puts the tape back at its top with the breakpoints
// kept and the divergence marks cleared; the status line keeps the runs'
// history; r asks the session to restart; q with a client connected asks
// first.
func TestLiveRuns(t *testing.T) {
	f := &fakeLive{}
	m, _ := newTestModel(t, Options{Live: f})
	m.player.SetSpeed(0, m.now())
	m = send(t, m, keys(":break tools/call", "enter")...)
	m = send(t, m, liveEv(debug.Event{Kind: debug.Connected, Transport: "stdio", RunNo: 1}))
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: 3, Awaiting: 19}))
	m = send(t, m, liveEv(debug.Event{Kind: debug.Diverged, Divergence: &debug.LiveDivergence{Divergence: debug.Divergence{Expected: 19, Message: "replay mismatch"}}}))
	if !m.timeline.diverged[19] {
		t.Fatal("the divergence is not marked")
	}
	// q with a client connected asks; another key keeps the session.
	m = send(t, m, keys("a")...) // answer the divergence first
	m = send(t, m, keys("q")...)
	if m.quitting || !m.quitConfirm {
		t.Fatalf("q with a client connected quit at once (quitting %v)", m.quitting)
	}
	m = send(t, m, keys("j")...)
	if m.quitting || m.quitConfirm {
		t.Fatalf("another key after q did not keep the session")
	}
	m = send(t, m, keys("R")...)
	if f.restarts != 1 {
		t.Errorf("R restarted the session %d times, want 1", f.restarts)
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Disconnected}))
	m = send(t, m, liveEv(debug.Event{Kind: debug.RunEnded, Run: &debug.RunReport{Run: 1, Transport: "stdio", Ended: "restarted", Requests: 5, Matched: 4, Divergences: 1, Unused: 2}}))
	m = send(t, m, liveEv(debug.Event{Kind: debug.Progress, Reached: -1, Awaiting: 3}))
	if m.player.Position() == 0 || !m.timeline.diverged[19] {
		t.Errorf("after the run: position %d, marks %v; want the run's end still on show", m.player.Position(), m.timeline.diverged)
	}
	if bps := m.player.Breakpoints(); len(bps) != 1 {
		t.Errorf("breakpoints after the run: %v, want the one set", bps)
	}
	if st := statusLine(m); !strings.Contains(st, "run 1 · before: 0 ✓ 1 ✗") {
		t.Errorf("status after run 1: %q", st)
	}
	m = send(t, m, liveEv(debug.Event{Kind: debug.Connected, Transport: "http", RunNo: 2}))
	if m.player.Position() > 3 || len(m.timeline.diverged) != 0 {
		t.Errorf("run 2 connected: position %d, marks %v; want from the top up to #3 and no marks", m.player.Position(), m.timeline.diverged)
	}
	if st := statusLine(m); !strings.Contains(st, "run 2 · before: 0 ✓ 1 ✗") || !strings.Contains(st, "connected (http)") {
		t.Errorf("status in run 2: %q", st)
	}
	// A tape of several recorded HTTP sessions: the status says which one
	// serves the client's session (issue 24 item 4).
	m = send(t, m, liveEv(debug.Event{Kind: debug.Connected, Transport: "http", RunNo: 2, Session: 2, Sessions: 3}))
	if st := statusLine(m); !strings.Contains(st, "run 2 · recorded session 2/3 · before: 0 ✓ 1 ✗") {
		t.Errorf("status in run 2's second session: %q", st)
	}
	if !strings.Contains(m.notice, "run 2 · client session 2 → recorded session 2 of 3") {
		t.Errorf("notice of run 2's second session: %q", m.notice)
	}
	m = send(t, m, keys("q", "q")...)
	if !m.quitting {
		t.Errorf("q q did not quit")
	}
}

// TestLiveDivergencePastTheEnd: a divergence where the tape holds no
// request to expect (the client went past the tape's end) is shown as
// such, never as "#-1", and a or s there, with no recorded answer to send
// or request to skip, answer the client with the divergence error and say
// so, instead of asking the session for what it cannot do.
func TestLiveDivergencePastTheEnd(t *testing.T) {
	for _, k := range []string{"a", "s", "!"} {
		t.Run(k, func(t *testing.T) {
			f := &fakeLive{}
			m, _ := newTestModel(t, Options{Live: f})
			m = send(t, m, liveEv(debug.Event{Kind: debug.Connected, Transport: "stdio"}))
			d := &debug.LiveDivergence{Divergence: debug.Divergence{Expected: -1, Message: "replay mismatch: request tools/call came after the last recorded request", Raw: []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/call"}`)}, Where: "after the tape's end (its last request is #77 tools/call)"}
			m = send(t, m, liveEv(debug.Event{Kind: debug.Diverged, Divergence: d}))
			s := screen(m)
			if strings.Contains(s, "#-1") {
				t.Errorf("the screen shows #-1:\n%s", s)
			}
			for _, want := range []string{"DIVERGED after the tape's end", "expected (recorded): none", "(no recorded request: after the tape's end"} {
				if !strings.Contains(s, want) {
					t.Errorf("the screen lacks %q:\n%s", want, s)
				}
			}
			if !strings.Contains(m.notice, "nothing recorded to answer with or skip") {
				t.Errorf("notice %q, want it to say a and s cannot answer from the tape", m.notice)
			}
			m = send(t, m, keys(k)...)
			if !slices.Equal(f.resolved, []debug.Resolution{debug.SendError}) || m.live.diverged() {
				t.Fatalf("after %s: resolved %v, still diverged %v; want the divergence error sent", k, f.resolved, m.live.diverged())
			}
			want := map[string]string{
				"a": "nothing recorded to answer with after the tape's end (its last request is #77 tools/call): sent the divergence error instead",
				"s": "nothing recorded to skip after the tape's end (its last request is #77 tools/call): sent the divergence error instead",
				"!": "sent the divergence error",
			}[k]
			if m.notice != want {
				t.Errorf("after %s: notice %q, want %q", k, m.notice, want)
			}
		})
	}
	// A divergence reported without Where still never says #-1.
	m, _ := newTestModel(t, Options{})
	m.live.init(&fakeLive{})
	m = m.liveDiverged(&debug.LiveDivergence{Divergence: debug.Divergence{Expected: -1}})
	if st, _ := m.liveStatus(); strings.Contains(st, "#-1") || strings.Contains(m.notice, "#-1") {
		t.Errorf("status %q, notice %q: #-1 shown", st, m.notice)
	}
}
