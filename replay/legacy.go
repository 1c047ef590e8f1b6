package replay

// Legacy HTTP+SSE replay (MCP 2024-11-05)
//
// Before Streamable HTTP, a client opened a server-sent event stream with
// GET (usually /sse); the server's first event, "endpoint", named the URL
// to POST messages to (usually /message?sessionId=ID). Every POST is
// answered 202 Accepted with no body; everything the server says, answers
// included, goes out on the stream as "message" events.
//
// LegacyHandler serves a tape recorded that way (tapedeck record
// --upstream http://host/sse writes $http/endpoint records) to such a
// client. Each stream is one client session with an Engine of its own,
// started from the top of the tape, so a client can be run again and again
// against one replay. The engine is driven under the session's lock; a
// goroutine per stream sends what falls due later (--speed).

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// IsLegacySSE reports whether the tape recorded server's session over the
// legacy HTTP+SSE transport, and the path its client posted to.
func IsLegacySSE(x *tape.Index, server string) (postPath string, ok bool) {
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Server != server || en.Kind != tape.KindLifecycle || en.Method != tape.MethodHTTPEndpoint {
			continue
		}
		postPath = "/message"
		if m, err := x.Message(i); err == nil {
			var p struct{ URL, Proxied string }
			if v, err := tape.Decode(m.Raw); err == nil {
				if params, ok := v.(map[string]any)["params"].(map[string]any); ok {
					p.URL, _ = params["url"].(string)
					p.Proxied, _ = params["proxied"].(string)
				}
			}
			for _, s := range []string{p.Proxied, p.URL} {
				if u, err := url.Parse(s); err == nil && u.Path != "" {
					postPath = u.Path
					break
				}
			}
		}
		return postPath, true
	}
	return "", false
}

// LegacyOptions configure a LegacyHandler.
type LegacyOptions struct {
	// SSEPath is where clients open their stream; empty means "/sse".
	SSEPath string
	// PostPath is where they post; empty means "/message".
	PostPath string
	// AllowHosts, AllowOrigins, MaxBody and OnDivergence are as in
	// HTTPOptions.
	AllowHosts   []string
	AllowOrigins []string
	MaxBody      int64
	OnDivergence func(Divergence)
}

// LegacyHandler serves a tape to legacy HTTP+SSE clients; see the design
// comment at the top of this file.
type LegacyHandler struct {
	x     *tape.Index
	eo    EngineOptions
	o     LegacyOptions
	guard mcphttp.Guard
	now   func() time.Time
	done  chan struct{}
	once  sync.Once

	mu       sync.Mutex
	sessions map[string]*legacySession
	reports  []Report // of sessions that ended
}

type legacySession struct {
	mu   sync.Mutex
	e    *Engine
	out  chan Output   // SSE message events to write, in order
	wake chan struct{} // the engine has outputs due later
	gone chan struct{} // closed when the stream ends: nothing more is sent
}

// NewLegacyHandler returns a handler serving x's server (eo.Server) to
// legacy HTTP+SSE clients.
func NewLegacyHandler(x *tape.Index, eo EngineOptions, o LegacyOptions) (*LegacyHandler, error) {
	if _, err := NewEngine(x, eo); err != nil { // the options, checked once
		return nil, err
	}
	if o.SSEPath == "" {
		o.SSEPath = "/sse"
	}
	if o.PostPath == "" {
		o.PostPath = "/message"
	}
	if o.MaxBody == 0 {
		o.MaxBody = DefaultMaxBody
	}
	return &LegacyHandler{x: x, eo: eo, o: o, guard: mcphttp.Guard{AllowHosts: o.AllowHosts, AllowOrigins: o.AllowOrigins}, now: time.Now, done: make(chan struct{}), sessions: map[string]*legacySession{}}, nil
}

// ServeHTTP implements http.Handler.
func (h *LegacyHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.guard.HostAllowed(r.Host) {
		http.Error(w, "tapedeck replay: Host "+r.Host+" is not allowed (DNS rebinding guard); add it with --allow-host", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); !h.guard.OriginAllowed(origin) {
		http.Error(w, "tapedeck replay: Origin "+origin+" is not allowed; add it with --allow-origin", http.StatusForbidden)
		return
	}
	switch {
	case r.URL.Path == h.o.SSEPath && r.Method == http.MethodGet:
		h.stream(w, r)
	case r.URL.Path == h.o.PostPath && r.Method == http.MethodPost:
		h.post(w, r)
	case r.URL.Path == h.o.SSEPath || r.URL.Path == h.o.PostPath:
		w.Header().Set("Allow", map[bool]string{true: http.MethodGet, false: http.MethodPost}[r.URL.Path == h.o.SSEPath])
		http.Error(w, "tapedeck replay: method not allowed", http.StatusMethodNotAllowed)
	default:
		http.Error(w, fmt.Sprintf("tapedeck replay: this tape was recorded over the legacy HTTP+SSE transport: open the stream with GET %s, post to %s", h.o.SSEPath, h.o.PostPath), http.StatusNotFound)
	}
}

// stream opens a session: the endpoint event, then the engine's messages.
func (h *LegacyHandler) stream(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "tapedeck replay: streaming unsupported", http.StatusInternalServerError)
		return
	}
	e, err := NewEngine(h.x, h.eo)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	id := newLegacyID()
	s := &legacySession{e: e, out: make(chan Output, 64), wake: make(chan struct{}, 1), gone: make(chan struct{})}
	h.mu.Lock()
	h.sessions[id] = s
	h.mu.Unlock()
	defer h.end(id, s)

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if err := sse.Write(w, sse.Event{Event: "endpoint", Data: []byte(h.o.PostPath + "?sessionId=" + id)}); err != nil {
		return
	}
	fl.Flush()
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	var pace progressPacer
	for {
		select {
		case o := <-s.out:
			// As over stdio: progress is left progressGap to land
			// before the answer that retires its handler.
			if d := pace.wait(o); d > 0 {
				time.Sleep(d)
			}
			if err := sse.Write(w, sse.Event{Event: "message", Data: o.Msg}); err != nil {
				return
			}
			fl.Flush()
			pace.wrote(o)
		case <-s.wake:
			if at, ok := h.due(s); ok {
				timer.Reset(time.Until(at))
			}
		case <-timer.C:
			h.poll(s)
			if at, ok := h.due(s); ok {
				timer.Reset(time.Until(at))
			}
		case <-r.Context().Done():
			return
		case <-h.done:
			return
		}
	}
}

// post hands a client message to its session's engine.
func (h *LegacyHandler) post(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("sessionId")
	h.mu.Lock()
	s := h.sessions[id]
	h.mu.Unlock()
	if s == nil {
		http.Error(w, fmt.Sprintf("tapedeck replay: no open stream has session %q: open one with GET %s first", id, h.o.SSEPath), http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.o.MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("tapedeck replay: request body over %d bytes", h.o.MaxBody), http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "tapedeck replay: "+err.Error(), http.StatusBadRequest)
		return
	}
	if len(strings.TrimSpace(string(body))) == 0 {
		http.Error(w, "tapedeck replay: expected a JSON-RPC message in the body, found none", http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	outs := s.e.Receive(body, h.now())
	s.mu.Unlock()
	h.send(s, outs)
	w.WriteHeader(http.StatusAccepted)
	io.WriteString(w, "Accepted")
}

// poll sends what fell due on s's engine.
func (h *LegacyHandler) poll(s *legacySession) {
	s.mu.Lock()
	outs := s.e.Poll(h.now())
	s.mu.Unlock()
	h.send(s, outs)
}

func (h *LegacyHandler) due(s *legacySession) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.e.NextDue()
}

// send queues outs for s's stream and reports divergences; later outputs
// wake the stream's timer.
func (h *LegacyHandler) send(s *legacySession, outs []Output) {
	for _, o := range outs {
		if o.Divergence != nil && h.o.OnDivergence != nil {
			h.o.OnDivergence(*o.Divergence)
		}
		if o.Msg == nil {
			continue
		}
		select {
		case s.out <- o:
		case <-s.gone:
			return
		case <-h.done:
			return
		}
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// end closes a session and keeps its report.
func (h *LegacyHandler) end(id string, s *legacySession) {
	close(s.gone)
	h.mu.Lock()
	delete(h.sessions, id)
	s.mu.Lock()
	h.reports = append(h.reports, s.e.Report())
	s.mu.Unlock()
	h.mu.Unlock()
}

// Report merges the reports of every session served so far, open ones
// included: divergences and requests add up, and a recorded request counts
// as unused only when no session used it.
func (h *LegacyHandler) Report() Report {
	h.mu.Lock()
	reps := slices.Clone(h.reports)
	for _, s := range h.sessions {
		s.mu.Lock()
		reps = append(reps, s.e.Report())
		s.mu.Unlock()
	}
	h.mu.Unlock()
	if len(reps) == 0 {
		e, err := NewEngine(h.x, h.eo)
		if err != nil {
			return Report{}
		}
		return e.Report()
	}
	out := reps[0]
	unused := map[int]int{} // recorded line -> sessions that left it unused
	for _, u := range out.Unused {
		unused[u.Line]++
	}
	for _, r := range reps[1:] {
		out.Requests += r.Requests
		out.Matched += r.Matched
		out.Divergences = append(out.Divergences, r.Divergences...)
		out.Unanswered = append(out.Unanswered, r.Unanswered...)
		for _, u := range r.Unused {
			unused[u.Line]++
		}
	}
	kept := out.Unused[:0]
	for _, u := range out.Unused {
		if unused[u.Line] == len(reps) {
			kept = append(kept, u)
		}
	}
	out.Unused = kept
	return out
}

// Close ends the open streams.
func (h *LegacyHandler) Close() { h.once.Do(func() { close(h.done) }) }

func newLegacyID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
