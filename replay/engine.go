package replay

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Mode is how an Engine matches the client's requests to the tape's.
type Mode int

// Matching modes.
const (
	// Strict (mcporter's semantics): each request must be the next recorded
	// one of the server, with the same method and params equal by meaning.
	Strict Mode = iota
	// Keyed (Shadow's semantics): a request is looked up by (method,
	// canonical params); identical calls are served in recorded order. An
	// unknown call or more repeats than recorded is a divergence.
	Keyed
	// Loose is Keyed that reuses the last response when a call repeats more
	// often than recorded, and answers unknown calls with an error that is
	// reported but does not fail the replay.
	Loose
)

var modeNames = [...]string{"strict", "keyed", "loose"}

func (m Mode) String() string {
	if int(m) < len(modeNames) {
		return modeNames[m]
	}
	return "unknown"
}

// ParseMode reads "strict", "keyed" or "loose".
func ParseMode(s string) (Mode, error) {
	for i, n := range modeNames {
		if s == n {
			return Mode(i), nil
		}
	}
	return 0, fmt.Errorf("unknown match mode %q: expected strict, keyed or loose", s)
}

// EngineOptions configure an Engine.
type EngineOptions struct {
	// Server is the tape's server to serve; empty when the tape holds one.
	Server string
	Mode   Mode
	// Ignore lists paths dropped before comparing requests (see tape.ParsePath).
	Ignore []tape.Path
	// Speed > 0 delays each response by its recorded latency divided by
	// Speed, and server notifications by their recorded gaps; 0 is instant.
	Speed float64
	// Hold makes divergences wait for Resolve instead of being answered with
	// the divergence error at once: the debugger asks its user.
	Hold bool
	// Reorder, in strict mode, lets a request that does not match the next
	// recorded one match one of the Reorder recorded requests after it; the
	// ones passed over are still expected. Requests a client sends at once
	// race over HTTP (one POST each) and the recorder saw them in its own
	// order, so the HTTP edge needs a small window; 0 is mcporter's exact
	// order.
	Reorder int
	// Span limits the engine to the tape's messages [Span.Lo, Span.Hi):
	// one recorded session of several, which the HTTP edge serves each
	// with an engine of its own. The zero Span is the whole tape.
	Span Span
}

// Span is a stretch of a tape's messages by sequence number: [Lo, Hi).
type Span struct{ Lo, Hi int }

// Output is a message the engine sends to the client.
type Output struct {
	// Msg is the JSON-RPC message, without _meta or newline. It is nil when
	// there is nothing to send: for a held divergence (EngineOptions.Hold;
	// Resolution Pending), which waits for Engine.Resolve, and for a
	// divergence in a client's reply (Resolution NotAnswered).
	Msg []byte
	// At is when to send it; every Output returned is due.
	At time.Time
	// Seq is the tape message it replays, or -1 for one the engine made.
	Seq int
	// Divergence is set on a divergence error and on a held divergence.
	Divergence *Divergence

	reqID    tape.ID // the live request answered, for cancellation
	progress bool    // a notifications/progress: the stdio edge lets it land before what follows
}

// Engine serves a tape's server side to a live client: it takes the client's
// messages and yields what the recorded server sends back (responses with the
// live ids spliced in, recorded notifications in recorded order, and the
// server's own requests), or a divergence error where the client departs from
// the tape. It is synchronous and deterministic: it starts no goroutine and
// never reads the clock; I/O lives with the caller. It is not safe for
// concurrent use.
//
// Bodies are read from the tape's Index lazily, as matching reaches them, so
// a tape of any length starts serving at once.
type Engine struct {
	x      *tape.Index
	opts   EngineOptions
	server string
	norm   tape.Normalizer

	// The scanner walks the tape once, in order, on demand.
	scan    int   // next tape seq not yet scanned
	reqs    []int // the server's recorded client requests, in order
	ri      int   // strict: index in reqs of the next expected request
	used    map[int]bool
	skipped int

	// Keyed mode: key → recorded requests not yet served, in order.
	keyed    map[[16]byte][]int
	keyedN   int              // reqs[:keyedN] are in keyed
	keyedAll map[[16]byte]int // key → the last recorded request with it
	served   map[[16]byte]int // loose: key → the last request whose response was sent
	methods  map[string]int   // recorded request count per method (scanned so far)
	memo     map[uint64]memoKey
	answers  map[int][]byte // recorded responses, stripped, by seq: repeats skip the file read

	frontier int // recv messages before it were emitted or passed
	lo, hi   int // the span of the tape served, [lo, hi); hi 0 is the tape's end
	refTape  int64
	refSeq   int // the recorded client message the latest live one matched, or -1
	now      time.Time

	outstanding map[tape.ID]int // live id of a server request sent → its tape seq
	srvIDs      int
	awaitCancel map[tape.ID]int // live id → late response to send once cancelled
	queue       []Output

	// unreadable holds the recorded requests that could not be read or
	// keyed, by seq, with why: a live request they might have matched
	// diverges naming them instead of being "not on the tape".
	unreadable map[int]error

	divs       []*Divergence
	held       map[int]heldRequest
	requests   int
	matched    int
	unanswered []Unused // matched requests with no answer on the tape

	// passed are recorded requests a strict replay moved past without a
	// match (the client changed or skipped them): never expected again,
	// still reported unused.
	passed  map[int]bool
	resyncs []Resync
	lost    bool // strict: the last request diverged; the next may re-synchronise
	// liveToken holds, by recorded request, the progressToken of the live
	// request that matched it, when it had one: recorded progress
	// notifications carry the live token, or are dropped when the live
	// request asked for none.
	liveToken map[int][]byte
	// waiting holds recorded answers that followed server requests the
	// recording's client replied to first: each goes out once the live
	// client has replied too.
	waiting []waitingAnswer
	// window is, in keyed and loose mode, the recorded request being
	// answered and its response: only the server requests between them
	// belong to the live call and are sent.
	window [2]int
}

// waitingAnswer is a recorded answer held for the client's replies to the
// server requests sent before it (their live ids).
type waitingAnswer struct {
	out     []byte
	seq     int
	reqID   tape.ID
	replies []tape.ID
}

// memoKey remembers the key of raw params seen before: identical bytes have
// the same canonical form, so repeated calls skip decoding.
type memoKey struct {
	method string
	params []byte
	key    [16]byte
}

const memoSize = 1024

var memoSeed = maphash.MakeSeed()

type heldRequest struct {
	msg tape.Entry
	div *Divergence
}

// NewEngine returns an engine serving x's server opts.Server (or its only
// server). It reads no message body.
func NewEngine(x *tape.Index, opts EngineOptions) (*Engine, error) {
	server, err := pickServer(x, opts.Server)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		x: x, opts: opts, server: server,
		norm:        tape.Normalizer{Ignore: opts.Ignore},
		used:        map[int]bool{},
		keyed:       map[[16]byte][]int{},
		keyedAll:    map[[16]byte]int{},
		served:      map[[16]byte]int{},
		methods:     map[string]int{},
		memo:        map[uint64]memoKey{},
		answers:     map[int][]byte{},
		outstanding: map[tape.ID]int{},
		awaitCancel: map[tape.ID]int{},
		held:        map[int]heldRequest{},
		refSeq:      -1,
		unreadable:  map[int]error{},
		passed:      map[int]bool{},
		liveToken:   map[int][]byte{},
	}
	if sp := opts.Span; sp != (Span{}) {
		if sp.Lo < 0 || sp.Hi < sp.Lo || sp.Hi > x.Len() {
			return nil, fmt.Errorf("engine span [%d, %d): expected 0 <= Lo <= Hi <= %d, the tape's length", sp.Lo, sp.Hi, x.Len())
		}
		e.lo, e.hi = sp.Lo, sp.Hi
		e.scan, e.frontier = sp.Lo, sp.Lo
	}
	return e, nil
}

// end is the tape position after the last message e serves.
func (e *Engine) end() int {
	if e.hi > 0 {
		return e.hi
	}
	return e.x.Len()
}

// pickServer resolves the server to serve: the one named, or the tape's
// only server.
func pickServer(x *tape.Index, want string) (string, error) {
	var names []string
	for _, s := range x.Servers() {
		if s != "" {
			names = append(names, s)
		}
	}
	if want != "" {
		if slices.Contains(names, want) {
			return want, nil
		}
		return "", fmt.Errorf("server %q is not on the tape: expected one of %s", want, quoteList(names))
	}
	switch len(names) {
	case 0:
		return "", nil // a tape without server names
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("the tape holds %d servers (%s): choose one with --server", len(names), quoteList(names))
}

func quoteList(s []string) string {
	if len(s) == 0 {
		return "none"
	}
	q := make([]string, len(s))
	for i, n := range s {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// Server returns the name of the server the engine serves.
func (e *Engine) Server() string { return e.server }

// Options returns the options the engine was made with, its server named.
func (e *Engine) Options() EngineOptions {
	o := e.opts
	o.Server = e.server
	return o
}

// Mode returns the engine's matching mode.
func (e *Engine) Mode() Mode { return e.opts.Mode }

// Receive takes one message from the client (one JSON-RPC object or a batch
// array) at now and returns the outputs due by now. Later outputs (at a
// speed > 0) wait for Poll.
func (e *Engine) Receive(msg []byte, now time.Time) []Output {
	e.now = now
	entries := tape.Classify(msg)
	for _, m := range entries {
		e.receive(m)
	}
	return e.Poll(now)
}

func (e *Engine) receive(m tape.Entry) {
	switch m.Kind {
	case tape.KindRequest:
		e.requests++
		e.request(m)
	case tape.KindNotification:
		e.notification(m)
	case tape.KindResponse:
		e.reply(m)
	case tape.KindInvalid:
		id := gjson.GetBytes(m.Raw, "id")
		raw := []byte("null")
		// gjson reads leniently ({"id"000 gives 000): echo only a valid id.
		if id.Exists() && (id.Type == gjson.Number || id.Type == gjson.String) && json.Valid([]byte(id.Raw)) {
			raw = []byte(id.Raw)
		}
		e.push(errorResponse(raw, CodeParseError, "tapedeck replay: "+m.Problem, nil), e.now, -1, "", nil)
	}
}

// Poll returns the outputs due by now, in order.
func (e *Engine) Poll(now time.Time) []Output {
	n := 0
	for n < len(e.queue) && !e.queue[n].At.After(now) {
		n++
	}
	if n == 0 {
		return nil
	}
	out := slices.Clone(e.queue[:n])
	e.queue = slices.Delete(e.queue, 0, n)
	return out
}

// NextDue returns when the next queued output falls due.
func (e *Engine) NextDue() (time.Time, bool) {
	if len(e.queue) == 0 {
		return time.Time{}, false
	}
	return e.queue[0].At, true
}

// push queues an output at its time, after outputs due at the same time.
func (e *Engine) push(msg []byte, at time.Time, seq int, reqID tape.ID, d *Divergence) {
	o := Output{Msg: msg, At: at, Seq: seq, Divergence: d, reqID: reqID}
	i := len(e.queue)
	for i > 0 && e.queue[i-1].At.After(at) {
		i--
	}
	e.queue = slices.Insert(e.queue, i, o)
}

// at returns when recorded message seq falls due: now plus its recorded
// gap after the live message being handled, divided by the speed.
func (e *Engine) at(seq int) time.Time {
	if e.opts.Speed <= 0 || e.refTape == 0 {
		return e.now
	}
	t := e.x.Entry(seq).Time
	if t.IsZero() || t.UnixNano() <= e.refTape {
		return e.now
	}
	return e.now.Add(time.Duration(float64(t.UnixNano()-e.refTape) / e.opts.Speed))
}

func (e *Engine) setRef(seq int) {
	e.refSeq = seq
	if t := e.x.Entry(seq).Time; !t.IsZero() {
		e.refTape = t.UnixNano()
	}
}

// scanNext scans the tape until one more recorded request of the server is
// found; it reports false at the end of the tape.
func (e *Engine) scanNext() bool {
	n := e.end()
	for e.scan < n {
		i := e.scan
		e.scan++
		en := e.x.Entry(i)
		if en.Server == e.server && en.Kind == tape.KindRequest && en.Dir == tape.DirSend {
			e.reqs = append(e.reqs, i)
			e.methods[en.Method]++
			return true
		}
	}
	return false
}

func (e *Engine) scanAll() {
	for e.scanNext() {
	}
}

// request handles a live request.
func (e *Engine) request(m tape.Entry) {
	if e.opts.Mode == Strict {
		e.strict(m)
	} else {
		e.keyedRequest(m)
	}
}

// nextExpected returns the next unused recorded request in strict order, or -1.
func (e *Engine) nextExpected() int {
	for {
		for e.ri < len(e.reqs) && (e.used[e.reqs[e.ri]] || e.passed[e.reqs[e.ri]]) {
			e.ri++
		}
		if e.ri < len(e.reqs) {
			return e.reqs[e.ri]
		}
		if !e.scanNext() {
			return -1
		}
	}
}

func (e *Engine) strict(m tape.Entry) {
	for {
		exp := e.nextExpected()
		var expEntry tape.Entry
		if exp >= 0 {
			expEntry = e.x.Entry(exp)
		}
		switch {
		case m.Method == "server/discover" && expEntry.Method != "server/discover":
			// The tape's server predates server/discover: answer as it would
			// have, so the client falls back to initialize.
			e.push(errorResponse([]byte(m.ID), CodeMethodNotFound, "Method not found: server/discover", nil), e.now, -1, m.ID, nil)
			return
		case m.Method == "ping" && expEntry.Method != "ping":
			e.push([]byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`), e.now, -1, m.ID, nil)
			return
		case exp >= 0 && expEntry.Method == "ping" && m.Method != "ping":
			// A recorded keepalive ping is timing, not behaviour: skip it.
			e.used[exp] = true
			continue
		case exp >= 0 && expEntry.Method == "server/discover" && m.Method == "initialize" && e.probeFailed(exp):
			// The recording client probed server/discover and fell back to
			// initialize; a client that starts with initialize skips the
			// probe, which is version drift, not behaviour.
			e.used[exp] = true
			continue
		case exp < 0:
			e.diverge(m, -1, ReasonBeyondEnd)
			return
		}
		rec, err := e.recorded(exp)
		if err == nil {
			var same bool
			if same, err = e.sameRequest(m, rec); same {
				e.consume(m, exp)
				return
			}
		}
		if later := e.lookAhead(m); later >= 0 {
			e.consume(m, later)
			return
		}
		if err != nil {
			e.unreadable[exp] = err
			e.divergeUnreadable(m, exp, err)
			return
		}
		if !e.opts.Hold && e.lost {
			if later := e.resync(m); later >= 0 {
				return
			}
		}
		e.diverge(m, exp, ReasonMismatch)
		if !e.opts.Hold {
			e.lost = true
			if m.Method == expEntry.Method && bytes.Equal(callTarget(m.Raw), callTarget(rec.Raw)) {
				// The client's changed version of the expected call (same
				// method, same tool, prompt or resource): the next request
				// is compared with the one recorded after it, so one
				// difference stays one divergence.
				e.passed[exp] = true
			}
		}
		return
	}
}

// callTarget returns the raw name or URI a call's params name, or nil.
func callTarget(msg []byte) []byte {
	if t := field(msg, "params.name"); t != nil {
		return t
	}
	return field(msg, "params.uri")
}

// resyncLimit bounds how far past the next expected request a strict
// replay looks for the live request before calling it a divergence.
const resyncLimit = 256

// resync looks for live request m, which follows a divergence, among the
// recorded requests after the EngineOptions.Reorder window, up to
// resyncLimit of them: the client left out the recorded calls before it. When m matches one, those calls are
// passed (reported unused), the re-synchronisation is noted in the report,
// m is answered, and resync returns the request it matched; else -1.
func (e *Engine) resync(m tape.Entry) int {
	seen := 0
	for i := e.ri + 1; seen < resyncLimit; i++ {
		if i >= len(e.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.reqs[i]
		if e.used[seq] || e.passed[seq] {
			continue
		}
		seen++
		if seen <= e.opts.Reorder {
			continue // lookAhead tried these
		}
		rec, err := e.recorded(seq)
		if err != nil {
			continue
		}
		if same, err := e.sameRequest(m, rec); err != nil || !same {
			continue
		}
		skipped := 0
		for _, r := range e.reqs[e.ri:i] {
			if !e.used[r] && !e.passed[r] {
				e.passed[r] = true
				skipped++
			}
		}
		en := e.x.Entry(seq)
		e.resyncs = append(e.resyncs, Resync{Seq: seq, Line: en.Line, Method: en.Method, Skipped: skipped})
		e.consume(m, seq)
		return seq
	}
	return -1
}

// probeFailed reports whether the recorded server/discover at seq was
// answered with an error (or never answered): a server from before 2026-07-28.
func (e *Engine) probeFailed(seq int) bool {
	p := e.x.Pair(seq)
	return p.Partner < 0 || e.x.Entry(p.Partner).Error
}

// lookAhead returns the first of the EngineOptions.Reorder unused recorded
// requests after the next expected one that m matches, or -1.
func (e *Engine) lookAhead(m tape.Entry) int {
	seen := 0
	for i := e.ri + 1; seen < e.opts.Reorder; i++ {
		if i >= len(e.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.reqs[i]
		if e.used[seq] || e.passed[seq] {
			continue
		}
		seen++
		rec, err := e.recorded(seq)
		same := false
		if err == nil {
			same, err = e.sameRequest(m, rec)
		}
		if err != nil {
			e.unreadable[seq] = err // diverges when it is the next expected
			continue
		}
		if same {
			return seq
		}
	}
	return -1
}

// sameRequest compares a live request with a recorded one by meaning. The
// error says why the recorded request's params could not be decoded; a
// live request whose params cannot be is just not the same.
func (e *Engine) sameRequest(m, rec tape.Entry) (bool, error) {
	if m.Method != rec.Method {
		return false, nil
	}
	if m.Method == "server/discover" || m.Method == "ping" {
		return true, nil
	}
	lp, rp := field(m.Raw, "params"), field(rec.Raw, "params")
	if bytes.Equal(lp, rp) && m.Method != "initialize" {
		return true, nil // byte-equal params: the common case, no decoding
	}
	b, err := e.normalize(rec.Method, rp)
	if err != nil {
		return false, fmt.Errorf("its params: %w", err)
	}
	a, err := e.normalize(m.Method, lp)
	return err == nil && bytes.Equal(a, b), nil
}

// recorded reads recorded message seq. A body that cannot be read, or no
// longer reads as the message indexed (the file changed since), is an
// error.
func (e *Engine) recorded(seq int) (tape.Entry, error) {
	m, err := e.x.Message(seq)
	if err != nil {
		return m, err
	}
	if m.Problem != "" {
		return m, fmt.Errorf("%s (the file changed since it was indexed?)", m.Problem)
	}
	return m, nil
}

// unreadableFor returns the first unused recorded request of method that
// could not be read or keyed, and why, or -1.
func (e *Engine) unreadableFor(method string) (int, error) {
	first := -1
	for seq := range e.unreadable {
		if !e.used[seq] && e.x.Entry(seq).Method == method && (first < 0 || seq < first) {
			first = seq
		}
	}
	if first < 0 {
		return -1, nil
	}
	return first, e.unreadable[first]
}

// normalize returns the canonical form of a request's params for matching.
func (e *Engine) normalize(method string, params []byte) ([]byte, error) {
	v, err := e.norm.NormalizeParams(params)
	if err != nil {
		return nil, err
	}
	if method == "initialize" {
		if p, ok := v.(map[string]any); ok {
			// Version drift and client identity are not behaviour.
			delete(p, "protocolVersion")
			delete(p, "capabilities")
			delete(p, "clientInfo")
		}
	}
	return tape.CanonicalValue(v)
}

// key returns a request's keyed-mode lookup key: a hash of its method and
// canonical params (initialize and server/discover by method alone).
func (e *Engine) key(method string, raw []byte) ([16]byte, error) {
	params := field(raw, "params")
	var h maphash.Hash // no concatenation: params may be large
	h.SetSeed(memoSeed)
	h.WriteString(method)
	h.WriteByte(0)
	h.Write(params)
	mh := h.Sum64()
	if m, ok := e.memo[mh]; ok && m.method == method && bytes.Equal(m.params, params) {
		return m.key, nil
	}
	k, err := e.computeKey(method, params)
	if err != nil {
		return k, err
	}
	if len(e.memo) >= memoSize {
		clear(e.memo)
	}
	e.memo[mh] = memoKey{method: method, params: bytes.Clone(params), key: k}
	return k, nil
}

func (e *Engine) computeKey(method string, params []byte) ([16]byte, error) {
	h := sha256.New()
	h.Write([]byte(method))
	h.Write([]byte{0})
	if method != "initialize" && method != "server/discover" && method != "ping" {
		c, err := e.normalize(method, params)
		if err != nil {
			return [16]byte{}, err
		}
		h.Write(c)
	}
	var k [16]byte
	copy(k[:], h.Sum(nil))
	return k, nil
}

// lookup returns the next recorded request with key k, filling the keyed
// index from the tape as far as needed; -1 when none is left.
func (e *Engine) lookup(k [16]byte) int {
	for {
		if q := e.keyed[k]; len(q) > 0 {
			for len(q) > 0 && e.used[q[0]] {
				q = q[1:]
			}
			e.keyed[k] = q
			if len(q) > 0 {
				return q[0]
			}
		}
		if e.keyedN == len(e.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.reqs[e.keyedN]
		e.keyedN++
		rec, err := e.recorded(seq)
		if err != nil {
			e.unreadable[seq] = err
			continue
		}
		rk, err := e.computeKey(rec.Method, field(rec.Raw, "params"))
		if err != nil {
			e.unreadable[seq] = fmt.Errorf("its params: %w", err)
			continue
		}
		e.keyed[rk] = append(e.keyed[rk], seq)
		e.keyedAll[rk] = seq
	}
}

func (e *Engine) keyedRequest(m tape.Entry) {
	k, err := e.key(m.Method, m.Raw)
	if err != nil {
		e.divergeWith(m, -1, ReasonUnknown, "its params could not be decoded: "+err.Error())
		return
	}
	if seq := e.lookup(k); seq >= 0 {
		e.served[k] = seq
		e.consume(m, seq)
		return
	}
	switch {
	case m.Method == "server/discover":
		e.push(errorResponse([]byte(m.ID), CodeMethodNotFound, "Method not found: server/discover", nil), e.now, -1, m.ID, nil)
	case m.Method == "ping":
		e.push([]byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`), e.now, -1, m.ID, nil)
	case e.opts.Mode == Loose:
		if last, ok := e.served[k]; ok {
			e.matched++
			e.respond(m, last)
			return
		}
		e.unknown(m)
	default:
		if last, ok := e.keyedAll[k]; ok {
			e.diverge(m, last, ReasonRepeat)
		} else {
			e.unknown(m)
		}
	}
}

// unknown reports a live request found nowhere on the tape, naming a
// recorded request of its method that could not be read, if any: the tape
// may hold it there.
func (e *Engine) unknown(m tape.Entry) {
	if seq, err := e.unreadableFor(m.Method); seq >= 0 {
		e.divergeUnreadable(m, seq, err)
		return
	}
	e.diverge(m, e.nearest(m), ReasonUnknown)
}

// nearestLimit bounds how many recorded requests of a method a miss is
// compared with to name the nearest.
const nearestLimit = 256

// nearest returns the recorded request of m's method that differs least
// from m by meaning, among the first nearestLimit of them, or -1: a keyed
// miss names it and shows the diff, which says more than "not on the tape".
func (e *Engine) nearest(m tape.Entry) int {
	got, err := e.norm.Normalize(m.Raw)
	if err != nil {
		return -1
	}
	e.scanAll()
	best, fewest, n := -1, 0, 0
	for _, seq := range e.reqs {
		if e.x.Entry(seq).Method != m.Method {
			continue
		}
		if n++; n > nearestLimit {
			break
		}
		rec, err := e.recorded(seq)
		if err != nil {
			continue
		}
		want, err := e.norm.Normalize(rec.Raw)
		if err != nil {
			continue
		}
		if d := len(Diff(want, got)); best < 0 || d < fewest {
			best, fewest = seq, d
		}
	}
	return best
}

// consume marks recorded request seq as matched by live request m and
// answers it.
func (e *Engine) consume(m tape.Entry, seq int) {
	e.matched++
	e.lost = false
	e.used[seq] = true
	if t := field(m.Raw, "params._meta.progressToken"); t != nil {
		e.liveToken[seq] = bytes.Clone(t) // m.Raw is the caller's buffer
	}
	e.setRef(seq)
	e.pass(seq)
	e.respond(m, seq)
	e.advance()
}

// respond sends the recorded response of request seq with m's id.
func (e *Engine) respond(m tape.Entry, seq int) {
	p := e.x.Pair(seq)
	resp := p.Partner
	if p.Cancelled {
		// The client cancelled it while recording: wait for the live
		// cancellation, then send the late response if there was one.
		e.awaitCancel[m.ID] = resp
		return
	}
	if resp < 0 {
		if resp = rejection(e.x, e.server, seq); resp < 0 {
			// Never answered on the tape: say so rather than leave the
			// client waiting for an answer that will not come.
			en := e.x.Entry(seq)
			e.unanswered = append(e.unanswered, Unused{Seq: seq, Line: en.Line, Method: en.Method})
			why := "the recording ended before the server answered"
			if later := e.laterLine(seq); later > 0 {
				why = fmt.Sprintf("the server never answered it, though the tape goes on to line %d", later)
			}
			msg := fmt.Sprintf("tapedeck replay: the tape holds no answer to %s (tape line %d): %s", en.Method, en.Line, why)
			e.push(errorResponse([]byte(m.ID), CodeNoAnswer, msg, nil), e.now, -1, m.ID, nil)
			return
		}
	}
	e.window = [2]int{seq, resp}
	e.advanceTo(resp)
	e.window = [2]int{}
	body, ok := e.answers[resp]
	if !ok {
		rec, err := e.x.Message(resp)
		if err != nil {
			e.push(errorResponse([]byte(m.ID), CodeDiverged, fmt.Sprintf("tapedeck replay: read recorded response: %v", err), nil), e.now, resp, m.ID, nil)
			return
		}
		body = tape.StripMeta(rec.Raw)
		if len(e.answers) >= memoSize {
			clear(e.answers)
		}
		e.answers[resp] = body
	}
	out := spliceID(body, []byte(m.ID))
	if m.Method == "initialize" {
		// Answer with the version the client asked for, as the brief's
		// tolerance of version drift requires.
		if v := gjson.GetBytes(m.Raw, "params.protocolVersion"); v.Type == gjson.String && gjson.GetBytes(out, "result.protocolVersion").Exists() {
			if patched, err := sjson.SetBytes(out, "result.protocolVersion", v.String()); err == nil {
				out = patched
			}
		}
	}
	if replies := e.repliesAwaited(seq, resp); len(replies) > 0 {
		// The recorded server asked the client something (roots,
		// sampling, elicitation) and answered after the reply: so does
		// the replay, whose answer must not reach the client first.
		e.waiting = append(e.waiting, waitingAnswer{out: out, seq: resp, reqID: m.ID, replies: replies})
		return
	}
	e.push(out, e.at(resp), resp, m.ID, nil)
}

// repliesAwaited returns the live ids of the server requests the replay
// sent between recorded request seq and its response resp whose recorded
// replies came before resp.
func (e *Engine) repliesAwaited(seq, resp int) []tape.ID {
	var ids []tape.ID
	for id, q := range e.outstanding {
		if q > seq && q < resp {
			if r := e.x.Pair(q).Partner; r >= 0 && r < resp {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// releaseWaiting sends the held answers no longer waiting for a reply.
func (e *Engine) releaseWaiting(replied tape.ID) {
	kept := e.waiting[:0]
	for _, w := range e.waiting {
		w.replies = slices.DeleteFunc(w.replies, func(id tape.ID) bool { return id == replied })
		if len(w.replies) == 0 {
			e.push(w.out, e.at(w.seq), w.seq, w.reqID, nil)
			continue
		}
		kept = append(kept, w)
	}
	clear(e.waiting[len(kept):])
	e.waiting = kept
}

// laterLine returns the line of the server's next wire message after seq,
// or 0 when the tape ends first.
func (e *Engine) laterLine(seq int) int {
	for i := seq + 1; i < e.x.Len(); i++ {
		if en := e.x.Entry(i); en.Server == e.server && en.IsWire() {
			return en.Line
		}
	}
	return 0
}

// rejection returns the response with "id":null that answered recorded
// request seq, or -1: a Streamable HTTP server rejects a request it cannot
// read yet (server-everything's HTTP 400 to server/discover before
// initialize) without its id, so the tape cannot pair them. It is the
// server's first response after seq, before the client's next message.
func rejection(x *tape.Index, server string, seq int) int {
	for i := seq + 1; i < x.Len(); i++ {
		en := x.Entry(i)
		if en.Server != server || !en.IsWire() {
			continue
		}
		if en.Dir == tape.DirSend || en.Kind == tape.KindResponse && !x.Pair(i).Orphan {
			return -1
		}
		if en.Kind != tape.KindResponse {
			continue
		}
		if m, err := x.Message(i); err == nil && m.ID == "null" {
			return i
		}
		return -1
	}
	return -1
}

// spliceID replaces a message's top-level id with id, leaving every other
// byte as recorded.
func spliceID(msg, id []byte) []byte { return splice(msg, "id", id) }

// splice replaces the JSON value at path in msg with v, leaving every other
// byte as recorded; msg is returned as it is when path is absent.
func splice(msg []byte, path string, v []byte) []byte {
	r := gjson.Get(unsafeString(msg), path)
	if !r.Exists() || r.Index <= 0 {
		return msg
	}
	out := make([]byte, 0, len(msg)-len(r.Raw)+len(v))
	out = append(out, msg[:r.Index]...)
	out = append(out, v...)
	return append(out, msg[r.Index+len(r.Raw):]...)
}

// field returns the raw JSON of path in msg, as a slice of msg (no copy,
// unlike gjson.GetBytes), or nil when it is absent.
func field(msg []byte, path string) []byte {
	r := gjson.Get(unsafeString(msg), path)
	switch {
	case !r.Exists():
		return nil
	case r.Index > 0:
		return msg[r.Index : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw) // not a plain slice of msg
}

// unsafeString views b as a string for gjson, without a copy. Only for
// reading: nothing returned may keep a string made from it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// pass moves the frontier past recorded message seq: the recorded server
// messages before it are emitted, the client messages before it passed.
func (e *Engine) pass(seq int) {
	for e.frontier <= seq {
		e.visit(e.frontier)
		e.frontier++
	}
}

// advance emits the recorded server messages up to the next client message
// the tape still waits for.
func (e *Engine) advance() { e.advanceTo(e.end()) }

func (e *Engine) advanceTo(limit int) {
	limit = min(limit, e.end())
	for e.frontier < limit {
		en := e.x.Entry(e.frontier)
		if en.Server == e.server && en.IsWire() && en.Dir == tape.DirSend && !e.used[e.frontier] {
			return
		}
		e.visit(e.frontier)
		e.frontier++
	}
}

// visit emits recorded message seq if it is a server notification or request.
func (e *Engine) visit(seq int) {
	en := e.x.Entry(seq)
	if en.Server != e.server || en.Dir != tape.DirRecv {
		return
	}
	switch en.Kind {
	case tape.KindNotification:
		rec, err := e.x.Message(seq)
		if err != nil {
			return
		}
		body := tape.StripMeta(rec.Raw)
		if en.Method == "notifications/progress" {
			var ok bool
			if body, ok = e.progressFor(seq, body); !ok {
				return
			}
			e.push(body, e.at(seq), seq, "", nil)
			e.queue[len(e.queue)-1].progress = true
			return
		}
		e.push(body, e.at(seq), seq, "", nil)
	case tape.KindRequest:
		if e.opts.Mode != Strict && !(e.window[0] < seq && seq < e.window[1]) {
			return // a server request of a call the live client did not make (yet)
		}
		rec, err := e.x.Message(seq)
		if err != nil {
			return
		}
		id := rec.ID
		if _, taken := e.outstanding[id]; taken {
			e.srvIDs++
			id = tape.ID(strconv.Quote(fmt.Sprintf("tapedeck-%d", e.srvIDs)))
		}
		e.outstanding[id] = seq
		e.push(spliceID(tape.StripMeta(rec.Raw), []byte(id)), e.at(seq), seq, "", nil)
	}
}

// progressFor gives recorded progress notification body (at seq) the
// progressToken of the live request its recorded request matched; ok is
// false when that live request asked for no progress, and the notification
// is not sent. A notification whose request is not found among the
// matched requests shortly before it goes out as recorded.
func (e *Engine) progressFor(seq int, body []byte) ([]byte, bool) {
	token := field(body, "params.progressToken")
	if token == nil {
		return body, true
	}
	i, _ := slices.BinarySearch(e.reqs, seq)
	for looked := 0; i > 0 && looked < 64; looked++ {
		i--
		r := e.reqs[i]
		if !e.used[r] {
			continue
		}
		rec, err := e.recorded(r)
		if err != nil || !bytes.Equal(field(rec.Raw, "params._meta.progressToken"), token) {
			continue
		}
		live, ok := e.liveToken[r]
		if !ok {
			return nil, false
		}
		return splice(body, "params.progressToken", live), true
	}
	return body, true
}

// notification handles a live client notification: it consumes the next
// recorded one of the same method, and honours cancellations.
func (e *Engine) notification(m tape.Entry) {
	if m.Method == "notifications/cancelled" {
		id := tape.ID(gjson.GetBytes(m.Raw, "params.requestId").Raw)
		e.queue = slices.DeleteFunc(e.queue, func(o Output) bool { return o.reqID == id && o.Seq >= 0 })
		if late, ok := e.awaitCancel[id]; ok {
			delete(e.awaitCancel, id)
			if late >= 0 {
				if rec, err := e.x.Message(late); err == nil {
					e.push(spliceID(tape.StripMeta(rec.Raw), []byte(id)), e.now, late, id, nil)
				}
			}
		}
	}
	// Look for it among the client messages the tape waits for next.
	n := e.end()
	for i := e.frontier; i < n; i++ {
		en := e.x.Entry(i)
		if en.Server != e.server || en.Dir != tape.DirSend || !en.IsWire() || e.used[i] {
			continue
		}
		if en.Kind == tape.KindRequest {
			break
		}
		if en.Kind == tape.KindNotification && en.Method == m.Method {
			e.used[i] = true
			e.setRef(i)
			break
		}
	}
	e.advance()
}

// reply handles the client's response to a server request sent from the tape.
func (e *Engine) reply(m tape.Entry) {
	q, ok := e.outstanding[m.ID]
	if !ok {
		d := e.newDivergence(m, -1, ReasonUnexpected)
		d.Message = fmt.Sprintf("replay mismatch for server '%s': response id %s answers no request the replay sent", e.server, m.ID)
		d.Resolution = NotAnswered
		e.push(nil, e.now, -1, "", d)
		return
	}
	delete(e.outstanding, m.ID)
	defer e.releaseWaiting(m.ID)
	rec := e.x.Pair(q).Partner
	if rec >= 0 {
		e.used[rec] = true
		e.setRef(rec)
		method := e.x.Entry(q).Method
		r, err := e.recorded(rec)
		var want, got any
		if err == nil {
			want, err = e.norm.Normalize(r.Raw)
		}
		var problem string
		switch {
		case err != nil:
			problem = fmt.Sprintf("the recorded reply at tape line %d could not be read: %v", e.x.Entry(rec).Line, err)
		default:
			if got, err = e.norm.Normalize(m.Raw); err != nil {
				problem = fmt.Sprintf("the reply received could not be decoded: %v", err)
			}
		}
		if problem != "" {
			d := e.newDivergence(m, rec, ReasonReply)
			d.Resolution = NotAnswered
			d.Message = fmt.Sprintf("replay mismatch for server '%s': the reply to %s %s cannot be checked: %s", e.server, method, m.ID, problem)
			e.push(nil, e.now, -1, "", d)
		} else if diff := Diff(want, got); len(diff) > 0 {
			d := e.newDivergence(m, rec, ReasonReply)
			d.Diff = diff
			d.Resolution = NotAnswered
			d.Message = fmt.Sprintf("replay mismatch for server '%s': reply to %s %s differs from the recorded reply (%s)", e.server, method, m.ID, diffSummary(diff))
			e.push(nil, e.now, -1, "", d)
		}
	}
	e.advance()
}

// newDivergence records a divergence of live message m from recorded
// message exp (or -1).
func (e *Engine) newDivergence(m tape.Entry, exp int, reason Reason) *Divergence {
	d := &Divergence{
		ID: len(e.divs) + 1, Server: e.server, Reason: reason,
		Method: m.Method, Expected: exp,
		Raw: json.RawMessage(slices.Clone(m.Raw)), // m.Raw is the caller's buffer
	}
	if m.Kind == tape.KindRequest {
		d.RequestID = json.RawMessage(m.ID)
	}
	if p := gjson.GetBytes(m.Raw, "params"); p.Exists() {
		d.Params = json.RawMessage(p.Raw)
	}
	if exp >= 0 {
		en := e.x.Entry(exp)
		d.ExpectedLine, d.ExpectedMethod = en.Line, en.Method
		if rec, err := e.recorded(exp); err == nil {
			if p := gjson.GetBytes(rec.Raw, "params"); p.Exists() {
				d.ExpectedParams = json.RawMessage(p.Raw)
			}
		}
	}
	e.divs = append(e.divs, d)
	return d
}

// diverge reports that live request m departs from the tape and answers it
// with the divergence error, or holds it (EngineOptions.Hold).
func (e *Engine) diverge(m tape.Entry, exp int, reason Reason) {
	e.divergeWith(m, exp, reason, "")
}

// divergeWith is diverge with a note on why the request could not be
// compared, added to the message.
func (e *Engine) divergeWith(m tape.Entry, exp int, reason Reason, note string) {
	d := e.newDivergence(m, exp, reason)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	if exp >= 0 && (reason == ReasonMismatch || reason == ReasonRepeat || reason == ReasonUnknown) {
		rec, err := e.recorded(exp)
		var want any
		if err == nil {
			want, err = e.norm.Normalize(rec.Raw)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the recorded request at tape line %d could not be read: %v", d.ExpectedLine, err))
		}
		got, gerr := e.norm.Normalize(m.Raw)
		if gerr != nil {
			notes = append(notes, fmt.Sprintf("the request received could not be decoded: %v", gerr))
		}
		if err == nil && gerr == nil {
			d.Diff = Diff(want, got)
		}
	}
	got := m.Method + " " + paramsText(d.Params)
	switch reason {
	case ReasonMismatch:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s did not match next expected %s %s (tape line %d)", e.server, got, d.ExpectedMethod, paramsText(d.ExpectedParams), d.ExpectedLine)
	case ReasonBeyondEnd:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s came after the last recorded request", e.server, got)
	case ReasonRepeat:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s was sent more often than recorded (last recorded at tape line %d)", e.server, got, d.ExpectedLine)
	case ReasonUnknown:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s is not on the tape", e.server, got)
		if exp >= 0 {
			d.Message += fmt.Sprintf("; the nearest recorded is %s %s (tape line %d)", d.ExpectedMethod, paramsText(d.ExpectedParams), d.ExpectedLine)
		}
		d.Tolerated = e.opts.Mode == Loose
	}
	if len(d.Diff) > 0 {
		d.Message += " (" + diffSummary(d.Diff) + ")"
	}
	if len(notes) > 0 {
		d.Message += "; " + strings.Join(notes, "; ")
	}
	e.answerDivergence(m, d)
}

// divergeUnreadable reports that live request m could not be matched
// because recorded request exp, the one expected or one of its method,
// could not be read, and why.
func (e *Engine) divergeUnreadable(m tape.Entry, exp int, why error) {
	d := e.newDivergence(m, exp, ReasonUnreadable)
	got := m.Method + " " + paramsText(d.Params)
	if e.opts.Mode == Strict {
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s could not be compared with the next expected: the recorded request at tape line %d could not be read: %v", e.server, got, d.ExpectedLine, why)
	} else {
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s is not among the recorded requests that could be read: the recorded request at tape line %d could not be read: %v", e.server, got, d.ExpectedLine, why)
	}
	e.answerDivergence(m, d)
}

// answerDivergence answers live request m with divergence d's error, or
// holds it (EngineOptions.Hold).
func (e *Engine) answerDivergence(m tape.Entry, d *Divergence) {
	if e.opts.Hold {
		e.held[d.ID] = heldRequest{msg: m, div: d}
		e.push(nil, e.now, -1, m.ID, d)
		return
	}
	e.sendError(m, d)
}

func (e *Engine) sendError(m tape.Entry, d *Divergence) {
	d.Resolution = SendError
	code := CodeDiverged
	if d.Tolerated {
		code = CodeNotRecorded
	}
	data, _ := json.Marshal(d)
	e.push(errorResponse([]byte(m.ID), code, d.Message, data), e.now, -1, m.ID, d)
}

// Resolve answers a divergence held under EngineOptions.Hold: with the divergence
// error, with the expected recorded response anyway, or by skipping the
// expected recorded request and matching the live request again (which may
// diverge anew). It returns the outputs due by now.
func (e *Engine) Resolve(id int, r Resolution, now time.Time) ([]Output, error) {
	h, ok := e.held[id]
	if !ok {
		return nil, fmt.Errorf("divergence %d is not awaiting a resolution", id)
	}
	e.now = now
	switch r {
	case SendError:
		e.sendError(h.msg, h.div)
	case AnswerRecorded:
		if h.div.Expected < 0 {
			return nil, fmt.Errorf("divergence %d: no recorded request was expected, so there is no recorded response to send", id)
		}
		h.div.Resolution = AnswerRecorded
		if e.opts.Mode == Strict || !e.used[h.div.Expected] {
			e.consume(h.msg, h.div.Expected)
		} else {
			e.matched++
			e.respond(h.msg, h.div.Expected)
		}
	case SkipRecorded:
		if h.div.Expected < 0 {
			return nil, fmt.Errorf("divergence %d: no recorded request was expected, so there is none to skip", id)
		}
		h.div.Resolution = SkipRecorded
		e.used[h.div.Expected] = true
		e.skipped++
		e.request(h.msg)
	default:
		return nil, fmt.Errorf("divergence %d: expected a resolution of error, recorded or skip, got %s", id, r)
	}
	delete(e.held, id)
	return e.Poll(now), nil
}

// Progress tells how far the live client has brought the tape: reached is
// the recorded client message its latest message matched (-1 before any),
// awaiting the next recorded client message the tape waits for (every
// recorded server message before it was replayed or is queued), or the
// tape's length when none is left. The debugger plays the tape up to
// awaiting, timed from when reached arrived.
func (e *Engine) Progress() (reached, awaiting int) {
	n := e.x.Len()
	for i := e.frontier; i < n; i++ {
		en := e.x.Entry(i)
		if en.Server == e.server && en.IsWire() && en.Dir == tape.DirSend && !e.used[i] {
			return e.refSeq, i
		}
	}
	return e.refSeq, n
}

// Divergences returns the divergences so far, in order.
func (e *Engine) Divergences() []Divergence {
	out := make([]Divergence, len(e.divs))
	for i, d := range e.divs {
		out[i] = *d
	}
	return out
}

// Report sums up the replay so far; the recorded requests not yet used are
// listed as unused (this scans the rest of the tape).
func (e *Engine) Report() Report {
	e.scanAll()
	r := Report{
		Server: e.server, Mode: e.opts.Mode.String(),
		Requests: e.requests, Matched: e.matched,
		Divergences:     e.Divergences(),
		Unused:          []Unused{},
		UnusedTolerated: e.opts.Mode == Loose,
		Unanswered:      append([]Unused(nil), e.unanswered...),
		Resyncs:         slices.Clone(e.resyncs),
	}
	for _, seq := range e.reqs {
		if e.used[seq] {
			continue
		}
		en := e.x.Entry(seq)
		if en.Method == "ping" || en.Method == "server/discover" {
			continue // timing and probing, not behaviour
		}
		u := Unused{Seq: seq, Line: en.Line, Method: en.Method}
		if rec, err := e.x.Message(seq); err == nil {
			if p := gjson.GetBytes(rec.Raw, "params"); p.Exists() {
				u.Params = json.RawMessage(p.Raw)
			}
		}
		r.Unused = append(r.Unused, u)
	}
	return r
}

func errorResponse(id []byte, code int, msg string, data []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	m, _ := json.Marshal(msg)
	b = append(b, m...)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, "}}"...)
}

// paramsText renders params compactly for messages, cut at 300 bytes.
func paramsText(p json.RawMessage) string {
	if len(p) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, p) != nil {
		buf.Reset()
		buf.Write(p)
	}
	s := buf.String()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func diffSummary(diff []DiffOp) string {
	parts := make([]string, 0, 3)
	for i, d := range diff {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(diff)-3))
			break
		}
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "; ")
}
