package debug

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Player is a cursor over a tape that plays it in time: the timing half
// of a replay, used by the debugger to step, seek, pause on breakpoints and
// play at a chosen speed. It is synchronous and deterministic: it never reads
// the clock or starts goroutines; every call that depends on time takes now,
// and the caller arranges to call Advance when NextDue says.
//
// Positions count every message of the tape, lifecycle records included: the
// next message to deliver is Position(), and Position() == Len() at the end.
type Player struct {
	x       *tape.Index
	pos     int
	playing bool
	speed   float64

	// While playing, tape time T falls due at wall time
	// anchorWall + (T - anchorTape) / speed.
	anchored   bool // false after a jump: the next Advance anchors at its now
	anchorWall time.Time
	anchorTape int64 // unix nanoseconds of tape time
	tapeNow    int64 // tape time reached when not playing

	bps      []bp
	nextID   int
	resumeAt int // the position a breakpoint stopped before: passes once on Play

	limit int // nothing at or after it is delivered; -1 for no limit

	maxGap  int64 // recorded gaps longer than this (ns of tape time) are cut to it; 0 for none
	gapDone int   // the position whose gap was cut, so it is cut once

	// SeekTime's search: runMax[b] is the largest timestamp (unix ns) of
	// messages 0 to (b+1)*seekBlock-1, built as far as seeks reach.
	runMax    []int64
	firstTime int64 // the tape's first timestamp, once found
}

// seekBlock is how many messages share one running maximum in SeekTime's
// search: a seek scans at most one block.
const seekBlock = 256

// NewPlayer returns a paused player at the start of the tape, at
// speed 0 (instant).
func NewPlayer(x *tape.Index) *Player {
	c := &Player{x: x, nextID: 1, resumeAt: -1, limit: -1}
	c.tapeNow = c.timeBefore(0)
	return c
}

// SetMaxGap cuts recorded gaps between messages longer than d to d (in
// tape time, before the speed divides it): a pause of minutes in a
// recording plays as d. 0 keeps every gap.
func (c *Player) SetMaxGap(d time.Duration) { c.maxGap = int64(max(d, 0)) }

// cutGap shortens the wait for the message at the position when its gap
// after the last delivered message is over the maximum, once.
func (c *Player) cutGap() {
	if c.maxGap <= 0 || c.gapDone == c.pos || c.pos >= c.x.Len() || !c.anchored {
		return
	}
	t := c.x.Entry(c.pos).Time
	if t.IsZero() {
		return
	}
	prev := max(c.timeBefore(c.pos), c.anchorTape)
	if excess := t.UnixNano() - prev - c.maxGap; excess > 0 {
		c.anchorTape += excess
		c.gapDone = c.pos
	}
}

// Len returns the number of messages on the tape.
func (c *Player) Len() int { return c.x.Len() }

// Position returns how many messages were delivered: the next one is Position().
func (c *Player) Position() int { return c.pos }

// Playing reports whether the player is playing (not paused).
func (c *Player) Playing() bool { return c.playing }

// Speed returns the playback speed: recorded gaps are divided by it; 0 means instant.
func (c *Player) Speed() float64 { return c.speed }

// SetSpeed changes the speed from now on; x <= 0 means instant. Time already
// played is kept: the next message stays due after the rest of its gap.
func (c *Player) SetSpeed(x float64, now time.Time) {
	if x < 0 {
		x = 0
	}
	if c.playing && c.anchored {
		c.tapeNow = c.tapeAt(now)
		c.anchorWall, c.anchorTape = now, c.tapeNow
	}
	c.speed = x
}

// Play starts or resumes playing at now.
func (c *Player) Play(now time.Time) {
	if c.playing {
		return
	}
	c.playing = true
	c.anchored = true
	c.anchorWall, c.anchorTape = now, c.reached()
}

// reached returns the tape time reached: tapeNow, or when it is not known
// yet (the player was made while its index was still empty) the time
// before the position.
func (c *Player) reached() int64 {
	if c.tapeNow == 0 {
		c.tapeNow = c.timeBefore(c.pos)
	}
	return c.tapeNow
}

// Pause stops playing at now; Play resumes where it stopped, with the rest
// of the current gap still to wait.
func (c *Player) Pause(now time.Time) {
	if !c.playing {
		return
	}
	if c.anchored {
		c.tapeNow = c.tapeAt(now)
	}
	c.playing = false
}

// Step delivers the next message, ignoring breakpoints and time, and
// returns its sequence number; ok is false at the end of the tape or at the
// limit (SetLimit).
func (c *Player) Step() (seq int, ok bool) {
	if c.pos >= c.end() {
		return c.pos, false
	}
	seq = c.pos
	c.jump(c.pos+1, true)
	return seq, true
}

// StepBack takes back the last delivered message and returns its sequence
// number (now the next one again); ok is false at the start of the tape.
func (c *Player) StepBack() (seq int, ok bool) {
	if c.pos == 0 {
		return 0, false
	}
	c.jump(c.pos-1, false)
	return c.pos, true
}

// Seek positions the player so that seq is the next message (clamped to
// the tape). Playing continues from there without waiting for the gap.
func (c *Player) Seek(seq int) { c.jump(seq, false) }

// SeekTime seeks to the first message recorded at or after offset from the
// tape's first timestamp (the end of the tape if none is).
//
// Timestamps are mostly in order but not always (a response recorded before
// its request, a clock step), so the search runs over their running maximum,
// which is in order: a binary search finds the first block of seekBlock
// messages whose running maximum reaches the target, the first message at or
// after it is in that block, and a scan of the block finds it. The maxima are
// built once, as far as seeks reach, and extended as the tape grows.
func (c *Player) SeekTime(offset time.Duration) {
	c.jump(c.firstAtOrAfter(c.tapeStart()+int64(offset)), false)
}

// tapeStart returns the tape's first timestamp in unix nanoseconds, or 0.
func (c *Player) tapeStart() int64 {
	if c.firstTime != 0 {
		return c.firstTime
	}
	for i := range c.x.Len() {
		if t := c.x.Entry(i).Time; !t.IsZero() {
			c.firstTime = t.UnixNano()
			break
		}
	}
	return c.firstTime
}

// firstAtOrAfter returns the first message whose timestamp is at or after
// target (unix nanoseconds), or Len() when there is none.
func (c *Player) firstAtOrAfter(target int64) int {
	n := c.x.Len()
	for len(c.runMax) < n/seekBlock && (len(c.runMax) == 0 || c.runMax[len(c.runMax)-1] < target) {
		b := len(c.runMax)
		m := int64(math.MinInt64)
		if b > 0 {
			m = c.runMax[b-1]
		}
		for i := b * seekBlock; i < (b+1)*seekBlock; i++ {
			if t := c.x.Entry(i).Time; !t.IsZero() {
				m = max(m, t.UnixNano())
			}
		}
		c.runMax = append(c.runMax, m)
	}
	// Blocks before b hold no timestamp at or after target; when b is past
	// the built blocks, only the tail after them is left to scan.
	b := sort.Search(len(c.runMax), func(i int) bool { return c.runMax[i] >= target })
	for i := b * seekBlock; i < n; i++ {
		if t := c.x.Entry(i).Time; !t.IsZero() && t.UnixNano() >= target {
			return i
		}
	}
	return n
}

// SetLimit holds delivery before message n: Advance, Step and Seek never
// go past it, and NextDue reports nothing due while the position is at it.
// The debugger's live mode sets it to the recorded client message the tape
// waits for, so playback follows the live client. A negative n removes the
// limit.
func (c *Player) SetLimit(n int) {
	c.limit = n
	if n >= 0 && c.pos > n {
		c.jump(n, false)
	}
}

// Limit returns the limit set by SetLimit; ok is false when there is none.
func (c *Player) Limit() (n int, ok bool) { return c.limit, c.limit >= 0 }

// end is where delivery stops: the limit or the end of the tape.
func (c *Player) end() int {
	if c.limit >= 0 {
		return min(c.limit, c.x.Len())
	}
	return c.x.Len()
}

// Anchor makes recorded message seq fall due at now: while playing, the
// messages up to it are due at once and the later ones at their recorded
// gaps after now, scaled by the speed (when paused, from the next Play on).
// The debugger's live mode calls it when the live client sends the message
// seq replays, so recorded answers are timed from the live request.
func (c *Player) Anchor(seq int, now time.Time) {
	if seq < 0 || seq >= c.x.Len() {
		return
	}
	c.tapeNow = c.timeBefore(seq + 1)
	if c.playing {
		c.anchored = true
		c.anchorWall, c.anchorTape = now, c.tapeNow
	}
}

// jump moves to pos. With keepGap (a step forward) the next message waits
// for its recorded gap when playing; without (a seek) it falls due at once.
func (c *Player) jump(pos int, keepGap bool) {
	c.pos = max(0, min(pos, c.end()))
	c.resumeAt = -1
	c.tapeNow = c.timeBefore(c.pos)
	if !keepGap && c.pos < c.x.Len() {
		if t := c.x.Entry(c.pos).Time; !t.IsZero() {
			c.tapeNow = t.UnixNano()
		}
	}
	c.anchored = false
}

// Advance delivers, while playing, every message due by now: the recorded
// gaps divided by the speed, or all of them at speed 0. It pauses before a
// message an enabled breakpoint matches and returns the hit; Play then
// delivers that message first without stopping on it again.
func (c *Player) Advance(now time.Time) (delivered []int, hit *BreakpointHit) {
	if !c.playing {
		return nil, nil
	}
	if !c.anchored {
		c.anchored = true
		c.anchorWall, c.anchorTape = now, c.reached()
	}
	n := c.end()
	for c.pos < n {
		c.cutGap()
		e := c.x.Entry(c.pos)
		if c.speed > 0 && !e.Time.IsZero() && c.dueAt(e.Time.UnixNano()).After(now) {
			break
		}
		if c.pos != c.resumeAt {
			if b, ok := c.check(e); ok {
				c.playing = false
				c.resumeAt = c.pos
				if !e.Time.IsZero() {
					c.tapeNow = max(c.tapeNow, e.Time.UnixNano())
				}
				return delivered, &BreakpointHit{Breakpoint: b, Seq: c.pos}
			}
		}
		delivered = append(delivered, c.pos)
		c.pos++
		c.resumeAt = -1
	}
	return delivered, nil
}

// NextDue returns when the next message falls due while playing; ok is false
// when paused or at the end. A zero time means at once (after a jump).
func (c *Player) NextDue() (time.Time, bool) {
	if !c.playing || c.pos >= c.end() {
		return time.Time{}, false
	}
	if !c.anchored {
		return time.Time{}, true
	}
	c.cutGap()
	t := c.x.Entry(c.pos).Time
	if c.speed == 0 || t.IsZero() {
		return c.anchorWall, true
	}
	return c.dueAt(t.UnixNano()), true
}

func (c *Player) dueAt(tapeTime int64) time.Time {
	gap := tapeTime - c.anchorTape
	if gap <= 0 {
		return c.anchorWall
	}
	return c.anchorWall.Add(time.Duration(float64(gap) / c.speed))
}

// tapeAt returns the tape time reached at wall time now while playing,
// never beyond the next message's time.
func (c *Player) tapeAt(now time.Time) int64 {
	if c.speed == 0 {
		return c.timeBefore(c.pos)
	}
	t := c.anchorTape + int64(float64(now.Sub(c.anchorWall))*c.speed)
	if c.pos < c.x.Len() {
		if next := c.x.Entry(c.pos).Time; !next.IsZero() && t > next.UnixNano() {
			t = next.UnixNano()
		}
	}
	return max(t, c.anchorTape)
}

// timeBefore returns the time of the last timestamped message before pos, or
// when there is none, the first timestamp from pos on: the tape time at
// which message pos's gap starts.
func (c *Player) timeBefore(pos int) int64 {
	for i := min(pos, c.x.Len()) - 1; i >= 0; i-- {
		if t := c.x.Entry(i).Time; !t.IsZero() {
			return t.UnixNano()
		}
	}
	for i := pos; i < c.x.Len(); i++ {
		if t := c.x.Entry(i).Time; !t.IsZero() {
			return t.UnixNano()
		}
	}
	return 0
}

// check returns the first enabled breakpoint matching e.
func (c *Player) check(e tape.Entry) (Breakpoint, bool) {
	var raw []byte
	var body map[string]any
	loaded := false
	method := e.Method
	for i := range c.bps {
		b := &c.bps[i]
		if b.Disabled {
			continue
		}
		if !loaded && b.needsBody(e) {
			loaded = true
			if m, err := c.x.Message(e.Seq); err == nil {
				raw = tape.StripMeta(m.Raw)
				body = decodeForExpr(m.Raw)
			}
			if e.Kind == tape.KindResponse {
				method = c.x.MethodOf(e.Seq)
			}
		}
		if b.match(e, raw, body, method) {
			return b.Breakpoint, true
		}
	}
	return Breakpoint{}, false
}

// AddBreakpoint adds b (its ID is ignored) and returns its new ID.
func (c *Player) AddBreakpoint(b Breakpoint) (int, error) {
	set := 0
	for _, ok := range []bool{b.Method != "", b.Tool != "", b.OnError, b.Expr != ""} {
		if ok {
			set++
		}
	}
	if set != 1 {
		return 0, fmt.Errorf("breakpoint %+v: expected exactly one of method, tool, error or expression, found %d", b, set)
	}
	nb := bp{Breakpoint: b}
	if b.Expr != "" {
		p, err := compileExpr(b.Expr)
		if err != nil {
			return 0, err
		}
		nb.prog = p
	}
	nb.ID = c.nextID
	c.nextID++
	c.bps = append(c.bps, nb)
	return nb.ID, nil
}

// RemoveBreakpoint removes the breakpoint with this ID, if any.
func (c *Player) RemoveBreakpoint(id int) {
	c.bps = slices.DeleteFunc(c.bps, func(b bp) bool { return b.ID == id })
}

// SetBreakpointEnabled enables or disables the breakpoint with this ID; it
// reports whether there was one.
func (c *Player) SetBreakpointEnabled(id int, enabled bool) bool {
	for i := range c.bps {
		if c.bps[i].ID == id {
			c.bps[i].Disabled = !enabled
			return true
		}
	}
	return false
}

// Breakpoints returns the breakpoints in the order they were added.
func (c *Player) Breakpoints() []Breakpoint {
	out := make([]Breakpoint, len(c.bps))
	for i, b := range c.bps {
		out[i] = b.Breakpoint
	}
	return out
}

// ToggleMethod removes the method breakpoints on method if there are any,
// else adds one; it reports whether it added.
func (c *Player) ToggleMethod(method string) (added bool) {
	n := len(c.bps)
	c.bps = slices.DeleteFunc(c.bps, func(b bp) bool { return b.Method == method })
	if len(c.bps) < n {
		return false
	}
	_, err := c.AddBreakpoint(Breakpoint{Method: method})
	return err == nil
}
