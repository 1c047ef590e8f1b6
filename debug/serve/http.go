package serve

import (
	"errors"
	"net/http"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/replay"
)

// httpDivergence takes the HTTP handler's divergences; only held ones
// (pending) stop the debugger. The handler calls it after releasing its
// lock, in the order the divergences happened.
func (s *Server) httpDivergence(d replay.Divergence) {
	if d.Resolution != replay.Pending {
		return
	}
	s.httpSeen()
	s.mu.Lock()
	s.held = append(s.held, heldDivergence{session: d.Session, id: d.ID})
	s.mu.Unlock()
	s.emit(debug.Event{Kind: debug.Diverged, Divergence: s.divergence(d)})
}

// httpProgressed reports the progress an HTTP client's message made; the
// first one connects the client. The handler calls it after releasing its
// lock.
func (s *Server) httpProgressed(reached, awaiting int) {
	s.httpSeen()
	s.progressed(reached, awaiting)
	s.mu.Lock()
	s.armIdle(awaiting)
	s.mu.Unlock()
}

// httpSeen reports an HTTP client connected when its first message reached
// the engine (after the handler accepted its request), and again for each
// further session it opens in its run (which recorded session serves it).
func (s *Server) httpSeen() {
	s.mu.Lock()
	session := max(s.inits, 1)
	connect := !s.httpOn || session > s.announced
	s.httpOn = true
	s.announced = max(s.announced, session)
	run := s.startRun()
	sessions := len(s.sessionEnds) + 1
	s.mu.Unlock()
	if connect {
		s.emit(debug.Event{Kind: debug.Connected, Transport: "http", RunNo: run, Session: session, Sessions: sessions})
	}
}

// admit claims the session for HTTP when the handler accepts a POST (a
// request it refuses, from a port scan or a rebinding page, claims
// nothing), unless a stdio client has it. A GET or DELETE claims nothing:
// it serves only a session a POST opened (and so claimed), and the handler
// may still refuse it after admit (a GET with no session used to claim the
// session, turning a later attach away).
func (s *Server) admit(r *http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transport == "stdio" {
		return errors.New("tapedeck debug: this session serves a client attached over stdio (tapedeck attach); one kind of client a session")
	}
	if r.Method == http.MethodPost {
		s.transport = "http"
	}
	return nil
}

// serveHTTP hands a request to the run's replay HTTP handler. A fresh
// initialize once the run opened every recorded session starts the next
// run; a DELETE that ends the client's session disconnects it, and ends
// the run when the run opened every recorded session.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	fresh := freshInitialize(r)
	s.mu.Lock()
	if s.idle != nil && r.Method != http.MethodGet {
		s.idle.Stop() // re-armed by the request's progress, or when it ends
		s.idle = nil
	}
	after := func() {}
	if fresh {
		if s.runOn && s.transport == "http" && s.inits >= max(s.tapeInits, 1) {
			after = s.endRun("the client started a new session")
		}
		s.inits++ // counted for the run this request starts or joins
	}
	if r.Method != http.MethodGet {
		s.inflight++
	}
	s.mu.Unlock()
	after()
	defer func() {
		if r.Method != http.MethodGet {
			s.mu.Lock()
			s.inflight--
			if s.runOn && s.idle == nil {
				// A request that made no progress (a DELETE, a
				// notification) does not keep the run from ending.
				s.armIdle(s.awaiting)
			}
			s.mu.Unlock()
		}
	}()
	h := s.handler()
	if r.Method != http.MethodDelete {
		h.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	h.ServeHTTP(sw, r)
	if sw.status < 300 {
		s.mu.Lock()
		if s.httpOn {
			s.emit(debug.Event{Kind: debug.Disconnected})
		}
		s.httpOn = false
		end := func() {}
		if s.inits >= s.tapeInits {
			end = s.endRun("the client ended its session")
		}
		s.mu.Unlock()
		end()
	}
}

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
