package replay

// Streamable HTTP replay server
//
// HTTPHandler serves a tape's server over MCP's Streamable HTTP transport.
// It is the edge around the synchronous Engine, in layers, one a file:
//
//   - http.go: the API (options, construction, ServeHTTP's checks and
//     dispatch by method, reports, Close) and the lock discipline: one
//     mutex serializes the engines; callbacks run after it is released.
//   - http_tape.go: what the tape says about its transport, learnt once:
//     recorded over HTTP or not, sessions, GET stream, event ids, and the
//     recorded sessions' spans; how each recorded server message travelled.
//   - http_session.go: live sessions (Mcp-Session-Id), each replaying one
//     recorded session with an Engine of its own; claim, lookup, DELETE.
//   - http_stream.go: answers as JSON or SSE streams, the standalone GET
//     stream, event ids and resumption with Last-Event-ID.
//   - http_route.go: a POST's messages into the engine, the engine's
//     outputs to the right stream (or held), gating for the debugger, and
//     the timing goroutine at a speed above 0.

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/oauth"
	"github.com/tapedeck/tapedeck/tape"
)

// CodeHeaderMismatch answers a 2026-07-28 request whose Mcp-Method or
// Mcp-Name header disagrees with its body, the code the Go SDK uses.
const CodeHeaderMismatch = -32020

// DefaultMaxBatch is HTTPOptions.MaxBatch's default: batches (MCP
// 2025-03-26 only) are small in practice.
const DefaultMaxBatch = 1000

func (h *HTTPHandler) maxBatch() int {
	if h.opts.MaxBatch > 0 {
		return h.opts.MaxBatch
	}
	return DefaultMaxBatch
}

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
	// MaxBatch bounds the messages of a JSON-RPC batch; 0 means
	// DefaultMaxBatch. A larger batch gets 400 with -32600: its messages
	// are matched under the handler's lock, which other clients wait for.
	MaxBatch int
	// NewSessionID makes Mcp-Session-Id values; nil means 128 random bits
	// in hex.
	NewSessionID func() string
	// Auth is how an OAuth-protected server's tape is replayed
	// (http_auth.go): AuthMock serves a mock authorization server and
	// requires its tokens, answering without one with the recorded
	// challenge; AuthNone requires nothing; AuthAuto (or "") is AuthMock
	// when the tape recorded a challenge, AuthNone otherwise. Either way
	// the recorded protected resource metadata is served, and requests a
	// challenge refused are left out of the recorded sessions.
	Auth string
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
// $transport/start, at a DELETE and at a second initialize) is served
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
	httpTape  bool                   // recorded over HTTP: statuses and streams are in _meta
	sessions  bool                   // the era has Mcp-Session-Id (and resumable streams)
	getStream bool                   // the client may open the standalone GET stream
	primeTape bool                   // the recorded server gave event ids in a 2025-11-25 session
	resumed   map[resumedStream]bool // recorded streams a client resumed with Last-Event-ID
	spans     []span                 // the recorded sessions
	preInit   []bool                 // spans[i] has client traffic before its initialize

	// OAuth (http_auth.go), found once.
	authDocs   map[string][]byte  // protected resource metadata by path
	challenge  *recordedChallenge // the first 401 recorded
	challenged map[int]bool       // requests a challenge refused
	stepMu     sync.Mutex         // guards stepUps
	stepUps    []stepUp           // the 403 step-ups recorded, in order
	mock       *oauth.Mock        // the mock authorization server, AuthMock

	mu         sync.Mutex
	notes      []func()            // callbacks to run once mu is released, in order
	delivering bool                // a goroutine is running notes: others leave theirs to it
	lone       *session            // the only session of an era without sessions
	byID       map[string]*session // live sessions
	all        []*session          // claimed sessions; all[i] replays spans[i]
	fresh      *session            // claimed by sessionless traffic before its initialize
	issued     bool                // a session id was issued once
	refused    []Divergence        // initialize beyond the recorded sessions
	ruled      []RuleAnswer        // requests a rule answered outside any session (RuleAnswered)
	dropped    int
	gate       Gate[gatedOutput] // Gated: outputs waiting for Release
	wake       chan struct{}
	done       chan struct{}
	closed     bool
	pumpDone   chan struct{}
	once       sync.Once
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
	if err := h.learnAuth(); err != nil {
		return nil, err
	}
	h.learnTape()
	h.first = first
	if len(h.challenged) > 0 {
		h.eo.Refused = h.challenged
	}
	if len(h.spans) > 1 || h.spans[0].lo > 0 || len(h.challenged) > 0 {
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

// Sessions returns the recorded sessions the handler serves, in order, as
// spans of the tape (the last one's Hi the tape's length); one span when
// the tape has no sessions. They are fixed when the handler is made.
func (h *HTTPHandler) Sessions() []Span {
	out := make([]Span, len(h.spans))
	for i, sp := range h.spans {
		out[i] = Span{Lo: sp.lo, Hi: sp.hi}
		if i == len(h.spans)-1 {
			out[i].Hi = h.x.Len()
		}
	}
	return out
}

// Report is the replay's report, taken under the handler's lock: with
// several recorded sessions, the sum of their engines' reports (a session
// never opened lists its requests as unused), and the sessions refused.
func (h *HTTPHandler) Report() Report {
	h.mu.Lock()
	defer h.unlock()
	if len(h.spans) <= 1 && len(h.refused) == 0 {
		r := h.first.Report()
		r.RuleAnswered = append(r.RuleAnswered, h.ruled...)
		return r
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
		r.RuleAnswered = append(r.RuleAnswered, er.RuleAnswered...)
	}
	r.RuleAnswered = append(r.RuleAnswered, h.ruled...)
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
		if h.guard.HostAllowed(r.Host) && h.guard.OriginAllowed(r.Header.Get("Origin")) && h.serveAuth(w, r) {
			return
		}
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
		writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse([]byte("null"), CodeInvalidRequest, msg, nil))
		return
	}
	if !h.authorized(w, r) {
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

// ServeHTTP serves h on ln until ctx is done, then ends h's streams and
// shuts the server down, waiting up to five seconds for requests in flight.
func ServeHTTP(ctx context.Context, ln net.Listener, h *HTTPHandler) error {
	return mcphttp.Serve(ctx, ln, h, mcphttp.ServeOptions{Stop: h.Close})
}

// ServeLegacy serves the legacy HTTP+SSE handler h on ln as ServeHTTP
// serves a Streamable HTTP one.
func ServeLegacy(ctx context.Context, ln net.Listener, h *LegacyHandler) error {
	return mcphttp.Serve(ctx, ln, h, mcphttp.ServeOptions{Stop: h.Close})
}
