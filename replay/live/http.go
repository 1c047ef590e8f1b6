package live

import (
	"errors"
	"net/http"

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
	s.emit(Event{Kind: Diverged, Divergence: s.divergence(d)})
}

// httpProgressed reports the progress an HTTP client's message made; the
// first one connects the client. The handler calls it after releasing its
// lock.
func (s *Server) httpProgressed(reached, awaiting int) {
	s.httpSeen()
	s.progressed(reached, awaiting)
}

// httpSeen reports an HTTP client connected when its first message reached
// the engine (after the handler accepted its request).
func (s *Server) httpSeen() {
	s.mu.Lock()
	connect := !s.httpOn
	s.httpOn = true
	s.mu.Unlock()
	if connect {
		s.emit(Event{Kind: Connected, Transport: "http"})
	}
}

// admit claims the session for HTTP when the handler accepts a request
// (a request it refuses, from a port scan or a rebinding page, claims
// nothing), unless a stdio client has it.
func (s *Server) admit(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transport == "stdio" {
		return errors.New("tapedeck debug: this session serves a client attached over stdio (tapedeck attach); one kind of client a session")
	}
	s.transport = "http"
	return nil
}

// serveHTTP hands a request to the replay HTTP handler; a DELETE that ends
// the client's session disconnects it.
func (s *Server) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete {
		s.h.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.h.ServeHTTP(sw, r)
	if sw.status < 300 {
		s.mu.Lock()
		was := s.httpOn
		s.httpOn = false
		s.mu.Unlock()
		if was {
			s.emit(Event{Kind: Disconnected})
		}
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
