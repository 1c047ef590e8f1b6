package replay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// CodeHeaderMismatch answers a 2026-07-28 request whose Mcp-Method or
// Mcp-Name header disagrees with its body, the code the Go SDK uses.
const CodeHeaderMismatch = -32020

// DefaultMaxBody is the request body limit when HTTPOptions.MaxBody is 0:
// generous, because messages carry base64 images and whole files.
const DefaultMaxBody = 64 << 20

// ProtocolVersions returns the MCP protocol versions the HTTP replay server
// accepts, oldest first.
func ProtocolVersions() []string { return mcphttp.Versions() }

// HTTPOptions configure an HTTPHandler.
type HTTPOptions struct {
	// Path is the MCP endpoint's path; empty means "/mcp".
	Path string
	// Now is the clock; nil means time.Now. Only this edge reads it.
	Now func() time.Time
	// OnDivergence, if not nil, is called with each divergence as it
	// happens, after the handler's lock is released, one call at a time and
	// in the order the divergences happened. With the
	// engine's EngineOptions.Hold, a divergence is reported when it is held
	// (Resolution Pending; answer it with Resolve, passing its Session and
	// ID) and again if it is resolved with the divergence error.
	OnDivergence func(Divergence)
	// OnProgress, if not nil, is called with the engine's Progress after
	// each message of the client and each Resolve, like OnDivergence: after
	// the lock is released, in order. The debugger's playback follows it.
	OnProgress func(reached, awaiting int)
	// Gated holds every answer that replays a recorded message until
	// Release lets that message through; what the engine makes itself
	// (divergence errors, pings) goes at once. The debugger releases
	// messages as its playback delivers them, so a breakpoint holds them.
	Gated bool
	// Admit, if not nil, is called with each request that passed the
	// handler's checks (path, Host, Origin, protocol version, method)
	// before it is served; an error refuses it with 409 Conflict and the
	// error's text. The debugger claims its session for HTTP there, so a
	// request the handler refuses claims nothing.
	Admit func(r *http.Request) error
	// AllowOrigins lists Origin header values accepted besides loopback
	// ones (http://localhost:3000, http://127.0.0.1, http://[::1]), e.g.
	// "https://app.example.com". Other origins get 403, against DNS
	// rebinding.
	AllowOrigins []string
	// AllowHosts lists Host header values (names or addresses, the port
	// ignored) accepted besides loopback ones; "*" accepts any. Other hosts
	// get 403: a DNS-rebinding page reaches a loopback server under its own
	// host name.
	AllowHosts []string
	// MaxBody bounds a request body in bytes; 0 means DefaultMaxBody, < 0
	// no limit. A larger body gets 413 with a JSON-RPC error.
	MaxBody int64
	// NewSessionID makes Mcp-Session-Id values; nil means 128 random bits
	// in hex.
	NewSessionID func() string
}

// HTTPHandler serves an Engine's tape over MCP's Streamable HTTP transport
// at one endpoint: POST carries the client's messages (a request gets its
// answer as JSON or as an SSE stream, as the tape recorded it; a
// notification or a reply gets 202), GET opens the standalone SSE stream
// that carries the server's own requests and notifications when the tape
// had one (405 otherwise), DELETE ends the session.
//
// The Engine stays synchronous: the handler calls it under one mutex and
// does the waiting and the timing (a goroutine polls the engine when it
// replays at a speed > 0). Sessions follow the tape's era: an
// Mcp-Session-Id is issued with the initialize answer when the tape has an
// initialize (and, for a tape recorded over HTTP, had a session), and is
// then required (400 without it, 404 for another). A tape of the
// 2026-07-28 era has no sessions and no GET stream. HTTP statuses and the
// choice of JSON or SSE come from the tape's _meta when it was recorded
// over HTTP, so a server/discover probe rejected with HTTP 400 and
// "id":null is rejected again, and the client falls back to initialize.
//
// Several sessions: each recorded session of the server (split at
// $transport/start, at $http/delete and at a second initialize) is served
// once, in recorded order, each by its own Engine, so sessions may be open
// at once. An initialize beyond the recorded sessions is refused with 409
// and a CodeDiverged error naming the count, and counts as a divergence.
//
// Resumption (eras with sessions): SSE events carry ids "STREAM_INDEX",
// unique within the session; a GET with Last-Event-ID redelivers, on a new
// response, what the stream sent after that event and then goes on with
// it. A stream whose client goes away keeps what it still has to send. An
// SSE stream starts with a priming event (an id and empty data) when the
// client's protocol version is 2025-11-25, or, when the client named
// none, when the tape's server primed its streams.
//
// Server messages that no open stream can carry (recorded after their
// request's answer, with no GET stream open) are held and sent first on
// the next stream that opens: the GET stream, or the next request's
// answer, which then becomes an SSE stream. Dropped counts what never
// found a stream.
//
// Requests are checked against DNS rebinding (Host and Origin), their
// body size (HTTPOptions.MaxBody) and their MCP-Protocol-Version.
//
// Call Close to end the open streams before shutting the server down.
type HTTPHandler struct {
	x      *tape.Index
	server string
	eo     EngineOptions // for the engine of each recorded session
	first  *Engine       // serves the first recorded session
	opts   HTTPOptions
	guard  mcphttp.Guard
	path   string
	now    func() time.Time

	// What the tape says about its transport, found once.
	httpTape  bool   // recorded over HTTP: statuses and streams are in _meta
	sessions  bool   // the era has Mcp-Session-Id (and resumable streams)
	getStream bool   // the client may open the standalone GET stream
	primeTape bool   // the recorded server gave event ids in a 2025-11-25 session
	spans     []span // the recorded sessions
	preInit   []bool // spans[i] has client traffic before its initialize

	mu         sync.Mutex
	notes      []func()            // callbacks to run once mu is released, in order
	delivering bool                // a goroutine is running notes: others leave theirs to it
	lone       *session            // the only session of an era without sessions
	byID       map[string]*session // live sessions
	all        []*session          // claimed sessions; all[i] replays spans[i]
	fresh      *session            // claimed by sessionless traffic before its initialize
	issued     bool                // a session id was issued once
	refused    []Divergence        // initialize beyond the recorded sessions
	dropped    int
	released   int           // Gated: outputs replaying messages before it go out
	gated      []gatedOutput // Gated: outputs waiting for Release, in order
	wake       chan struct{}
	done       chan struct{}
	closed     bool
	pumpDone   chan struct{}
	once       sync.Once
}

// gatedOutput is an output held for Release, with its session and the
// exchange whose POST brought it out.
type gatedOutput struct {
	o      Output
	sess   *session
	origin *exchange
}

// span is a recorded session: tape positions [lo, hi).
type span struct{ lo, hi int }

// Bounds on what the handler keeps.
const (
	maxHeld     = 1 << 16 // server messages held for the next stream, per session
	maxHistory  = 1024    // sent events kept per stream for redelivery
	maxRetained = 16      // finished streams kept per session for redelivery
)

// wireInfo is what the tape recorded about how a server message travelled.
type wireInfo struct {
	kind   tape.Kind
	viaGET bool // on the standalone stream
	sse    bool // on an SSE stream
	nullID bool // a response with "id":null (an HTTP-level rejection)
	status int  // the HTTP status of the POST that carried it, 0 if none
}

// session is one live session and the engine replaying its recorded one.
type session struct {
	id      string
	e       *Engine
	version string // the protocol version the initialize asked for
	pending map[tape.ID]*exchange
	open    []*exchange // request exchanges not yet answered, oldest first
	get     *stream     // the standalone stream, once needed
	streams map[int]*stream
	nstream int
	retired []int    // finished streams still kept, oldest first
	held    [][]byte // server messages waiting for a stream to open
	wire    map[int]wireInfo
	ended   bool
}

func newSession(e *Engine) *session {
	return &session{e: e, pending: map[tape.ID]*exchange{}, streams: map[int]*stream{}, wire: map[int]wireInfo{}}
}

// stream is the sequence of events one SSE stream carries: those sent
// (kept for redelivery, up to maxHistory) and those not yet sent.
type stream struct {
	no       int    // the stream's number in its session: 0 is the GET stream
	evs      []item // evs[i] is event base+i
	base     int
	sent     int  // events before it were written to a client
	finished bool // the last event is queued
	attached bool // a response is writing it
	gen      int  // bumped when a resumption takes the stream over
	primed   bool // the priming event was queued
	ex       *exchange
	notify   chan struct{}
}

type item struct {
	msg    []byte // nil for a priming event
	status int
	sse    bool
	final  bool
}

func newStream(no int) *stream { return &stream{no: no, notify: make(chan struct{}, 1)} }

// push queues it; the caller holds the handler's lock.
func (s *stream) push(it item) {
	s.evs = append(s.evs, it)
	if it.final {
		s.finished = true
	}
	s.wake()
}

func (s *stream) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish marks the stream as ending after what is queued.
func (s *stream) finish() {
	s.finished = true
	s.wake()
}

// unsent counts the events queued but not written.
func (s *stream) unsent() int { return s.base + len(s.evs) - s.sent }

// prime queues the priming event before the events not yet sent.
func (s *stream) prime() {
	if s.primed {
		return
	}
	s.primed = true
	s.evs = slices.Insert(s.evs, s.sent-s.base, item{})
}

// trim forgets sent events beyond the history bound.
func (s *stream) trim() {
	if d := s.sent - s.base - maxHistory; d > maxHistory {
		s.evs = slices.Clone(s.evs[d:])
		s.base += d
	}
}

// exchange is a POST carrying requests, waiting for their answers.
type exchange struct {
	*stream
	ids     []tape.ID // live request ids not yet answered
	batch   bool
	session string // the session issued with it (initialize)
	version string // the protocol version the request named
}

// NewHTTPHandler returns a handler serving x's server eo.Server (or its
// only server), with an Engine of options eo for each session the tape
// recorded. It scans the tape's index (no message bodies but the first
// few) to learn its transport, era and recorded sessions.
func NewHTTPHandler(x *tape.Index, eo EngineOptions, o HTTPOptions) (*HTTPHandler, error) {
	if eo.Span != (Span{}) {
		return nil, errors.New("HTTP replay: the handler spans the engines of its recorded sessions itself: expected EngineOptions without a Span")
	}
	first, err := NewEngine(x, eo)
	if err != nil {
		return nil, err
	}
	eo.Server = first.Server()
	h := &HTTPHandler{
		x: x, server: eo.Server, eo: eo, opts: o, path: o.Path, now: o.Now,
		guard: mcphttp.Guard{AllowHosts: o.AllowHosts, AllowOrigins: o.AllowOrigins},
		byID:  map[string]*session{},
		wake:  make(chan struct{}, 1),
		done:  make(chan struct{}),
	}
	if h.path == "" {
		h.path = "/mcp"
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.learnTape()
	h.first = first
	if len(h.spans) > 1 {
		h.first = h.engine(0)
	}
	if !h.sessions {
		h.lone = newSession(h.first)
		h.all = []*session{h.lone}
	}
	if eo.Speed > 0 {
		h.pumpDone = make(chan struct{})
		go h.pump()
	}
	return h, nil
}

// engine returns a new engine for recorded session i.
func (h *HTTPHandler) engine(i int) *Engine {
	eo := h.eo
	eo.Span = Span{h.spans[i].lo, h.spans[i].hi}
	if eo.Span.Hi == 0 { // the last recorded session: to the tape's end
		eo.Span.Hi = h.x.Len()
	}
	e, err := NewEngine(h.x, eo)
	if err != nil { // the spans come from the tape: cannot happen
		panic(fmt.Sprintf("HTTP replay: engine for recorded session %d: %v", i, err))
	}
	return e
}

// notify queues a callback of HTTPOptions (when set) to run after the lock
// is released; the caller holds the lock.
func (h *HTTPHandler) notify(f func(), set bool) {
	if set {
		h.notes = append(h.notes, f)
	}
}

// unlock releases the lock and runs the callbacks queued under it, in the
// order they were queued, without the lock: a callback may take its own
// locks, or call the handler, with no lock order across packages to keep.
// One goroutine delivers at a time; another that unlocks meanwhile leaves
// its callbacks to it, so the order holds across requests.
func (h *HTTPHandler) unlock() {
	if h.delivering || len(h.notes) == 0 {
		h.mu.Unlock()
		return
	}
	h.delivering = true
	for len(h.notes) > 0 {
		notes := h.notes
		h.notes = nil
		h.mu.Unlock()
		for _, f := range notes {
			f()
		}
		h.mu.Lock()
	}
	h.delivering = false
	h.mu.Unlock()
}

// learnTape finds whether the tape was recorded over HTTP, with sessions,
// with a standalone GET stream and with event ids, and where its recorded
// sessions begin.
func (h *HTTPHandler) learnTape() {
	x, server := h.x, h.server
	var hasInit, hasGet, initSession, eventIDs bool
	var initVersion string
	looked := false
	// Session boundaries: a $transport/start or $http/delete after wire
	// traffic, or a second initialize in the same session.
	starts := []int{0}
	pre := []bool{false}
	reqs := []int{0}
	wire, inited := false, false
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Server != server {
			continue
		}
		switch {
		case en.Kind == tape.KindLifecycle && (en.Method == tape.MethodStart || en.Method == "$http/delete"):
			if wire {
				if en.Method == tape.MethodStart {
					starts = append(starts, i)
				} else {
					starts = append(starts, i+1)
				}
				pre = append(pre, false)
				reqs = append(reqs, 0)
				wire, inited = false, false
			}
		case en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.Method == "initialize":
			if inited {
				starts = append(starts, i)
				pre = append(pre, false)
				reqs = append(reqs, 0)
			} else if wire {
				pre[len(pre)-1] = true
			}
			wire, inited = true, true
		case en.IsWire():
			wire = true
		}
		if en.Kind == tape.KindRequest && en.Dir == tape.DirSend {
			reqs[len(reqs)-1]++
		}
		switch {
		case en.Kind == tape.KindLifecycle && en.Method == "$http/get":
			hasGet = true
		case en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.Method == "initialize" && !hasInit:
			hasInit = true
			if m, err := x.Message(i); err == nil {
				initSession = gjson.GetBytes(m.Raw, "_meta.session").Exists()
				initVersion = gjson.GetBytes(m.Raw, "params.protocolVersion").String()
				h.httpTape = h.httpTape || gjson.GetBytes(m.Raw, "_meta.transport").String() == "http"
			}
			looked = true
		case en.Kind != tape.KindLifecycle && en.Dir == tape.DirRecv && h.httpTape && hasInit && !eventIDs:
			if m, err := x.Message(i); err == nil {
				eventIDs = gjson.GetBytes(m.Raw, "_meta.event").Exists()
			}
		case !looked && en.IsWire():
			if m, err := x.Message(i); err == nil {
				h.httpTape = gjson.GetBytes(m.Raw, "_meta.transport").String() == "http"
			}
			looked = true
		}
	}
	h.sessions = hasInit && (!h.httpTape || initSession)
	// A stdio tape never had a GET stream, but its server requests and
	// notifications need one to travel outside a request's answer.
	h.getStream = hasGet || (!h.httpTape && h.sessions)
	h.primeTape = eventIDs && initVersion >= mcphttp.PrimingVersion
	if !h.sessions {
		starts, pre, reqs = []int{0}, []bool{false}, []int{0}
	}
	for i, lo := range starts {
		if i > 0 && reqs[i] == 0 {
			continue // no request (a DELETE at the end): not a session to serve
		}
		if n := len(h.spans); n > 0 {
			h.spans[n-1].hi = lo
		}
		h.spans = append(h.spans, span{lo: lo})
		h.preInit = append(h.preInit, pre[i])
	}
	if n := len(h.spans); n > 1 && reqs[0] == 0 {
		// Lifecycle records before the first session's traffic.
		h.spans = slices.Delete(h.spans, 0, 1)
		h.preInit = slices.Delete(h.preInit, 0, 1)
		h.spans[0].lo = 0
	}
}

// Close ends the open streams and the timing goroutine. Requests still
// waiting for an answer return without one.
func (h *HTTPHandler) Close() {
	h.once.Do(func() {
		h.mu.Lock()
		h.closed = true
		h.unlock()
		close(h.done)
	})
	if h.pumpDone != nil {
		<-h.pumpDone
	}
}

// Report is the replay's report, taken under the handler's lock: with
// several recorded sessions, the sum of their engines' reports (a session
// never opened lists its requests as unused), and the sessions refused.
func (h *HTTPHandler) Report() Report {
	h.mu.Lock()
	defer h.unlock()
	if len(h.spans) <= 1 && len(h.refused) == 0 {
		return h.first.Report()
	}
	var r Report
	for i := range h.spans {
		e := h.first
		switch {
		case i < len(h.all):
			e = h.all[i].e
		case i > 0:
			e = h.engine(i)
		}
		er := e.Report()
		if i == 0 {
			r = er
			continue
		}
		r.Requests += er.Requests
		r.Matched += er.Matched
		r.Divergences = append(r.Divergences, er.Divergences...)
		r.Unused = append(r.Unused, er.Unused...)
	}
	r.Divergences = append(r.Divergences, h.refused...)
	for i := range r.Divergences {
		r.Divergences[i].ID = i + 1
	}
	return r
}

// Dropped counts the server messages the tape holds that never reached the
// client: held for a stream that never opened, queued on a stream whose
// client went away and never resumed it, or the answers to requests whose
// client went away in an era without resumption. It is final once Close
// has returned and the server has shut down.
func (h *HTTPHandler) Dropped() int {
	h.mu.Lock()
	defer h.unlock()
	n := h.dropped
	for _, s := range h.all {
		n += len(s.held)
		for _, st := range s.streams {
			n += st.unsent()
		}
		if s.get != nil && s.streams[0] != s.get {
			n += s.get.unsent()
		}
	}
	return n
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.path {
		http.Error(w, fmt.Sprintf("tapedeck replay: no MCP endpoint at %s: expected %s", r.URL.Path, h.path), http.StatusNotFound)
		return
	}
	if !h.guard.HostAllowed(r.Host) {
		http.Error(w, fmt.Sprintf("tapedeck replay: host %q is not allowed: expected a loopback host (localhost, 127.0.0.1, [::1]) or an allowed one (--allow-host)", r.Host), http.StatusForbidden)
		return
	}
	if o := r.Header.Get("Origin"); !h.guard.OriginAllowed(o) {
		http.Error(w, fmt.Sprintf("tapedeck replay: origin %q is not allowed: expected a loopback origin", o), http.StatusForbidden)
		return
	}
	if v := r.Header.Get(mcphttp.HeaderProtocol); v != "" && !mcphttp.KnownVersion(v) {
		msg := fmt.Sprintf("tapedeck replay: unsupported MCP-Protocol-Version %q: expected one of %s", v, strings.Join(mcphttp.Versions(), ", "))
		writeJSON(w, http.StatusBadRequest, errorResponse([]byte("null"), CodeInvalidRequest, msg, nil))
		return
	}
	if h.opts.Admit != nil && slices.Contains(strings.Split(h.allow(), ", "), r.Method) {
		if err := h.opts.Admit(r); err != nil {
			http.Error(w, err.Error(), http.StatusConflict)
			return
		}
	}
	switch r.Method {
	case http.MethodPost:
		h.post(w, r)
	case http.MethodGet:
		h.serveGet(w, r)
	case http.MethodDelete:
		h.delete(w, r)
	default:
		w.Header().Set("Allow", h.allow())
		http.Error(w, fmt.Sprintf("tapedeck replay: method %s not allowed: expected %s", r.Method, h.allow()), http.StatusMethodNotAllowed)
	}
}

func (h *HTTPHandler) allow() string {
	m := []string{http.MethodPost}
	if h.getStream || h.sessions {
		m = append(m, http.MethodGet)
	}
	if h.sessions {
		m = append(m, http.MethodDelete)
	}
	return strings.Join(m, ", ")
}

// claim starts the session replaying the next recorded one; nil when all
// were served. The caller holds the lock.
func (h *HTTPHandler) claim() *session {
	i := len(h.all)
	if i >= len(h.spans) {
		return nil
	}
	e := h.first
	if i > 0 {
		e = h.engine(i)
	}
	s := newSession(e)
	// The id is chosen now, though issued only with the initialize answer,
	// so that a divergence before it (a probe) names its session already.
	s.id = h.newSessionID()
	h.all = append(h.all, s)
	return s
}

// sessionFor finds the session a message belongs to, applying the session
// rules; it writes the error and returns nil when they fail. initialize
// opens a new session (id is the JSON-RPC id, for the refusal).
func (h *HTTPHandler) sessionFor(w http.ResponseWriter, r *http.Request, initialize bool, id tape.ID) *session {
	if !h.sessions {
		return h.lone
	}
	sid := r.Header.Get(mcphttp.HeaderSession)
	h.mu.Lock()
	defer h.unlock()
	if initialize {
		s := h.fresh
		if s == nil {
			s = h.claim()
		}
		if s == nil {
			h.refuse(w, id)
			return nil
		}
		h.fresh = nil
		h.byID[s.id] = s
		h.issued = true
		return s
	}
	if sid == "" {
		// Traffic before initialize (a server/discover probe) belongs to
		// the next recorded session, when it recorded some or before any
		// session was issued; else the session header is missing.
		if h.fresh == nil && (!h.issued || len(h.all) < len(h.spans) && h.preInit[len(h.all)]) {
			h.fresh = h.claim()
		}
		if h.fresh != nil {
			return h.fresh
		}
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header: expected the session id the initialize answer gave", http.StatusBadRequest)
		return nil
	}
	s := h.byID[sid]
	if s == nil {
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found: initialize again", sid), http.StatusNotFound)
		return nil
	}
	return s
}

// refuse answers an initialize beyond the recorded sessions; the caller
// holds the lock.
func (h *HTTPHandler) refuse(w http.ResponseWriter, id tape.ID) {
	n := len(h.spans)
	d := Divergence{
		Server: h.server, Reason: ReasonBeyondEnd, Method: "initialize", RequestID: json.RawMessage(id),
		Expected: -1, Resolution: SendError,
		Message: fmt.Sprintf("replay mismatch for server '%s': initialize would open session %d, but the tape recorded %s; each recorded session is served once, in order: restart the replay to serve them again", h.server, len(h.all)+1, plural(n, "session")),
	}
	h.refused = append(h.refused, d)
	h.notify(func() { h.opts.OnDivergence(d) }, h.opts.OnDivergence != nil)
	data, _ := json.Marshal(d)
	writeJSON(w, http.StatusConflict, errorResponse([]byte(id), CodeDiverged, d.Message, data))
}

func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	limit := h.opts.MaxBody
	if limit == 0 {
		limit = DefaultMaxBody
	}
	rd := io.Reader(r.Body)
	if limit > 0 {
		rd = http.MaxBytesReader(w, r.Body, limit)
	}
	body, err := io.ReadAll(rd)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			msg := fmt.Sprintf("tapedeck replay: request body larger than %d bytes: raise the limit with --max-body", limit)
			writeJSON(w, http.StatusRequestEntityTooLarge, errorResponse([]byte("null"), CodeInvalidRequest, msg, nil))
			return
		}
		http.Error(w, "tapedeck replay: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	body = bytes.TrimSpace(body)
	entries := tape.Classify(body)
	var ids []tape.ID
	initialize := false
	var initID tape.ID
	for _, m := range entries {
		switch m.Kind {
		case tape.KindInvalid:
			writeJSON(w, http.StatusBadRequest, errorResponse([]byte("null"), CodeParseError, "tapedeck replay: "+m.Problem, nil))
			return
		case tape.KindRequest:
			ids = append(ids, m.ID)
			if m.Method == "initialize" && !initialize {
				initialize, initID = true, m.ID
			}
		}
	}
	if len(entries) == 1 {
		if msg := headerMismatch(r.Header, entries[0]); msg != "" {
			id := []byte("null")
			if entries[0].ID != "" {
				id = []byte(entries[0].ID)
			}
			writeJSON(w, http.StatusBadRequest, errorResponse(id, CodeHeaderMismatch, "tapedeck replay: "+msg, nil))
			return
		}
	}
	sess := h.sessionFor(w, r, initialize, initID)
	if sess == nil {
		return
	}

	if len(ids) == 0 {
		// Notifications and replies: accepted, whatever the tape makes of them.
		h.mu.Lock()
		h.dispatch(sess, sess.e.Receive(body, h.now()), nil)
		h.progressed(sess)
		h.unlock()
		h.kick()
		w.WriteHeader(http.StatusAccepted)
		return
	}

	h.mu.Lock()
	for _, id := range ids {
		if _, busy := sess.pending[id]; busy {
			h.unlock()
			writeJSON(w, http.StatusBadRequest, errorResponse([]byte(id), CodeInvalidRequest, "tapedeck replay: request id "+string(id)+" is already in flight", nil))
			return
		}
	}
	sess.nstream++
	ex := &exchange{stream: newStream(sess.nstream), ids: ids, batch: len(entries) > 1, version: r.Header.Get(mcphttp.HeaderProtocol)}
	ex.ex, ex.attached = ex, true
	if initialize && h.sessions {
		ex.session = sess.id
		sess.version = gjson.GetBytes(entries[0].Raw, "params.protocolVersion").String()
	}
	if ex.version == "" {
		ex.version = sess.version
	}
	sess.streams[ex.no] = ex.stream
	// What no stream could carry goes first on this one.
	for _, m := range sess.held {
		ex.push(item{msg: m, sse: true})
	}
	sess.held = nil
	for _, id := range ids {
		sess.pending[id] = ex
	}
	sess.open = append(sess.open, ex)
	h.dispatch(sess, sess.e.Receive(body, h.now()), ex)
	h.progressed(sess)
	h.unlock()
	h.kick()
	h.answer(w, r, sess, ex)
}

// CodeInvalidRequest is JSON-RPC's "invalid request", answered to a request
// whose id is already in flight, a body over the size limit, or an
// unsupported MCP-Protocol-Version.
const CodeInvalidRequest = -32600

// headerMismatch checks the 2026-07-28 headers that name a request's
// method and target against its body, as a server of that era must.
func headerMismatch(hd http.Header, m tape.Entry) string {
	if v := hd.Get(mcphttp.HeaderProtocol); v == "" || v < mcphttp.ModernVersion || m.Kind != tape.KindRequest {
		return ""
	}
	got := hd.Get(mcphttp.HeaderMethod)
	if got == "" {
		return "missing Mcp-Method header: expected " + m.Method
	}
	if got != m.Method {
		return fmt.Sprintf("Mcp-Method header %q does not match the body's method %q", got, m.Method)
	}
	if name, ok := requestName(m.Method, m.Raw); ok {
		if h := hd.Get(mcphttp.HeaderName); h != name {
			return fmt.Sprintf("Mcp-Name header %q does not match the body's %q", h, name)
		}
	}
	return ""
}

// requestName is what the Mcp-Name header carries for a method.
func requestName(method string, msg []byte) (string, bool) {
	switch method {
	case "tools/call", "prompts/get":
		return gjson.GetBytes(msg, "params.name").String(), true
	case "resources/read":
		return gjson.GetBytes(msg, "params.uri").String(), true
	}
	return "", false
}

func (h *HTTPHandler) newSessionID() string {
	if h.opts.NewSessionID != nil {
		return h.opts.NewSessionID()
	}
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// primes reports whether a stream of a client speaking version starts
// with a priming event.
func (h *HTTPHandler) primes(version string) bool {
	if !h.sessions {
		return false
	}
	if version == "" {
		return h.primeTape
	}
	return version >= mcphttp.PrimingVersion && version < mcphttp.ModernVersion
}

// answer writes an exchange's answer as it comes: JSON when it is a lone
// response the tape did not send on a stream, else an SSE stream.
func (h *HTTPHandler) answer(w http.ResponseWriter, r *http.Request, sess *session, ex *exchange) {
	for {
		h.mu.Lock()
		n := ex.unsent()
		h.unlock()
		if n > 0 {
			break
		}
		select {
		case <-ex.notify:
		case <-r.Context().Done():
			h.detach(sess, ex.stream, 0, -1)
			return
		case <-h.done:
			h.detach(sess, ex.stream, 0, -1)
			http.Error(w, "tapedeck replay: shutting down before the tape answered", http.StatusServiceUnavailable)
			return
		}
	}
	if ex.session != "" {
		w.Header().Set(mcphttp.HeaderSession, ex.session)
	}
	h.mu.Lock()
	if first := ex.evs[0]; len(ex.evs) == 1 && first.final && !first.sse && !ex.batch {
		ex.sent = 1
		ex.attached = false
		h.retire(sess, ex.stream)
		h.unlock()
		status := first.status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, first.msg)
		return
	}
	if h.primes(ex.version) {
		ex.prime()
	}
	h.unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	h.pipe(w, r, sess, ex.stream)
}

// pipe writes stream s as SSE events until it finishes, its client goes
// away or the handler closes. The caller has attached s.
func (h *HTTPHandler) pipe(w http.ResponseWriter, r *http.Request, sess *session, s *stream) {
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	var buf []byte
	h.mu.Lock()
	gen := s.gen
	h.unlock()
	for {
		h.mu.Lock()
		if s.gen != gen {
			// A resumption took the stream over: pass on the wake-up
			// this writer may have taken, and leave the stream to it.
			h.unlock()
			s.wake()
			return
		}
		from := s.sent
		evs := s.evs[from-s.base:]
		s.sent += len(evs)
		finished := s.finished
		h.unlock()
		if len(evs) > 0 {
			buf = buf[:0]
			for i, it := range evs {
				ev := sse.Event{Data: it.msg, Retry: -1}
				if h.sessions {
					ev.ID, ev.HasID = strconv.Itoa(s.no)+"_"+strconv.Itoa(from+i), true
				}
				buf = sse.Append(buf, ev)
			}
			if _, err := w.Write(buf); err != nil {
				h.detach(sess, s, gen, from)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if finished {
			h.detach(sess, s, gen, -1)
			return
		}
		select {
		case <-s.notify:
		case <-r.Context().Done():
			h.detach(sess, s, gen, -1)
			return
		case <-h.done:
			h.detach(sess, s, gen, -1)
			return
		}
	}
}

// detach marks s as no longer written by the writer of generation gen,
// rolling its sent mark back to unsent when that is >= 0 (a failed write).
// In an era without resumption, a request's answer whose client went away
// is abandoned.
func (h *HTTPHandler) detach(sess *session, s *stream, gen, unsent int) {
	h.mu.Lock()
	defer h.unlock()
	if s.gen != gen {
		return // taken over by a resumption
	}
	s.attached = false
	if unsent >= 0 {
		s.sent = unsent
	}
	s.trim()
	if s.finished && s.unsent() == 0 {
		h.retire(sess, s)
		return
	}
	if !h.sessions && s.ex != nil && !h.closed {
		h.abandon(sess, s.ex)
	}
}

// retire keeps a finished stream for redelivery, forgetting the oldest
// beyond maxRetained; the caller holds the lock.
func (h *HTTPHandler) retire(sess *session, s *stream) {
	if !h.sessions {
		delete(sess.streams, s.no)
		return
	}
	if slices.Contains(sess.retired, s.no) {
		return
	}
	sess.retired = append(sess.retired, s.no)
	if len(sess.retired) > maxRetained {
		delete(sess.streams, sess.retired[0])
		sess.retired = sess.retired[1:]
	}
}

// abandon forgets an exchange whose client went away, counting what it
// still had to send; the caller holds the lock.
func (h *HTTPHandler) abandon(sess *session, ex *exchange) {
	for _, id := range ex.ids {
		if sess.pending[id] == ex {
			delete(sess.pending, id)
		}
	}
	sess.open = slices.DeleteFunc(sess.open, func(o *exchange) bool { return o == ex })
	h.dropped += ex.unsent()
	ex.sent = ex.base + len(ex.evs)
	ex.finished = true
	delete(sess.streams, ex.no)
}

func writeJSON(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	w.Write(msg)
}

// dispatch routes the engine's outputs to the streams that carry them; the
// caller holds the lock. origin is the exchange whose POST produced them.
func (h *HTTPHandler) dispatch(sess *session, outs []Output, origin *exchange) {
	for _, o := range outs {
		if o.Divergence != nil && h.opts.OnDivergence != nil {
			d := *o.Divergence
			d.Session = sess.id
			h.notify(func() { h.opts.OnDivergence(d) }, true)
		}
		switch {
		case o.Msg == nil:
		case h.opts.Gated && o.Seq >= h.released:
			h.gated = append(h.gated, gatedOutput{o, sess, origin})
		default:
			h.route(sess, o, origin)
		}
	}
}

// progressed reports a session engine's progress to OnProgress; the caller
// holds the lock.
func (h *HTTPHandler) progressed(sess *session) {
	if h.opts.OnProgress != nil {
		reached, awaiting := sess.e.Progress()
		h.notify(func() { h.opts.OnProgress(reached, awaiting) }, true)
	}
}

// Release lets the held answers (HTTPOptions.Gated) that replay recorded
// messages before upTo go to the client, in order.
func (h *HTTPHandler) Release(upTo int) {
	h.mu.Lock()
	h.released = max(h.released, upTo)
	rest := h.gated[:0]
	for _, g := range h.gated {
		if g.o.Seq < h.released {
			h.route(g.sess, g.o, g.origin)
		} else {
			rest = append(rest, g)
		}
	}
	clear(h.gated[len(rest):])
	h.gated = rest
	h.unlock()
	h.kick()
}

// Resolve answers divergence id held (EngineOptions.Hold) by the engine of the
// session sid (Divergence.Session, as OnDivergence reported it)
// and sends what that yields: the divergence error, or the recorded answer
// (subject to Release when Gated). Each session numbers its divergences
// from 1, so the id alone does not say whose it is.
func (h *HTTPHandler) Resolve(sid string, id int, r Resolution) error {
	h.mu.Lock()
	var sess *session
	for _, s := range append([]*session{h.lone}, h.all...) {
		if s != nil && s.id == sid {
			sess = s
			break
		}
	}
	if sess == nil {
		h.unlock()
		return fmt.Errorf("divergence %d: no session %q: expected the session OnDivergence reported", id, sid)
	}
	outs, err := sess.e.Resolve(id, r, h.now())
	if err == nil {
		h.dispatch(sess, outs, nil)
		h.progressed(sess)
	}
	h.unlock()
	h.kick()
	return err
}

func (h *HTTPHandler) route(sess *session, o Output, origin *exchange) {
	info := wireInfo{kind: tape.KindResponse} // what the engine makes itself is a response
	if o.Seq >= 0 {
		info = h.info(sess, o.Seq)
	}
	if info.kind == tape.KindResponse {
		ex := sess.pending[o.reqID]
		if ex == nil {
			h.dropped++ // its client went away
			return
		}
		delete(sess.pending, o.reqID)
		ex.ids = slices.DeleteFunc(ex.ids, func(id tape.ID) bool { return id == o.reqID })
		msg := o.Msg
		if info.nullID {
			// Rejected before the server read the id: keep "id":null.
			msg = spliceID(msg, []byte("null"))
		}
		final := len(ex.ids) == 0
		ex.push(item{msg: msg, status: info.status, sse: info.sse, final: final})
		if final {
			sess.open = slices.DeleteFunc(sess.open, func(e *exchange) bool { return e == ex })
		}
		return
	}
	// A server notification or request: on the stream the tape had it on,
	// or else on the answer to the request that brought it out, or else on
	// the latest answer still open (a tape recorded over HTTP says it came
	// on a POST's stream; a stdio tape prefers the GET stream), or else
	// held for the next stream to open.
	if info.viaGET && h.getStream {
		h.standalone(sess).push(item{msg: o.Msg})
		return
	}
	getOpen := sess.get != nil && sess.get.attached
	if !info.viaGET {
		if origin != nil && !origin.finished {
			origin.push(item{msg: o.Msg, sse: true})
			return
		}
		if n := len(sess.open); n > 0 && (h.httpTape || !getOpen) {
			sess.open[n-1].push(item{msg: o.Msg, sse: true})
			return
		}
	}
	switch {
	case getOpen:
		sess.get.push(item{msg: o.Msg})
	case len(sess.held) < maxHeld:
		sess.held = append(sess.held, o.Msg)
	default:
		h.dropped++
	}
}

// standalone returns the session's GET stream, made on first use; the
// caller holds the lock.
func (h *HTTPHandler) standalone(sess *session) *stream {
	if sess.get == nil {
		sess.get = newStream(0)
		sess.streams[0] = sess.get
	}
	return sess.get
}

// info returns how recorded message seq travelled, reading its _meta once.
func (h *HTTPHandler) info(sess *session, seq int) wireInfo {
	if wi, ok := sess.wire[seq]; ok {
		return wi
	}
	wi := wireInfo{kind: h.x.Entry(seq).Kind}
	if m, err := h.x.Message(seq); err == nil {
		meta := gjson.GetBytes(m.Raw, "_meta")
		wi.viaGET = meta.Get("http").String() == http.MethodGet
		wi.sse = meta.Get("sse").Bool()
		wi.status = int(meta.Get("status").Int())
		wi.nullID = wi.kind == tape.KindResponse && gjson.GetBytes(m.Raw, "id").Type == gjson.Null
	}
	if len(sess.wire) >= memoSize {
		clear(sess.wire)
	}
	sess.wire[seq] = wi
	return wi
}

// serveGet opens the standalone SSE stream, or, with Last-Event-ID,
// resumes a stream of the session after that event.
func (h *HTTPHandler) serveGet(w http.ResponseWriter, r *http.Request) {
	last, resume := r.Header["Last-Event-Id"]
	switch {
	case resume && !h.sessions:
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape's era has no resumable streams (Last-Event-ID needs sessions)", http.StatusMethodNotAllowed)
		return
	case !resume && !h.getStream:
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no standalone SSE stream (GET)", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get(mcphttp.HeaderSession) == "" {
		http.Error(w, "tapedeck replay: no session: initialize first, then send its Mcp-Session-Id", http.StatusBadRequest)
		return
	}
	sess := h.sessionFor(w, r, false, "")
	if sess == nil {
		return
	}
	version := r.Header.Get(mcphttp.HeaderProtocol)
	h.mu.Lock()
	if version == "" {
		version = sess.version
	}
	var s *stream
	if resume {
		var msg string
		if s, msg = h.resumable(sess, strings.TrimSpace(last[0])); s == nil {
			h.unlock()
			http.Error(w, "tapedeck replay: "+msg, http.StatusBadRequest)
			return
		}
	} else {
		s = h.standalone(sess)
		if s.finished {
			h.unlock()
			http.Error(w, "tapedeck replay: the session's standalone stream has ended", http.StatusConflict)
			return
		}
	}
	if s.attached && !resume {
		h.unlock()
		http.Error(w, fmt.Sprintf("tapedeck replay: stream %d is already being written to another response", s.no), http.StatusConflict)
		return
	}
	if s == sess.get {
		for _, m := range sess.held {
			s.push(item{msg: m})
		}
		sess.held = nil
		if s.sent == 0 && h.primes(version) {
			s.prime()
		}
	}
	s.attached = true
	h.unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	h.pipe(w, r, sess, s)
}

// resumable finds the stream a Last-Event-ID names and sets it to send
// again what came after that event; the caller holds the lock.
func (h *HTTPHandler) resumable(sess *session, id string) (*stream, string) {
	a, b, ok := strings.Cut(id, "_")
	no, err1 := strconv.Atoi(a)
	idx, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || no < 0 || idx < 0 {
		return nil, fmt.Sprintf("malformed Last-Event-ID %q: expected STREAM_INDEX, as the event ids this server sends", id)
	}
	s := sess.streams[no]
	switch {
	case s == nil:
		return nil, fmt.Sprintf("Last-Event-ID %q: stream %d is not held by this session (ended, or never opened)", id, no)
	case idx+1 < s.base:
		return nil, fmt.Sprintf("Last-Event-ID %q: the events after it are no longer held (the stream keeps its last %d)", id, maxHistory)
	case idx >= s.sent:
		return nil, fmt.Sprintf("Last-Event-ID %q: stream %d has sent only %d events", id, no, s.sent)
	}
	// A client resumes a stream it lost, whose old response may not have
	// noticed yet: the resumption takes it over.
	if s.attached {
		s.gen++
		s.wake()
	}
	s.sent = idx + 1
	return s, ""
}

// endStreams ends the session's standalone stream; the caller holds the lock.
func (h *HTTPHandler) endStreams(sess *session) {
	if sess.get != nil {
		sess.get.finish()
	}
}

func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	if !h.sessions {
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no sessions to delete", http.StatusMethodNotAllowed)
		return
	}
	sid := r.Header.Get(mcphttp.HeaderSession)
	if sid == "" {
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header on DELETE", http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.unlock()
	sess := h.byID[sid]
	if sess == nil {
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found", sid), http.StatusNotFound)
		return
	}
	delete(h.byID, sid)
	sess.ended = true
	h.endStreams(sess)
	w.WriteHeader(http.StatusOK)
}

// kick wakes the timing goroutine: the engine may have queued outputs.
func (h *HTTPHandler) kick() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// pump delivers the outputs the engines queued for later (speed > 0).
func (h *HTTPHandler) pump() {
	defer close(h.pumpDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		var due time.Time
		ok := false
		for _, s := range h.all {
			if t, has := s.e.NextDue(); has && (!ok || t.Before(due)) {
				due, ok = t, true
			}
		}
		h.unlock()
		var tick <-chan time.Time
		if ok {
			timer.Reset(due.Sub(h.now()))
			tick = timer.C
		}
		select {
		case <-h.done:
			return
		case <-h.wake:
		case <-tick:
			h.mu.Lock()
			now := h.now()
			for _, s := range h.all {
				h.dispatch(s, s.e.Poll(now), nil)
			}
			h.unlock()
		}
	}
}

// ServeHTTP serves h on ln until ctx is done, then ends h's streams and
// shuts the server down, waiting up to five seconds for requests in flight.
func ServeHTTP(ctx context.Context, ln net.Listener, h *HTTPHandler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		h.Close()
		return err
	case <-ctx.Done():
	}
	h.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
