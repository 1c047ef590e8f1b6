package debug

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// ctlTape: six messages at 0, 100, 300, 300, 1300, 1400 ms.
func ctlTape(t *testing.T) *Player {
	t.Helper()
	x := buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		line{recv, 100, `{"jsonrpc":"2.0","id":1,"result":{}}`},
		line{send, 300, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"limit":3}}}`},
		line{recv, 300, `{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"no"}}`},
		line{send, 1300, `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"add","arguments":{"limit":9}}}`},
		line{recv, 1400, `{"jsonrpc":"2.0","id":3,"result":{"isError":true,"content":[]}}`},
	)
	return NewPlayer(x)
}

func ms(n int) time.Time { return t0.Add(time.Duration(n) * time.Millisecond) }

func TestPlayerInstantPlaysAll(t *testing.T) {
	c := ctlTape(t)
	if got, _ := c.Advance(ms(0)); got != nil {
		t.Fatalf("paused player delivered %v, want nothing", got)
	}
	c.Play(ms(0))
	got, hit := c.Advance(ms(0))
	if want := []int{0, 1, 2, 3, 4, 5}; !slices.Equal(got, want) || hit != nil {
		t.Fatalf("instant Advance delivered %v hit %v, want %v and no hit", got, hit, want)
	}
	if _, ok := c.NextDue(); ok {
		t.Fatalf("NextDue at the end: ok, want not ok")
	}
}

func TestPlayerSpeed(t *testing.T) {
	tests := []struct {
		speed float64
		at    []int // wall ms after Play when Advance is called
		want  [][]int
	}{
		{1, []int{0, 99, 100, 299, 300, 1399, 1400}, [][]int{{0}, nil, {1}, nil, {2, 3}, {4}, {5}}},
		{2, []int{0, 50, 150, 650, 700}, [][]int{{0}, {1}, {2, 3}, {4}, {5}}},
		{0.5, []int{0, 199, 200, 600}, [][]int{{0}, nil, {1}, {2, 3}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.speed), func(t *testing.T) {
			c := ctlTape(t)
			c.SetSpeed(tt.speed, ms(0))
			c.Play(ms(0))
			for i, at := range tt.at {
				got, _ := c.Advance(ms(at))
				if !slices.Equal(got, tt.want[i]) {
					t.Errorf("speed %v: Advance at %dms delivered %v, want %v", tt.speed, at, got, tt.want[i])
				}
			}
		})
	}
}

func TestPlayerNextDueAndPause(t *testing.T) {
	c := ctlTape(t)
	c.SetSpeed(1, ms(0))
	c.Play(ms(1000))
	c.Advance(ms(1000)) // delivers 0
	if due, ok := c.NextDue(); !ok || !due.Equal(ms(1100)) {
		t.Fatalf("NextDue = %v %v, want %v", due, ok, ms(1100))
	}
	c.Pause(ms(1060)) // 60 of the 100 ms gap played
	if got, _ := c.Advance(ms(5000)); got != nil {
		t.Fatalf("paused Advance delivered %v", got)
	}
	c.Play(ms(2000))
	if due, _ := c.NextDue(); !due.Equal(ms(2040)) {
		t.Fatalf("after resume NextDue = %v, want the 40 ms left: %v", due, ms(2040))
	}
	// Doubling the speed halves what is left of the gap.
	c.SetSpeed(2, ms(2000))
	if due, _ := c.NextDue(); !due.Equal(ms(2020)) {
		t.Fatalf("after SetSpeed(2) NextDue = %v, want %v", due, ms(2020))
	}
}

func TestPlayerStepSeek(t *testing.T) {
	c := ctlTape(t)
	for want := 0; want < 6; want++ {
		if seq, ok := c.Step(); !ok || seq != want {
			t.Fatalf("Step = %d %v, want %d true", seq, ok, want)
		}
	}
	if _, ok := c.Step(); ok {
		t.Fatalf("Step at the end: ok")
	}
	if seq, ok := c.StepBack(); !ok || seq != 5 || c.Position() != 5 {
		t.Fatalf("StepBack = %d %v pos %d, want 5 true pos 5", seq, ok, c.Position())
	}
	c.Seek(2)
	if c.Position() != 2 {
		t.Fatalf("Seek(2): position %d", c.Position())
	}
	c.Seek(99)
	if c.Position() != 6 {
		t.Fatalf("Seek(99): position %d, want clamped 6", c.Position())
	}
	for _, tt := range []struct {
		off  time.Duration
		want int
	}{{0, 0}, {100 * time.Millisecond, 1}, {101 * time.Millisecond, 2}, {time.Second, 4}, {time.Hour, 6}} {
		c.SeekTime(tt.off)
		if c.Position() != tt.want {
			t.Errorf("SeekTime(%v): position %d, want %d", tt.off, c.Position(), tt.want)
		}
	}
	// After a seek while playing at speed 1, the next message is due at
	// once, then the recorded gaps resume.
	c.SetSpeed(1, ms(0))
	c.Seek(2)
	c.Play(ms(0))
	if got, _ := c.Advance(ms(0)); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("after Seek(2), Advance delivered %v, want [2 3]", got)
	}
	if due, _ := c.NextDue(); !due.Equal(ms(1000)) {
		t.Fatalf("NextDue = %v, want %v", due, ms(1000))
	}
}

func TestPlayerBreakpoints(t *testing.T) {
	tests := []struct {
		spec string
		want int // the seq it stops before, or -1
	}{
		{"tools/call", 2},
		{"method=initialize", 0},
		{"tool=add", 4},
		{"tool=missing", -1},
		{"error", 3},
		{"when params.arguments.limit > 5", 4},
		{"when method == 'tools/call' && kind == 'response' && result.isError == true", 5},
		{"when params.nothing.here == 1", -1},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			c := ctlTape(t)
			b, err := ParseBreakpoint(tt.spec)
			if err != nil {
				t.Fatalf("ParseBreakpoint(%q): %v", tt.spec, err)
			}
			id, err := c.AddBreakpoint(b)
			if err != nil {
				t.Fatalf("AddBreakpoint(%q): %v", tt.spec, err)
			}
			c.Play(ms(0))
			got, hit := c.Advance(ms(0))
			if tt.want < 0 {
				if hit != nil || len(got) != 6 {
					t.Errorf("%q: delivered %v hit %+v, want all and no hit", tt.spec, got, hit)
				}
				return
			}
			if hit == nil || hit.Seq != tt.want || hit.Breakpoint.ID != id || len(got) != tt.want || c.Playing() {
				t.Errorf("%q: delivered %v hit %+v playing %v, want a stop before %d", tt.spec, got, hit, c.Playing(), tt.want)
				return
			}
			// Resuming delivers the message stopped at without stopping again.
			c.Play(ms(1))
			got, hit = c.Advance(ms(1))
			if len(got) == 0 || got[0] != tt.want {
				t.Errorf("%q: after resume delivered %v hit %+v, want %d first", tt.spec, got, hit, tt.want)
			}
		})
	}
}

func TestBreakpointManagement(t *testing.T) {
	c := ctlTape(t)
	if !c.ToggleMethod("tools/call") {
		t.Fatalf("ToggleMethod added nothing")
	}
	if bs := c.Breakpoints(); len(bs) != 1 || bs[0].Method != "tools/call" {
		t.Fatalf("Breakpoints = %+v", bs)
	}
	if c.ToggleMethod("tools/call") || len(c.Breakpoints()) != 0 {
		t.Fatalf("second ToggleMethod did not remove: %+v", c.Breakpoints())
	}
	id, _ := c.AddBreakpoint(Breakpoint{OnError: true})
	c.SetBreakpointEnabled(id, false)
	c.Play(ms(0))
	if got, hit := c.Advance(ms(0)); hit != nil || len(got) != 6 {
		t.Fatalf("disabled breakpoint stopped playback: %v %+v", got, hit)
	}
	c.RemoveBreakpoint(id)
	if len(c.Breakpoints()) != 0 {
		t.Fatalf("RemoveBreakpoint left %+v", c.Breakpoints())
	}
	if _, err := c.AddBreakpoint(Breakpoint{}); err == nil {
		t.Fatalf("AddBreakpoint of an empty breakpoint: no error")
	}
	for _, bad := range []string{"", "tool=", "when", "when params.(", "two words"} {
		if _, err := ParseBreakpoint(bad); err == nil {
			t.Errorf("ParseBreakpoint(%q): no error", bad)
		}
	}
}

// TestSeekTimeMatchesLinearScan compares SeekTime's search with a scan of
// every message on a tape of several blocks whose timestamps mostly rise but
// sometimes repeat or step back, at every millisecond offset of the tape.
func TestSeekTimeMatchesLinearScan(t *testing.T) {
	const n = 5*seekBlock + 37
	ts := make([]int, n)
	var lines []line
	cur := 0
	for i := range n {
		switch {
		case i%97 == 5:
			cur -= 40 // a step back
		case i%13 == 0:
			// same time as the previous message
		default:
			cur += 3
		}
		ts[i] = cur + 100
		lines = append(lines, line{send, ts[i], fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/x","params":{"i":%d}}`, i)})
	}
	c := NewPlayer(buildIndex(t, lines...))
	linear := func(off int) int {
		for i, v := range ts {
			if v-ts[0] >= off {
				return i
			}
		}
		return n
	}
	for off := -5; off <= ts[n-1]-ts[0]+5; off++ {
		c.SeekTime(time.Duration(off) * time.Millisecond)
		if got, want := c.Position(), linear(off); got != want {
			t.Fatalf("SeekTime(%dms): position %d, want %d (the first message at or after it)", off, got, want)
		}
	}
	if len(c.runMax) != n/seekBlock {
		t.Errorf("running maxima: %d blocks, want %d", len(c.runMax), n/seekBlock)
	}
}

// BenchmarkSeekTime1M seeks to random offsets of a 1M-message tape with the
// block search, and reports the ratio to a linear scan measured in the same
// run.
func BenchmarkSeekTime1M(b *testing.B) {
	path := filepath.Join(b.TempDir(), "seek.jsonl")
	writeSyntheticTape(b, path, 1_000_000, 8, true)
	x, err := tape.OpenIndex(path)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	c := NewPlayer(x)
	span := x.Entry(x.Len() - 1).Time.Sub(x.Entry(0).Time)
	offsets := make([]time.Duration, 64)
	for i := range offsets {
		offsets[i] = time.Duration(rand.Int64N(int64(span)))
	}
	c.SeekTime(span) // build the maxima once, as the first seek to the end does
	linear := func(off time.Duration) int {
		target := x.Entry(0).Time.Add(off)
		for i := range x.Len() {
			if !x.Entry(i).Time.Before(target) {
				return i
			}
		}
		return x.Len()
	}
	start := time.Now()
	for _, off := range offsets[:8] {
		linear(off)
	}
	perLinear := time.Since(start) / 8
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.SeekTime(offsets[i%len(offsets)])
	}
	perSeek := b.Elapsed() / time.Duration(max(b.N, 1))
	b.ReportMetric(float64(perLinear)/float64(max(perSeek, 1)), "x-faster-than-linear")
	b.ReportMetric(float64(perLinear.Microseconds()), "linear-µs")
}

// TestPlayerLimitAndAnchor: with a limit, playback stops before the
// message a live client has not sent yet; when it comes, Anchor times the
// rest from its arrival.
func TestPlayerLimitAndAnchor(t *testing.T) {
	c := ctlTape(t)
	c.SetSpeed(1, ms(0))
	c.SetLimit(2) // the tape waits for the client's tools/call (#2)
	c.Play(ms(0))
	if got, _ := c.Advance(ms(5000)); !slices.Equal(got, []int{0, 1}) {
		t.Fatalf("Advance with limit 2 delivered %v, want [0 1]", got)
	}
	if _, ok := c.NextDue(); ok {
		t.Fatalf("NextDue at the limit: ok, want nothing due")
	}
	if _, ok := c.Step(); ok {
		t.Fatalf("Step at the limit: ok")
	}
	// The client sends #2 at 9 s: #2 and #3 (recorded at the same time) are
	// due at once, #4 a recorded second later, not at once.
	c.SetLimit(4)
	c.Anchor(2, ms(9000))
	if got, _ := c.Advance(ms(9000)); !slices.Equal(got, []int{2, 3}) {
		t.Fatalf("after Anchor(2) delivered %v, want [2 3]", got)
	}
	c.SetLimit(-1)
	c.Anchor(4, ms(9500)) // the client was faster than recorded
	if due, _ := c.NextDue(); !due.Equal(ms(9500)) {
		t.Fatalf("NextDue after Anchor(4) = %v, want %v", due, ms(9500))
	}
	if got, _ := c.Advance(ms(9500)); !slices.Equal(got, []int{4}) {
		t.Fatalf("delivered %v, want [4]", got)
	}
	if due, _ := c.NextDue(); !due.Equal(ms(9600)) {
		t.Fatalf("the response is due %v, want 100 ms (its recorded latency) after the request: %v", due, ms(9600))
	}
	// A limit below the position moves the position back to it.
	c.SetLimit(1)
	if c.Position() != 1 {
		t.Fatalf("SetLimit(1) at position 5: position %d, want 1", c.Position())
	}
	if n, ok := c.Limit(); !ok || n != 1 {
		t.Fatalf("Limit() = %d %v", n, ok)
	}
}

// A player made while its index is still empty (the debugger indexes in
// the background) plays at once when the index has grown: its clock was
// anchored at tape time 0, so the first message fell due decades later and
// space showed "playing 0/79" forever.
func TestPlayerMadeBeforeIndexing(t *testing.T) {
	_, data := buildIndexBytes(t, "s",
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`},
		line{recv, 100, `{"jsonrpc":"2.0","id":1,"result":{}}`},
	)
	x := tape.NewIndex(bytes.NewReader(data))
	c := NewPlayer(x)
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	c.SetSpeed(1, ms(0))
	c.Play(ms(0))
	if got, _ := c.Advance(ms(0)); !slices.Equal(got, []int{0}) {
		t.Fatalf("Advance at once delivered %v, want [0]", got)
	}
	if got, _ := c.Advance(ms(100)); !slices.Equal(got, []int{1}) {
		t.Fatalf("Advance after 100ms delivered %v, want [1]", got)
	}
}

// SetMaxGap cuts a long recorded pause: the 1000 ms gap before message 4
// plays as 200 ms, and the gaps after it keep their length.
func TestPlayerMaxGap(t *testing.T) {
	c := ctlTape(t) // 0, 100, 300, 300, 1300, 1400 ms
	c.SetSpeed(1, ms(0))
	c.SetMaxGap(200 * time.Millisecond)
	c.Play(ms(0))
	for _, step := range []struct {
		at   int
		want []int
	}{{0, []int{0}}, {100, []int{1}}, {300, []int{2, 3}}, {499, nil}, {500, []int{4}}, {599, nil}, {600, []int{5}}} {
		got, _ := c.Advance(ms(step.at))
		if !slices.Equal(got, step.want) {
			t.Fatalf("Advance at %dms delivered %v, want %v", step.at, got, step.want)
		}
	}
}
