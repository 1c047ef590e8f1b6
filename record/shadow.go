package record

// Shadow traffic
//
// A shadow sends a copy of the client's messages to a second server, B,
// and records B's side on the same tape as a lane of its own (tape's
// vocabulary: tape.ShadowServer, _meta.shadow, _meta.shadowOf), never
// forwarding anything of B's to the client. The path to A pays for
// putting the message in the shadow's queue (offer, give: a slot in a
// ring under a lock, no copy of the proxy's request body, no wake-up);
// the rest happens off it, and after it:
//
//   - a copy is held in the queue until A's answer to it has been
//     forwarded to the client (the proxy's exchange ended: answered), or
//     ShadowOptions.Hold after it was offered if A is slower, so that B's
//     exchange (its CPU on the machine the client shares) falls outside
//     the client's own exchange with A rather than in it. The queue is
//     taken in order, so B still gets the client's messages in the order
//     the client sent them (the handshake first, notifications in
//     place), and a copy waits at most Hold for its own exchange (a slow
//     A's copy no longer than Hold, and the copies behind it no longer
//     than their own Hold). B's latency on the lane is B's own, from when
//     the copy was sent to B. The stdio shim's copies are not held (it
//     sees no end of an exchange);
//   - a dispatcher takes the copies in order, samples the client's
//     requests (ShadowOptions.Sample), and hands each to its lane: over
//     stdio the one B process, over HTTP one B session a client session
//     (B's session opened by the client's own initialize, its
//     Mcp-Session-Id B's own);
//   - a lane gives each request an id of B's own (mapped back to the
//     client's in _meta.shadowOf, and in a notifications/cancelled),
//     records it, and sends it to B through its transport, in the
//     client's causal order (awaitCause): a message the client sent
//     after it had A's answer to an earlier one goes once B answered
//     that one's copy (or Drain after it was sent), so that B, whose
//     copies go on connections of their own, never handles it first;
//     messages the client sent while A had not answered go at once;
//   - B's answers are recorded as they come; B's own requests are answered
//     with an error, since the client never sees B.
//
// A full queue (B slower than the client, or gone) drops the copy and
// counts it: the lane's close record and its $shadow/dropped records say
// how many were dropped and why. Nothing ever waits for B on the client's
// path; at the end, B's pending answers are waited for no longer than
// ShadowOptions.Drain.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// ShadowOptions configure the shadow of a recording (Stdio.Shadow,
// Proxy.Shadow): where B is, and how much of the traffic it gets.
type ShadowOptions struct {
	// URL is B's Streamable HTTP endpoint (the proxy's shadow).
	URL *url.URL
	// Command and Args start B over stdio (the shim's shadow).
	Command string
	Args    []string
	// Sample is the share of the client's requests B gets, in (0, 1]; 0
	// means 1. The handshake (initialize, server/discover) and
	// notifications always go. The choice is deterministic: with 0.25,
	// every fourth request.
	Sample float64
	// Queue bounds the copies waiting for B; a copy that finds it full is
	// dropped. 0 means DefaultShadowQueue.
	Queue int
	// Drain bounds the wait for B's pending answers when the recording
	// ends; 0 means DefaultShadowDrain.
	Drain time.Duration
	// Hold bounds how long the proxy's copy of a client message waits
	// for A's answer to be forwarded before it goes to B anyway; 0 means
	// DefaultShadowHold.
	Hold time.Duration
	// MaxAnswer bounds one answer of B's over HTTP in bytes (a JSON body,
	// or one SSE event); a longer one is dropped with a note. 0 means
	// DefaultMaxBody.
	MaxAnswer int64
	// Transport does the HTTP requests to B; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Stderr receives B's stderr over stdio; nil discards it.
	Stderr io.Writer
}

// Defaults of ShadowOptions.
const (
	DefaultShadowQueue = 1024
	DefaultShadowDrain = 2 * time.Second
	DefaultShadowHold  = 5 * time.Millisecond
	// shadowInFlight bounds the HTTP requests to B at once; a copy beyond
	// it is dropped.
	shadowInFlight = 64
	// laneQueue bounds the copies a lane holds while its B handles earlier
	// ones.
	laneQueue = 256
)

// shadowItem is one copy on its way to B: a client message, or (over
// HTTP) the session A gave the client's initialize (bind).
type shadowItem struct {
	msg      []byte
	session  string // the client's Mcp-Session-Id ("" before one)
	exchange int64  // the proxy's number of a POST with no session
	bind     string // not empty: the session A's answer to exchange gave
	// end: the client DELETEd its session; B's session is closed too.
	end bool
	// The request's headers B gets as the client sent them.
	protocol, mcpMethod, mcpName string
	// order: the copy's place in the client's causal order (a held copy
	// of the proxy's); after: the marks (shadowQueue.mark) made before it
	// was put in the queue, the copies whose A answer the client had
	// before it sent this message.
	order *shadowOrder
	after uint64
	// done, set by the lane, is closed once B's exchange of this copy
	// ended (answered or failed).
	done chan struct{}
}

// shadowTransport is how the shadow reaches B.
type shadowTransport interface {
	// start makes B reachable (starts its process).
	start(s *shadow) error
	// send delivers a lane's message to B; B's answers go to s.fromB. It
	// may block (it runs off the client's path); sync asks it to return
	// only once B answered (an initialize, which opens B's session).
	send(s *shadow, l *shadowLane, it shadowItem, msg []byte, sync bool) error
	// stop ends B's part: its process, its requests in flight.
	stop()
	// describe names B in the lane's start record.
	describe() map[string]any
	// end closes l's session at B (the client closed its own), once B
	// answered what it was sent on the lane or Drain passed.
	end(s *shadow, l *shadowLane)
}

// shadow is one recording's shadow.
type shadow struct {
	o    ShadowOptions
	rec  *recorder // the lane's: A's tape, the lane's name
	main *recorder // A's: the first write error goes there
	sk   *laneTape
	tr   shadowTransport

	q       *shadowQueue
	closing atomic.Bool
	stopped chan struct{} // the dispatcher ended
	dropped atomic.Int64  // copies that found the queue full, not yet noted

	mu      sync.Mutex
	nextID  int64
	pending map[string]pendingCall // by B's id (JSON text)
	lanes   map[string]*shadowLane
	seen    int64 // the client's requests offered to the sample
	gone    string
	counts  struct{ sent, answered, dropped int64 }
	lanesWG sync.WaitGroup
	flight  sync.WaitGroup
}

type pendingCall struct {
	of      []byte // the client's id
	lane    *shadowLane
	session string // the client's session
	done    chan struct{}
}

// answeredByB closes done (a copy's shadowItem.done): B answered the copy
// (its response came, or its exchange ended). Either may come first.
func (s *shadow) answeredByB(done chan struct{}) {
	if done == nil {
		return
	}
	s.mu.Lock()
	select {
	case <-done:
	default:
		close(done)
	}
	s.mu.Unlock()
}

// shadowLane is one B session: over stdio the process's, over HTTP one a
// client session.
type shadowLane struct {
	in       chan shadowItem
	closed   bool              // in is closed (under shadow.mu)
	session  string            // B's Mcp-Session-Id
	byClient map[string]string // the client's request id -> B's, for cancellations
	client   string            // the client's session
	protocol string            // the client's protocol version, for B's requests of the lane's own
	sem      chan struct{}     // HTTP requests in flight
	flight   sync.WaitGroup    // the lane's HTTP requests in flight
	// wrote is closed once the lane's last HTTP request to B was written
	// (or failed): the next one waits for it, so B's connections carry the
	// copies in the client's order (see httpShadow.send).
	wrote chan struct{}
	// sent are the lane's copies sent to B whose exchange may not have
	// ended (owned by the lane's goroutine): a later copy the client sent
	// after A's answer to one of them waits for B's answer to it.
	sent      []sentCopy
	mu        sync.Mutex
	sessionMu sync.Mutex
}

// sentCopy is a copy sent to B on a lane, its exchange not yet seen ended.
type sentCopy struct {
	order *shadowOrder
	done  chan struct{}
	sent  time.Time
}

func newShadow(o ShadowOptions, main *recorder) (*shadow, error) {
	if o.Sample < 0 || o.Sample > 1 || math.IsNaN(o.Sample) {
		return nil, fmt.Errorf("record: shadow sample %v: expected a share in (0, 1]", o.Sample)
	}
	if o.Sample == 0 {
		o.Sample = 1
	}
	if o.Queue <= 0 {
		o.Queue = DefaultShadowQueue
	}
	if o.Drain <= 0 {
		o.Drain = DefaultShadowDrain
	}
	if o.Hold <= 0 {
		o.Hold = DefaultShadowHold
	}
	rec := &recorder{dest: main.dest, server: tape.ShadowServer(main.server), redact: main.redact, now: main.now}
	s := &shadow{o: o, rec: rec, main: main, q: newShadowQueue(o.Queue, o.Hold),
		stopped: make(chan struct{}), pending: map[string]pendingCall{}, lanes: map[string]*shadowLane{}}
	s.sk = newLaneTape(rec, main.note)
	switch {
	case o.URL != nil:
		s.tr = newHTTPShadow(o)
	case o.Command != "":
		s.tr = &stdioShadow{o: o}
	default:
		return nil, errors.New("record: a shadow needs a URL or a command")
	}
	return s, nil
}

// begin writes the lane's start record and starts B and the dispatcher.
// A B that cannot start is noted on the lane; the recording goes on.
func (s *shadow) begin() {
	if s == nil {
		return
	}
	params := s.tr.describe()
	params["shadowOf"] = s.main.server
	err := s.tr.start(s)
	if err != nil {
		params["error"] = err.Error()
		s.gone = "B did not start: " + err.Error()
	}
	s.note(s.sk.lifecycle(tape.MethodStart, params, map[string]any{tape.MetaShadow: true}))
	go s.dispatch()
}

func (s *shadow) note(err error) { s.main.note(err) }

// offer hands a copy of a client message to the shadow, without ever
// blocking: a full queue drops it (counted, noted later). The copy goes
// to B at once (not held).
func (s *shadow) offer(it shadowItem) {
	if s == nil || s.closing.Load() {
		return
	}
	it.msg = bytes.Clone(it.msg)
	if _, ok := s.q.push(it, true); !ok {
		s.dropped.Add(1)
	}
}

// give is offer of a message the caller never changes or reuses after
// (the proxy's request body, read into a buffer of its own): no copy. The
// copy is held until the caller says A's answer to it was forwarded
// (answered with the order give returns), or Hold passed; nil: the copy
// was dropped (or there is no shadow).
func (s *shadow) give(it shadowItem) *shadowOrder {
	if s == nil || s.closing.Load() {
		return nil
	}
	it.order = new(shadowOrder)
	if _, ok := s.q.push(it, false); !ok {
		s.dropped.Add(1)
		return nil
	}
	return it.order
}

// answered says A's answer to o's copy has been forwarded to the client:
// the copy may go to B, and the client's later messages go to B after
// B's answer to it (forwarding, if not said before).
func (s *shadow) answered(o *shadowOrder) {
	if s == nil || o == nil {
		return
	}
	s.q.mark(o)
	s.q.ready(o.ticket)
}

// forwarding says A's whole answer to o's copy (a JSON body, a 202) is
// being forwarded to the client: whatever the client sends from now on
// may have been sent after it, and goes to B after B's answer to o's
// copy. Said before the answer's bytes reach the client, so that a
// message the client sends at once after them is never taken for one
// sent with them.
func (s *shadow) forwarding(o *shadowOrder) {
	if s == nil || o == nil {
		return
	}
	s.q.mark(o)
}

// end tells the shadow the client DELETEd its session: B's session on
// that lane is closed too, after the copies before it.
func (s *shadow) end(session string) {
	if s == nil || session == "" {
		return
	}
	s.offer(shadowItem{session: session, end: true})
}

// bind tells the shadow the session A's answer gave the client's
// initialize (exchange no): the lane it opened serves that session.
func (s *shadow) bind(no int64, session string) {
	if s == nil || session == "" || no == 0 {
		return
	}
	s.offer(shadowItem{exchange: no, bind: session})
}

// dispatch routes the copies to their lanes, in order.
func (s *shadow) dispatch() {
	defer close(s.stopped)
	var peek tape.Peeker
	for {
		it, ok := s.q.pop()
		if !ok {
			break
		}
		s.noteDropped("the shadow's queue was full (B slower than the client)")
		if it.bind != "" {
			s.mu.Lock()
			if l, ok := s.lanes["#"+strconv.FormatInt(it.exchange, 10)]; ok {
				s.lanes[it.bind] = l
				l.client = it.bind
			}
			s.mu.Unlock()
			continue
		}
		if it.end {
			s.endLane(it)
			continue
		}
		for _, e := range tape.Classify(bytes.TrimSpace(it.msg)) {
			msg := e.Raw
			if e.Kind == tape.KindResponse || e.Kind == tape.KindInvalid {
				continue // answers to A's requests are A's
			}
			h := peek.Peek(msg)
			method := string(h.Method)
			handshake := method == "initialize" || method == tape.MethodDiscover
			if e.Kind == tape.KindRequest && !handshake && !s.sampled() {
				continue
			}
			l := s.lane(it, method == "initialize")
			one := it
			one.msg = msg
			select {
			case l.in <- one:
			default:
				s.drop(one, "B's lane was full (B slower than the client)")
			}
		}
	}
	s.noteDropped("the shadow's queue was full (B slower than the client)")
}

// endLane hands the end of a client session to its lane, the last item
// the lane takes: the lane is closed and forgotten under every key it had.
func (s *shadow) endLane(it shadowItem) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, ok := s.lanes[it.session]
	if !ok || l.closed {
		return // B was never sent anything of this session
	}
	select {
	case l.in <- it:
	default:
		s.mu.Unlock()
		s.drop(it, "B's lane was full (B slower than the client): B's session is left open")
		s.mu.Lock()
	}
	for k, v := range s.lanes {
		if v == l {
			delete(s.lanes, k)
		}
	}
	l.closed = true
	close(l.in)
}

// sampled says whether the next client request goes to B.
func (s *shadow) sampled() bool {
	s.seen++
	p := s.o.Sample
	return p >= 1 || math.Floor(float64(s.seen)*p) != math.Floor(float64(s.seen-1)*p)
}

// lane returns the lane of it's client session, opening one: an
// initialize with no session opens a lane of its own, found later by the
// session A gave it (bind).
func (s *shadow) lane(it shadowItem, initialize bool) *shadowLane {
	key := it.session
	if key == "" && initialize && it.exchange != 0 {
		key = "#" + strconv.FormatInt(it.exchange, 10)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if l, ok := s.lanes[key]; ok {
		return l
	}
	l := &shadowLane{in: make(chan shadowItem, laneQueue), byClient: map[string]string{}, client: it.session,
		sem: make(chan struct{}, shadowInFlight)}
	s.lanes[key] = l
	s.lanesWG.Add(1)
	go s.runLane(l)
	return l
}

// noteDropped writes a $shadow/dropped record for the copies the full
// queue dropped since the last one.
func (s *shadow) noteDropped(reason string) {
	if n := s.dropped.Swap(0); n > 0 {
		s.mu.Lock()
		s.counts.dropped += n
		s.mu.Unlock()
		s.note(s.sk.lifecycle(tape.MethodShadowDropped, map[string]any{"reason": reason, "count": n},
			map[string]any{tape.MetaShadow: true}))
	}
}

// drop notes one copy that never reached B.
func (s *shadow) drop(it shadowItem, reason string) {
	params := map[string]any{"reason": reason, "count": 1}
	var peek tape.Peeker
	if h := peek.Peek(it.msg); h.Kind != tape.KindInvalid {
		params["method"] = string(h.Method)
		if len(h.ID) > 0 {
			params["id"] = string(h.ID)
		}
	} else if it.end {
		params["method"] = http.MethodDelete
	}
	s.mu.Lock()
	s.counts.dropped++
	s.mu.Unlock()
	s.note(s.sk.lifecycle(tape.MethodShadowDropped, params, map[string]any{tape.MetaShadow: true}))
}

// runLane sends a lane's copies to B in order.
func (s *shadow) runLane(l *shadowLane) {
	defer s.lanesWG.Done()
	for it := range l.in {
		s.mu.Lock()
		gone := s.gone
		s.mu.Unlock()
		if gone != "" {
			s.drop(it, gone)
			continue
		}
		if it.end {
			s.tr.end(s, l)
			continue
		}
		msg, of := it.msg, []byte(nil)
		e := tape.Classify(msg)
		if len(e) != 1 {
			continue
		}
		l.mu.Lock()
		if l.protocol == "" || it.protocol != "" {
			l.protocol = it.protocol
		}
		if e[0].Method != "initialize" && it.order != nil {
			it.done = make(chan struct{}) // closed when B answered the copy (awaitCause)
		}
		switch e[0].Kind {
		case tape.KindRequest:
			s.mu.Lock()
			s.nextID++
			id := []byte(strconv.FormatInt(s.nextID, 10))
			of = bytes.Clone([]byte(e[0].ID))
			s.pending[string(id)] = pendingCall{of: of, lane: l, session: it.session, done: it.done}
			s.counts.sent++
			s.mu.Unlock()
			l.byClient[string(e[0].ID)] = string(id)
			msg = jsonrpc.SpliceID(msg, id)
		case tape.KindNotification:
			if e[0].Method == "notifications/cancelled" {
				if rid := gjson.GetBytes(msg, "params.requestId"); rid.Exists() {
					if id, ok := l.byClient[rid.Raw]; ok {
						msg = jsonrpc.Splice(msg, "params.requestId", []byte(id))
					}
				}
			}
		}
		l.mu.Unlock()
		// B sees the client's causal order: a message the client sent
		// after it had A's answer to an earlier one (a request's response,
		// a notification's 202) goes to B once B answered that one's copy.
		// Over HTTP each copy has a connection of its own, and B would
		// otherwise handle the client's tools/list before its
		// notifications/initialized, which the client sent first and
		// waited for. Messages the client sent while A had not answered
		// the earlier one go at once, concurrently as the client's did.
		s.awaitCause(l, it)
		s.record(msg, tape.DirSend, l, of, it.session)
		// initialize is answered by B before the next copy goes (B's
		// session, which the next copy carries, comes with its answer).
		wait := e[0].Method == "initialize"
		if err := s.tr.send(s, l, it, msg, wait); err != nil {
			s.fail(l, msg, err)
		} else if it.done != nil {
			l.sent = append(l.sent, sentCopy{order: it.order, done: it.done, sent: time.Now()})
		}
	}
}

// awaitCause waits until B answered the copies sent on l whose A answer
// the client had before it sent it's message (it.after), each no longer
// than Drain after it was sent (B's answer not given by then is taken
// for one that never comes, as at the end of the recording): a B that
// does not answer holds the lane no longer, one that fails or is gone
// ends the exchange, and the wait, at once. The copies whose exchange
// ended or whose Drain passed are forgotten.
func (s *shadow) awaitCause(l *shadowLane, it shadowItem) {
	var timer *time.Timer
	keep := l.sent[:0]
	for _, c := range l.sent {
		select {
		case <-c.done:
			continue
		default:
		}
		left := s.o.Drain - time.Since(c.sent)
		if left <= 0 {
			continue
		}
		if at := c.order.at.Load(); at != 0 && at <= it.after {
			if timer == nil {
				timer = time.NewTimer(left)
			} else {
				timer.Reset(left)
			}
			select {
			case <-c.done:
				continue
			case <-timer.C:
				continue
			}
		}
		keep = append(keep, c)
	}
	clear(l.sent[len(keep):])
	l.sent = keep
	if timer != nil {
		timer.Stop()
	}
}

// fail notes a copy whose exchange with B failed, counted with the
// dropped ones (a request among them stays counted as sent: B may have
// read it before the exchange broke).
func (s *shadow) fail(l *shadowLane, msg []byte, err error) {
	var peek tape.Peeker
	h := peek.Peek(msg)
	s.mu.Lock()
	if h.Kind == tape.KindRequest {
		delete(s.pending, string(h.ID))
	}
	s.counts.dropped++
	s.mu.Unlock()
	s.note(s.sk.lifecycle(tape.MethodShadowDropped, map[string]any{"reason": "the exchange with B failed: " + err.Error(),
		"method": string(h.Method), "count": 1}, map[string]any{tape.MetaShadow: true}))
}

// ended says B is gone: later copies are dropped.
func (s *shadow) ended(why string) {
	if s.closing.Load() {
		return // B stopped because the recording ended
	}
	s.mu.Lock()
	first := s.gone == ""
	if first {
		s.gone = why
	}
	s.mu.Unlock()
	if first {
		s.note(s.sk.lifecycle(tape.MethodShadowDropped, map[string]any{"reason": why, "count": 0},
			map[string]any{tape.MetaShadow: true}))
	}
}

// fromB records one message B sent on lane l: answers paired with the
// client's request they copy, B's own requests answered with an error.
func (s *shadow) fromB(l *shadowLane, msg []byte, hm tape.HTTPMeta) {
	for _, e := range tape.Classify(bytes.TrimSpace(msg)) {
		var of []byte
		s.mu.Lock()
		client := l.client // bind sets it under s.mu
		s.mu.Unlock()
		switch e.Kind {
		case tape.KindResponse:
			s.mu.Lock()
			p, ok := s.pending[string(e.ID)]
			if ok {
				of, client = p.of, p.session
				delete(s.pending, string(e.ID))
				s.counts.answered++
			}
			s.mu.Unlock()
			if ok {
				s.answeredByB(p.done)
			}
		case tape.KindRequest:
			s.recordHTTP(e.Raw, tape.DirRecv, l, nil, client, hm)
			answer := jsonrpc.ErrorResponse([]byte(e.ID), -32601, "tapedeck: the shadow server's requests are not forwarded to the client", nil)
			s.record(answer, tape.DirSend, l, nil, client)
			if err := s.tr.send(s, l, shadowItem{protocol: l.proto()}, answer, false); err != nil {
				s.fail(l, answer, err)
			}
			continue
		}
		s.recordHTTP(e.Raw, tape.DirRecv, l, of, client, hm)
	}
}

// proto is the client's latest protocol version on the lane.
func (l *shadowLane) proto() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.protocol
}

func (l *shadowLane) bSession() string {
	l.sessionMu.Lock()
	defer l.sessionMu.Unlock()
	return l.session
}

func (l *shadowLane) setSession(id string) (old string) {
	l.sessionMu.Lock()
	defer l.sessionMu.Unlock()
	old = l.session
	if id != "" {
		l.session = id
	}
	return old
}

// close stops taking copies, lets B answer what it was sent for no longer
// than Drain, stops B, and writes the lane's close record.
func (s *shadow) close() {
	if s == nil || !s.closing.CompareAndSwap(false, true) {
		return
	}
	s.q.close()
	<-s.stopped
	s.mu.Lock()
	for _, l := range s.lanes {
		if !l.closed {
			// A lane under two keys (an initialize's exchange and its
			// session) is closed once.
			l.closed = true
			close(l.in)
		}
	}
	s.mu.Unlock()
	deadline := time.Now().Add(s.o.Drain)
	select {
	case <-waitDone(&s.lanesWG):
	case <-time.After(s.o.Drain):
	}
	for time.Now().Before(deadline) {
		s.mu.Lock()
		n := len(s.pending)
		s.mu.Unlock()
		if n == 0 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.tr.stop()
	// The lanes' last copies (ones that waited for B's answer to an
	// earlier one) fail at once now: their records before the close.
	select {
	case <-waitDone(&s.lanesWG):
	case <-time.After(s.o.Drain):
	}
	s.flight.Wait()
	s.mu.Lock()
	params := map[string]any{"reason": "the recording ended", "sent": s.counts.sent, "answered": s.counts.answered,
		"unanswered": len(s.pending), "dropped": s.counts.dropped}
	if s.gone != "" {
		params["error"] = s.gone
	}
	s.mu.Unlock()
	s.note(s.sk.lifecycle(tape.MethodClose, params, map[string]any{tape.MetaShadow: true}))
	s.note(s.sk.close())
}

// waitDone is closed once wg's Wait returns.
func waitDone(wg *sync.WaitGroup) <-chan struct{} {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// newShadow prepares the shim's shadow, if it has one.
func (r *stdioRun) newShadow() error {
	o := r.s.Shadow
	if o == nil {
		return nil
	}
	if r.s.Rules != nil || r.s.Intercept != nil {
		return errors.New("record: a shadow cannot be used with rules or the intercept")
	}
	if o.Command == "" {
		return errors.New("record: the stdio shim's shadow needs a command")
	}
	sh, err := newShadow(*o, r.rec)
	r.shadow = sh
	return err
}

// newShadow prepares the proxy's shadow, if it has one.
func (p *Proxy) newShadow() (*shadow, error) {
	o := p.Shadow
	if o == nil {
		return nil, nil
	}
	if p.Rules != nil || p.Intercept != nil {
		return nil, errors.New("record: a shadow cannot be used with rules or the intercept")
	}
	if o.URL == nil {
		return nil, errors.New("record: the proxy's shadow needs a URL")
	}
	return newShadow(*o, p.rec)
}
