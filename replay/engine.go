package replay

// Replay engine
//
// Engine serves a tape's server side to a live client. It is synchronous
// and deterministic (no goroutine, no clock: time is passed in), and made
// of these parts, one a file:
//
//   - engine.go: the API (options, Receive, Poll, Progress, Report), the
//     output queue and its timing, and the scan that walks the tape once,
//     in order, on demand, collecting the server's recorded requests.
//   - engine_match.go: comparing a live request with a recorded one by
//     meaning (the Normalizer), reading recorded requests, and dispatching
//     a request to the mode's matcher.
//   - engine_strict.go: strict matching: in recorded order, a window for
//     reordered requests, and re-synchronisation after a divergence.
//   - engine_keyed.go: keyed and loose matching: by method and canonical
//     params, with a memo of keys; a miss names the nearest recorded call.
//   - engine_emit.go: answering a matched request (the live id spliced
//     in), emitting the recorded server messages between client messages,
//     the server's own requests and the client's replies, progress tokens,
//     cancellation.
//   - engine_diverge.go: divergences: the error sent or held
//     (EngineOptions.Hold) for Resolve.

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/text"
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
	// Refused holds recorded client requests an authorization challenge
	// refused over HTTP (a $http/exchange 401 or 403 answered them; the
	// client sent them again with a token): the engine neither expects nor
	// answers them; the HTTP edge serves their challenges.
	Refused map[int]bool
	// Episodes, with a zero Span, serves one episode (tape.Episodes) of a
	// tape that holds several: the first whose first client request has
	// the method of the live client's first request, so that each process
	// a client starts gets the recorder run it made (a server/discover
	// probe, then the session). When none has, the whole tape is served.
	Episodes bool
	// MaxWait caps how long a timed replay (Speed > 0) waits for one
	// recorded message after the client's; 0 means DefaultMaxWait, < 0 no
	// cap.
	MaxWait time.Duration
	// Exact tells an empty optional object from an absent one when
	// matching (tape.Normalizer.Exact).
	Exact bool
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
	// Stderr, with Msg nil, is a line the recorded server wrote on its
	// stderr, newline included, for an edge that writes it back
	// (ServeStdio with StdioOptions.Stderr); other edges never get one.
	Stderr []byte

	reqID    tape.ID       // the live request answered, for cancellation
	also     []tape.ID     // the other live requests it answers: a batch rejected whole
	progress bool          // a notifications/progress: the stdio edge lets it land before what follows
	hold     time.Duration // a rule's delay: the stdio edge waits this long before sending it
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

	scanned scanState   // what the scanner has read of the tape
	pos     position    // where the engine stands on the tape and in time
	order   strictState // strict mode's expected request and resyncs
	keys    keyState    // keyed and loose mode's requests by key
	out     emitState   // what goes out: queued outputs, server requests, held answers
	owned   ownerState  // keyed and loose mode's server messages waiting for their client message
	tasks   taskBook    // recorded tasks served from their status timelines (engine_tasks.go)
	report  reportState // what the replay did, for Report, Divergences and the summary
}

// scanState is the scanner's: it walks the tape once, in order, on demand.
type scanState struct {
	next    int   // next tape seq not yet scanned
	reqs    []int // the server's recorded client requests, in order
	skipped int
	methods map[string]int // recorded request count per method (scanned so far)
	answers map[int][]byte // recorded responses, stripped, by seq: repeats skip the file read
	// unreadable holds the recorded requests that could not be read or
	// keyed, by seq, with why: a live request they might have matched
	// diverges naming them instead of being "not on the tape".
	unreadable map[int]error
}

// position is where the engine stands.
type position struct {
	frontier int // recv messages before it were emitted or passed
	lo, hi   int // the span of the tape served, [lo, hi); hi 0 is the tape's end
	refTape  int64
	refSeq   int // the recorded client message the latest live one matched, or -1
	now      time.Time
	// started: a live message was received (the episode is chosen).
	started bool
}

// strictState is strict mode's: requests are expected in recorded order.
type strictState struct {
	next int // index in scanned.reqs of the next expected request
	// passed are recorded requests a strict replay moved past without a
	// match (the client changed or skipped them): never expected again,
	// still reported unused.
	passed  map[int]bool
	resyncs []Resync
	lost    bool // the last request diverged; the next may re-synchronise
}

// keyState is keyed and loose mode's: requests matched by their key.
type keyState struct {
	pending map[[16]byte][]int // key → recorded requests not yet served, in order
	n       int                // scanned.reqs[:n] are in pending
	last    map[[16]byte]int   // key → the last recorded request with it
	served  map[[16]byte]int   // loose: key → the last request whose response was sent
	memo    map[uint64]memoKey
	// window is the recorded request being answered and its response:
	// only the server requests between them belong to the live call and
	// are sent.
	window [2]int
	// notifAt is, by method, where the search for the next recorded
	// client notification resumes.
	notifAt map[string]int
}

// emitState is what goes out, and what waits to go out.
type emitState struct {
	queue       []Output
	outstanding map[tape.ID]int // live id of a server request sent → its tape seq
	srvIDs      int
	awaitCancel map[tape.ID]int // live id → late response to send once cancelled
	// waiting holds recorded answers that followed server requests the
	// recording's client replied to first: each goes out once the live
	// client has replied too.
	waiting []waitingAnswer
	// batchIDs holds, by recorded rejection of a whole batch, the live
	// ids of the batch's members matched so far: the rejection goes out
	// once, with id null, when the last member is matched.
	batchIDs map[int][]tape.ID
	// liveToken holds, by recorded request, the progressToken of the live
	// request that matched it, when it had one: recorded progress
	// notifications carry the live token, or are dropped when the live
	// request asked for none.
	liveToken map[int][]byte
	// early holds recorded server notifications sent ahead of the
	// frontier, because the tape had them on the answer's own HTTP stream
	// (see streamMates): the frontier passes them without sending them
	// again.
	early map[int]bool
	// stderr: the edge writes the server's recorded stderr lines back
	// (set by ServeStdio), so visit queues them (Output.Stderr).
	stderr bool
}

// ownerState is keyed and loose mode's: which client message a recorded
// server message belongs to (owner), and those waiting for it.
type ownerState struct {
	// lastClient is the client message the frontier passed last (-1
	// before any); deferred holds, by client message, the recorded server
	// messages that followed it, passed before the live client sent it:
	// they go out when it does (visit).
	lastClient int
	deferred   map[int][]int
}

// reportState is what the replay did: matches, divergences, answers a rule
// gave, recorded requests used.
type reportState struct {
	used       map[int]bool // recorded requests matched
	divs       []*Divergence
	held       map[int]heldRequest
	requests   int
	matched    int
	unanswered []Unused     // matched requests with no answer on the tape
	ruled      []RuleAnswer // client requests a rule answered or dropped at the edge
}

// NewEngine returns an engine serving x's server opts.Server (or its only
// server). It reads no message body.
func NewEngine(x *tape.Index, opts EngineOptions) (*Engine, error) {
	server, err := PickServer(x, opts.Server)
	if err != nil {
		return nil, err
	}
	e := &Engine{
		x: x, opts: opts, server: server,
		norm: tape.Normalizer{Ignore: opts.Ignore, Exact: opts.Exact},
		scanned: scanState{
			methods:    map[string]int{},
			answers:    map[int][]byte{},
			unreadable: map[int]error{},
		},
		pos:   position{refSeq: -1},
		order: strictState{passed: map[int]bool{}},
		keys: keyState{
			pending: map[[16]byte][]int{},
			last:    map[[16]byte]int{},
			served:  map[[16]byte]int{},
			memo:    map[uint64]memoKey{},
			notifAt: map[string]int{},
		},
		out: emitState{
			outstanding: map[tape.ID]int{},
			awaitCancel: map[tape.ID]int{},
			batchIDs:    map[int][]tape.ID{},
			liveToken:   map[int][]byte{},
			early:       map[int]bool{},
		},
		owned: ownerState{lastClient: -1, deferred: map[int][]int{}},
		report: reportState{
			used: map[int]bool{},
			held: map[int]heldRequest{},
		},
	}
	if sp := opts.Span; sp != (Span{}) {
		if sp.Lo < 0 || sp.Hi < sp.Lo || sp.Hi > x.Len() {
			return nil, fmt.Errorf("engine span [%d, %d): expected 0 <= Lo <= Hi <= %d, the tape's length", sp.Lo, sp.Hi, x.Len())
		}
		e.pos.lo, e.pos.hi = sp.Lo, sp.Hi
		e.scanned.next, e.pos.frontier = sp.Lo, sp.Lo
	}
	if err := refuseSkeleton(x, server, e.pos.lo, e.end()); err != nil {
		return nil, err
	}
	return e, nil
}

// chooseEpisode limits e to the first episode whose first client request
// is a method request, when the tape holds several (see
// EngineOptions.Episodes). It runs before anything is scanned.
func (e *Engine) chooseEpisode(method string) {
	eps := tape.Episodes(e.x, e.server)
	if len(eps) < 2 {
		return
	}
	for _, ep := range eps {
		if ep.First >= 0 && e.x.Entry(ep.First).Method == method {
			e.pos.lo, e.pos.hi = ep.Lo, ep.Hi
			e.scanned.next, e.pos.frontier = ep.Lo, ep.Lo
			return
		}
	}
}

// end is the tape position after the last message e serves.
func (e *Engine) end() int {
	if e.pos.hi > 0 {
		return e.pos.hi
	}
	return e.x.Len()
}

// PickServer resolves the server a replay of x serves (and verify
// drives): the one named, or the tape's only server.
func PickServer(x *tape.Index, want string) (string, error) {
	var names []string
	servers := x.Servers()
	limit, over := x.ServersOverflow()
	if over {
		servers = servers[:len(servers)-1] // "(more)": the names past the limit
	}
	for _, s := range servers {
		if _, lane := tape.ShadowOf(s); s != "" && (!lane || want == s) {
			names = append(names, s) // a shadow lane (record --shadow) is served only when named
		}
	}
	if over && want == "" {
		return "", fmt.Errorf("the tape holds more than %d servers (%s): choose one with --server", limit, text.QuoteList(names))
	}
	if want != "" {
		if slices.Contains(names, want) {
			return want, nil
		}
		if over {
			return "", fmt.Errorf("server %q is not among the tape's first %d servers (%s), the ones replay can serve", want, limit, text.QuoteList(names))
		}
		return "", fmt.Errorf("server %q is not on the tape: expected one of %s", want, text.QuoteList(names))
	}
	switch len(names) {
	case 0:
		return "", nil // a tape without server names
	case 1:
		return names[0], nil
	}
	return "", fmt.Errorf("the tape holds %d servers (%s): choose one with --server", len(names), text.QuoteList(names))
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
	e.pos.now = now
	entries := tape.Classify(msg)
	for _, m := range entries {
		e.receive(m)
	}
	return e.Poll(now)
}

func (e *Engine) receive(m tape.Entry) {
	if !e.pos.started {
		e.pos.started = true
		if m.Kind == tape.KindRequest && e.opts.Episodes && e.opts.Span == (Span{}) {
			e.chooseEpisode(m.Method)
		}
	}
	switch m.Kind {
	case tape.KindRequest:
		e.report.requests++
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
		e.push(jsonrpc.ErrorResponse(raw, CodeParseError, "tapedeck replay: "+m.Problem, nil), e.pos.now, -1, "", nil)
	}
}

// Poll returns the outputs due by now, in order.
func (e *Engine) Poll(now time.Time) []Output {
	n := 0
	for n < len(e.out.queue) && !e.out.queue[n].At.After(now) {
		n++
	}
	if n == 0 {
		return nil
	}
	out := slices.Clone(e.out.queue[:n])
	e.out.queue = slices.Delete(e.out.queue, 0, n)
	return out
}

// NextDue returns when the next queued output falls due.
func (e *Engine) NextDue() (time.Time, bool) {
	if len(e.out.queue) == 0 {
		return time.Time{}, false
	}
	return e.out.queue[0].At, true
}

// push queues an output at its time, after outputs due at the same time.
func (e *Engine) push(msg []byte, at time.Time, seq int, reqID tape.ID, d *Divergence) {
	e.pushOutput(Output{Msg: msg, At: at, Seq: seq, Divergence: d, reqID: reqID})
}

// pushOutput queues o at its time, after outputs due at the same time.
func (e *Engine) pushOutput(o Output) {
	i := len(e.out.queue)
	for i > 0 && e.out.queue[i-1].At.After(o.At) {
		i--
	}
	e.out.queue = slices.Insert(e.out.queue, i, o)
}

// at returns when recorded message seq falls due: now plus its recorded
// gap after the live message being handled, divided by the speed.
func (e *Engine) at(seq int) time.Time {
	if e.opts.Speed <= 0 || e.pos.refTape == 0 {
		return e.pos.now
	}
	t := e.x.Entry(seq).Time
	if t.IsZero() || t.UnixNano() <= e.pos.refTape {
		return e.pos.now
	}
	wait := time.Duration(float64(t.UnixNano()-e.pos.refTape) / e.opts.Speed)
	limit := e.opts.MaxWait
	if limit == 0 {
		limit = DefaultMaxWait
	}
	if limit > 0 && wait > limit {
		// A gap of minutes (or a clock that jumped to 2100) is not worth
		// reproducing: the client would give up first.
		wait = limit
	}
	return e.pos.now.Add(wait)
}

// DefaultMaxWait caps a timed replay's wait for one recorded message when
// EngineOptions.MaxWait is 0.
const DefaultMaxWait = time.Minute

func (e *Engine) setRef(seq int) {
	e.pos.refSeq = seq
	if t := e.x.Entry(seq).Time; !t.IsZero() {
		e.pos.refTape = t.UnixNano()
	}
}

// scanNext scans the tape until one more recorded request of the server is
// found; it reports false at the end of the tape.
func (e *Engine) scanNext() bool {
	n := e.end()
	for e.scanned.next < n {
		i := e.scanned.next
		e.scanned.next++
		en := e.x.Entry(i)
		if en.Server == e.server && en.Kind == tape.KindRequest && en.Dir == tape.DirSend && !e.opts.Refused[i] {
			e.scanned.reqs = append(e.scanned.reqs, i)
			e.scanned.methods[en.Method]++
			return true
		}
	}
	return false
}

func (e *Engine) scanAll() {
	for e.scanNext() {
	}
}

// Progress tells how far the live client has brought the tape: reached is
// the recorded client message its latest message matched (-1 before any),
// awaiting the next recorded client message the tape waits for (every
// recorded server message before it was replayed or is queued), or the
// tape's length when none is left. The debugger plays the tape up to
// awaiting, timed from when reached arrived.
func (e *Engine) Progress() (reached, awaiting int) {
	n := e.x.Len()
	for i := e.pos.frontier; i < n; i++ {
		en := e.x.Entry(i)
		if en.Server == e.server && en.IsWire() && en.Dir == tape.DirSend && !e.report.used[i] && !e.opts.Refused[i] && !(en.Kind == tape.KindRequest && e.isTaskRead(i)) {
			return e.pos.refSeq, i
		}
	}
	return e.pos.refSeq, n
}

// Report sums up the replay so far; the recorded requests not yet used are
// listed as unused (this scans the rest of the tape).
func (e *Engine) Report() Report {
	e.scanAll()
	r := Report{
		Server: e.server, Mode: e.opts.Mode.String(),
		Requests: e.report.requests, Matched: e.report.matched,
		Divergences:     e.Divergences(),
		Unused:          []Unused{},
		UnusedTolerated: e.opts.Mode == Loose,
		Unanswered:      append([]Unused(nil), e.report.unanswered...),
		RuleAnswered:    slices.Clone(e.report.ruled),
		Resyncs:         slices.Clone(e.order.resyncs),
	}
	for _, seq := range e.scanned.reqs {
		if e.report.used[seq] || e.isTaskRead(seq) {
			continue // a task's reads are not one for one (engine_tasks.go)
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
