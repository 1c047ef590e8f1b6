package replay

import (
	"github.com/tapedeck/tapedeck/replay/sse"

	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Streamable HTTP header names.
const (
	headerSession  = "Mcp-Session-Id"
	headerProtocol = "Mcp-Protocol-Version"
	headerMethod   = "Mcp-Method"
	headerName     = "Mcp-Name"
)

// modernVersion is the first protocol version without sessions, in which
// requests name their method in headers.
const modernVersion = "2026-07-28"

// CodeHeaderMismatch answers a 2026-07-28 request whose Mcp-Method or
// Mcp-Name header disagrees with its body, the code the Go SDK uses.
const CodeHeaderMismatch = -32020

// HTTPOptions configure an HTTPHandler.
type HTTPOptions struct {
	// Path is the MCP endpoint's path; empty means "/mcp".
	Path string
	// Now is the clock; nil means time.Now. Only this edge reads it.
	Now func() time.Time
	// OnDivergence, if not nil, is called with each divergence as it
	// happens, with the handler's lock held: keep it short. With the
	// engine's Options.Hold, a divergence is reported when it is held
	// (Resolution Pending; answer it with Resolve) and again if it is
	// resolved with the divergence error.
	OnDivergence func(Divergence)
	// OnProgress, if not nil, is called with the engine's Progress after
	// each message of the client and each Resolve, with the handler's lock
	// held: keep it short. The debugger's playback follows it.
	OnProgress func(reached, awaiting int)
	// Gated holds every answer that replays a recorded message until
	// Release lets that message through; what the engine makes itself
	// (divergence errors, pings) goes at once. The debugger releases
	// messages as its playback delivers them, so a breakpoint holds them.
	Gated bool
	// AllowOrigins lists Origin header values accepted besides loopback
	// ones (http://localhost:3000, http://127.0.0.1, http://[::1]), e.g.
	// "https://app.example.com". Other origins get 403, against DNS
	// rebinding.
	AllowOrigins []string
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
// Call Close to end the open streams before shutting the server down.
type HTTPHandler struct {
	e    *Engine
	opts HTTPOptions
	path string
	now  func() time.Time

	// What the tape says about its transport, found once.
	httpTape  bool // recorded over HTTP: statuses and streams are in _meta
	sessions  bool // the era has Mcp-Session-Id
	getStream bool // the client may open the standalone GET stream

	mu        sync.Mutex
	session   string // the live session; "" before initialize or after DELETE
	hadSess   bool   // a session was issued once: a request without one is a 400
	pending   map[tape.ID]*exchange
	open      []*exchange // request exchanges not yet answered, oldest first
	get       *stream     // the standalone SSE stream, while open
	backlog   [][]byte    // messages for the GET stream before it opens
	wire      map[int]wireInfo
	dropped   int
	released  int           // Gated: outputs replaying messages before it go out
	gated     []gatedOutput // Gated: outputs waiting for Release, in order
	wake      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	pumpDone  chan struct{}
}

// gatedOutput is an output held for Release, with the exchange whose POST
// brought it out.
type gatedOutput struct {
	o      Output
	origin *exchange
}

// maxBacklog bounds the messages kept for a GET stream not yet open.
const maxBacklog = 1024

// wireInfo is what the tape recorded about how a server message travelled.
type wireInfo struct {
	kind   tape.Kind
	viaGET bool // on the standalone stream
	sse    bool // on an SSE stream
	nullID bool // a response with "id":null (an HTTP-level rejection)
	status int  // the HTTP status of the POST that carried it, 0 if none
}

// stream is a queue of messages that one HTTP response writes out.
type stream struct {
	items    []item
	finished bool // the last item is queued
	notify   chan struct{}
}

type item struct {
	msg    []byte
	status int
	sse    bool
	final  bool
}

func newStream() *stream { return &stream{notify: make(chan struct{}, 1)} }

// push queues it; the caller holds the handler's lock.
func (s *stream) push(it item) {
	s.items = append(s.items, it)
	if it.final {
		s.finished = true
	}
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish marks the stream as ending after what is queued.
func (s *stream) finish() {
	s.finished = true
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// exchange is a POST carrying requests, waiting for their answers.
type exchange struct {
	*stream
	ids        []tape.ID // live request ids not yet answered
	batch      bool
	initialize bool
	session    string // the session issued with it (initialize)
}

// NewHTTPHandler returns a handler serving e. It scans the tape's index
// (no message bodies but the first few) to learn its transport and era.
func NewHTTPHandler(e *Engine, o HTTPOptions) *HTTPHandler {
	h := &HTTPHandler{
		e: e, opts: o, path: o.Path, now: o.Now,
		pending: map[tape.ID]*exchange{},
		wire:    map[int]wireInfo{},
		wake:    make(chan struct{}, 1),
		done:    make(chan struct{}),
	}
	if h.path == "" {
		h.path = "/mcp"
	}
	if h.now == nil {
		h.now = time.Now
	}
	h.learnTape()
	if e.opts.Speed > 0 {
		h.pumpDone = make(chan struct{})
		go h.pump()
	}
	return h
}

// learnTape finds whether the tape was recorded over HTTP, with sessions,
// and with a standalone GET stream.
func (h *HTTPHandler) learnTape() {
	x, server := h.e.x, h.e.server
	var hasInit, hasGet, initSession bool
	looked := false
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Server != server {
			continue
		}
		switch {
		case en.Kind == tape.KindLifecycle && en.Method == "$http/get":
			hasGet = true
		case en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.Method == "initialize" && !hasInit:
			hasInit = true
			if m, err := x.Message(i); err == nil {
				initSession = gjson.GetBytes(m.Raw, "_meta.session").Exists()
				h.httpTape = h.httpTape || gjson.GetBytes(m.Raw, "_meta.transport").String() == "http"
			}
			looked = true
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
}

// Close ends the open streams and the timing goroutine. Requests still
// waiting for an answer return without one.
func (h *HTTPHandler) Close() {
	h.closeOnce.Do(func() { close(h.done) })
	if h.pumpDone != nil {
		<-h.pumpDone
	}
}

// Report is the engine's report, taken under the handler's lock.
func (h *HTTPHandler) Report() Report {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.e.Report()
}

// Dropped counts the server messages the tape holds that no open stream
// could carry (a notification after its request was answered, with no GET
// stream open), and the answers to requests whose client went away.
func (h *HTTPHandler) Dropped() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.dropped
}

// ServeHTTP implements http.Handler.
func (h *HTTPHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != h.path {
		http.Error(w, fmt.Sprintf("tapedeck replay: no MCP endpoint at %s: expected %s", r.URL.Path, h.path), http.StatusNotFound)
		return
	}
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
		http.Error(w, fmt.Sprintf("tapedeck replay: origin %q is not allowed: expected a loopback origin", o), http.StatusForbidden)
		return
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
	if h.getStream {
		m = append(m, http.MethodGet)
	}
	if h.sessions {
		m = append(m, http.MethodDelete)
	}
	return strings.Join(m, ", ")
}

// originAllowed accepts loopback origins and the configured ones.
func (h *HTTPHandler) originAllowed(origin string) bool {
	if slices.Contains(h.opts.AllowOrigins, origin) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// IsLoopbackHost reports whether host (a name or an IP, without port) is
// this machine's loopback interface: "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// checkSession applies the session rules to a message other than
// initialize; it writes the error and returns false when they fail.
func (h *HTTPHandler) checkSession(w http.ResponseWriter, r *http.Request) bool {
	if !h.sessions {
		return true
	}
	sid := r.Header.Get(headerSession)
	h.mu.Lock()
	cur, had := h.session, h.hadSess
	h.mu.Unlock()
	switch {
	case sid == "" && had:
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header: expected the session id the initialize answer gave", http.StatusBadRequest)
		return false
	case sid != "" && sid != cur:
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found: initialize again", sid), http.StatusNotFound)
		return false
	}
	return true
}

func (h *HTTPHandler) post(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, "tapedeck replay: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	body = bytes.TrimSpace(body)
	entries := tape.Classify(body)
	var ids []tape.ID
	initialize := false
	for _, m := range entries {
		switch m.Kind {
		case tape.KindInvalid:
			writeJSON(w, http.StatusBadRequest, errorResponse([]byte("null"), CodeParseError, "tapedeck replay: "+m.Problem, nil))
			return
		case tape.KindRequest:
			ids = append(ids, m.ID)
			initialize = initialize || m.Method == "initialize"
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
	if !initialize && !h.checkSession(w, r) {
		return
	}

	if len(ids) == 0 {
		// Notifications and replies: accepted, whatever the tape makes of them.
		h.mu.Lock()
		h.dispatch(h.e.Receive(body, h.now()), nil)
		h.progressed()
		h.mu.Unlock()
		h.kick()
		w.WriteHeader(http.StatusAccepted)
		return
	}

	ex := &exchange{stream: newStream(), ids: ids, batch: len(entries) > 1, initialize: initialize}
	h.mu.Lock()
	for _, id := range ids {
		if _, busy := h.pending[id]; busy {
			h.mu.Unlock()
			writeJSON(w, http.StatusBadRequest, errorResponse([]byte(id), CodeInvalidRequest, "tapedeck replay: request id "+string(id)+" is already in flight", nil))
			return
		}
	}
	if initialize && h.sessions {
		ex.session = h.newSessionID()
		h.session, h.hadSess = ex.session, true
		h.endGet()
	}
	for _, id := range ids {
		h.pending[id] = ex
	}
	h.open = append(h.open, ex)
	h.dispatch(h.e.Receive(body, h.now()), ex)
	h.progressed()
	h.mu.Unlock()
	h.kick()
	h.answer(w, r, ex)
}

// CodeInvalidRequest is JSON-RPC's "invalid request", answered to a request
// whose id is already in flight.
const CodeInvalidRequest = -32600

// headerMismatch checks the 2026-07-28 headers that name a request's
// method and target against its body, as a server of that era must.
func headerMismatch(hd http.Header, m tape.Entry) string {
	if v := hd.Get(headerProtocol); v == "" || v < modernVersion || m.Kind != tape.KindRequest {
		return ""
	}
	got := hd.Get(headerMethod)
	if got == "" {
		return "missing Mcp-Method header: expected " + m.Method
	}
	if got != m.Method {
		return fmt.Sprintf("Mcp-Method header %q does not match the body's method %q", got, m.Method)
	}
	if name, ok := requestName(m.Method, m.Raw); ok {
		if h := hd.Get(headerName); h != name {
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

// answer writes an exchange's answer as it comes: JSON when it is a lone
// response the tape did not send on a stream, else an SSE stream.
func (h *HTTPHandler) answer(w http.ResponseWriter, r *http.Request, ex *exchange) {
	flusher, _ := w.(http.Flusher)
	started := false
	var buf []byte
	for {
		h.mu.Lock()
		items, finished := ex.items, ex.finished
		ex.items = nil
		h.mu.Unlock()
		if len(items) > 0 {
			if !started {
				started = true
				if ex.session != "" {
					w.Header().Set(headerSession, ex.session)
				}
				first := items[0]
				if len(items) == 1 && first.final && !first.sse && !ex.batch {
					status := first.status
					if status == 0 {
						status = http.StatusOK
					}
					writeJSON(w, status, first.msg)
					return
				}
				w.Header().Set("Content-Type", "text/event-stream")
				w.Header().Set("Cache-Control", "no-cache")
				w.WriteHeader(http.StatusOK)
			}
			buf = buf[:0]
			for _, it := range items {
				buf = sse.Append(buf, sse.Event{Data: it.msg, Retry: -1})
			}
			if _, err := w.Write(buf); err != nil {
				h.abandon(ex)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if finished {
			return
		}
		select {
		case <-ex.notify:
		case <-r.Context().Done():
			h.abandon(ex)
			return
		case <-h.done:
			h.abandon(ex)
			if !started {
				http.Error(w, "tapedeck replay: shutting down before the tape answered", http.StatusServiceUnavailable)
			}
			return
		}
	}
}

// abandon forgets an exchange whose client went away.
func (h *HTTPHandler) abandon(ex *exchange) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range ex.ids {
		if h.pending[id] == ex {
			delete(h.pending, id)
		}
	}
	h.open = slices.DeleteFunc(h.open, func(o *exchange) bool { return o == ex })
}

func writeJSON(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	w.Write(msg)
}

// dispatch routes the engine's outputs to the streams that carry them; the
// caller holds the lock. origin is the exchange whose POST produced them.
func (h *HTTPHandler) dispatch(outs []Output, origin *exchange) {
	for _, o := range outs {
		if o.Divergence != nil && h.opts.OnDivergence != nil {
			h.opts.OnDivergence(*o.Divergence)
		}
		switch {
		case o.Msg == nil:
		case h.opts.Gated && o.Seq >= h.released:
			h.gated = append(h.gated, gatedOutput{o, origin})
		default:
			h.route(o, origin)
		}
	}
}

// progressed reports the engine's progress to OnProgress; the caller holds
// the lock.
func (h *HTTPHandler) progressed() {
	if h.opts.OnProgress != nil {
		h.opts.OnProgress(h.e.Progress())
	}
}

// Release lets the held answers (HTTPOptions.Gated) that replay recorded
// messages before upTo go to the client, in order.
func (h *HTTPHandler) Release(upTo int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.released = max(h.released, upTo)
	rest := h.gated[:0]
	for _, g := range h.gated {
		if g.o.Seq < h.released {
			h.route(g.o, g.origin)
		} else {
			rest = append(rest, g)
		}
	}
	clear(h.gated[len(rest):])
	h.gated = rest
}

// Resolve answers a divergence the engine holds (Options.Hold) and sends
// what that yields: the divergence error, or the recorded answer (subject to
// Release when Gated).
func (h *HTTPHandler) Resolve(id int, r Resolution) error {
	h.mu.Lock()
	outs, err := h.e.Resolve(id, r, h.now())
	if err == nil {
		h.dispatch(outs, nil)
		h.progressed()
	}
	h.mu.Unlock()
	h.kick()
	return err
}

func (h *HTTPHandler) route(o Output, origin *exchange) {
	info := wireInfo{kind: tape.KindResponse} // what the engine makes itself is a response
	if o.Seq >= 0 {
		info = h.info(o.Seq)
	}
	if info.kind == tape.KindResponse {
		ex := h.pending[o.reqID]
		if ex == nil {
			h.dropped++ // its client went away
			return
		}
		delete(h.pending, o.reqID)
		ex.ids = slices.DeleteFunc(ex.ids, func(id tape.ID) bool { return id == o.reqID })
		msg := o.Msg
		if info.nullID {
			// Rejected before the server read the id: keep "id":null.
			msg = spliceID(msg, []byte("null"))
		}
		final := len(ex.ids) == 0
		ex.push(item{msg: msg, status: info.status, sse: info.sse, final: final})
		if final {
			h.open = slices.DeleteFunc(h.open, func(e *exchange) bool { return e == ex })
		}
		return
	}
	// A server notification or request: on the stream the tape had it on,
	// or else on the answer to the request that brought it out, or else on
	// the latest answer still open (a tape recorded over HTTP says it came
	// on a POST's stream; a stdio tape prefers the GET stream).
	if !info.viaGET {
		if origin != nil && !origin.finished {
			origin.push(item{msg: o.Msg, sse: true})
			return
		}
		if n := len(h.open); n > 0 && (h.httpTape || h.get == nil) {
			h.open[n-1].push(item{msg: o.Msg, sse: true})
			return
		}
	}
	switch {
	case h.get != nil:
		h.get.push(item{msg: o.Msg})
	case h.getStream && len(h.backlog) < maxBacklog:
		h.backlog = append(h.backlog, o.Msg)
	default:
		h.dropped++
	}
}

// info returns how recorded message seq travelled, reading its _meta once.
func (h *HTTPHandler) info(seq int) wireInfo {
	if wi, ok := h.wire[seq]; ok {
		return wi
	}
	wi := wireInfo{kind: h.e.x.Entry(seq).Kind}
	if m, err := h.e.x.Message(seq); err == nil {
		meta := gjson.GetBytes(m.Raw, "_meta")
		wi.viaGET = meta.Get("http").String() == http.MethodGet
		wi.sse = meta.Get("sse").Bool()
		wi.status = int(meta.Get("status").Int())
		wi.nullID = wi.kind == tape.KindResponse && gjson.GetBytes(m.Raw, "id").Type == gjson.Null
	}
	if len(h.wire) >= memoSize {
		clear(h.wire)
	}
	h.wire[seq] = wi
	return wi
}

// serveGet opens the standalone SSE stream.
func (h *HTTPHandler) serveGet(w http.ResponseWriter, r *http.Request) {
	if !h.getStream {
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no standalone SSE stream (GET)", http.StatusMethodNotAllowed)
		return
	}
	if !h.checkSession(w, r) {
		return
	}
	h.mu.Lock()
	if h.sessions && h.session == "" {
		h.mu.Unlock()
		http.Error(w, "tapedeck replay: no session: initialize first", http.StatusBadRequest)
		return
	}
	if h.get != nil {
		h.mu.Unlock()
		http.Error(w, "tapedeck replay: a standalone SSE stream is already open", http.StatusConflict)
		return
	}
	s := newStream()
	for _, m := range h.backlog {
		s.push(item{msg: m})
	}
	h.backlog = nil
	h.get = s
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		if h.get == s {
			h.get = nil
		}
		h.mu.Unlock()
	}()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	var buf []byte
	for {
		h.mu.Lock()
		items, finished := s.items, s.finished
		s.items = nil
		h.mu.Unlock()
		if len(items) > 0 {
			buf = buf[:0]
			for _, it := range items {
				buf = sse.Append(buf, sse.Event{Data: it.msg, Retry: -1})
			}
			if _, err := w.Write(buf); err != nil {
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if finished {
			return
		}
		select {
		case <-s.notify:
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}

// endGet closes the standalone stream; the caller holds the lock.
func (h *HTTPHandler) endGet() {
	if h.get != nil {
		h.get.finish()
		h.get = nil
	}
	h.backlog = nil
}

func (h *HTTPHandler) delete(w http.ResponseWriter, r *http.Request) {
	if !h.sessions {
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no sessions to delete", http.StatusMethodNotAllowed)
		return
	}
	sid := r.Header.Get(headerSession)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case sid == "":
		http.Error(w, "tapedeck replay: missing Mcp-Session-Id header on DELETE", http.StatusBadRequest)
	case sid != h.session:
		http.Error(w, fmt.Sprintf("tapedeck replay: session %q not found", sid), http.StatusNotFound)
	default:
		h.session = ""
		h.endGet()
		w.WriteHeader(http.StatusOK)
	}
}

// kick wakes the timing goroutine: the engine may have queued outputs.
func (h *HTTPHandler) kick() {
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// pump delivers the outputs the engine queued for later (speed > 0).
func (h *HTTPHandler) pump() {
	defer close(h.pumpDone)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		h.mu.Lock()
		due, ok := h.e.NextDue()
		h.mu.Unlock()
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
			h.dispatch(h.e.Poll(h.now()), nil)
			h.mu.Unlock()
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
