package serve

// Runs: a debug session serves its client again and again. Each client run
// (stdio: a connection; HTTP: from the first message to a DELETE, to a
// fresh initialize once every recorded session was opened, or to a pause
// after the end of a recorded session: of the tape's last one, or of an
// earlier one, so that a client run that opens one session of a tape of
// several is not served the second recorded session when run again) plays
// the tape from the top with a fresh engine;
// the debugger keeps its breakpoints. When a run ends the server reports it
// (RunEnded, with the run's replay report in brief) and resets, so the next
// connection starts at the tape's first message.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// DefaultRunIdle is how long an HTTP client may stay quiet after a
// recorded session's last client message before its run is over
// (Options.RunIdle); a client that opens its next session sooner stays in
// its run and is served the next recorded session.
const DefaultRunIdle = time.Second

// startRun begins a client run if none is under way and returns its
// number; mu is held.
func (s *Server) startRun() int {
	if !s.runOn {
		s.run++
		s.runOn = true
	}
	return s.run
}

// endRun ends the run under way: it reports it and resets the engines, so
// the next client starts at the top of the tape. mu is held; the old HTTP
// handler is closed after mu is released (its callbacks take mu), by the
// returned function.
func (s *Server) endRun(why string) func() {
	if !s.runOn {
		return func() {}
	}
	s.runOn = false
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	rr := debug.RunReport{Run: s.run, Transport: s.transport, Ended: why}
	if s.transport == "http" {
		rr.Report = s.handler().Report()
	} else {
		rr.Report = s.e.Report()
		if s.ft != nil {
			// What the live server answered is not a departure.
			replay.FallbackReport(&rr.Report, s.ft.Fell())
		}
	}
	rr.Requests, rr.Matched = rr.Report.Requests, rr.Report.Matched
	rr.Divergences, rr.Unused, rr.Dropped = len(rr.Report.Divergences), len(rr.Report.Unused), rr.Report.Dropped
	s.runs = append(s.runs, rr)
	s.emit(debug.Event{Kind: debug.RunEnded, Run: &rr})

	// A fresh engine for stdio and a fresh handler for HTTP: every
	// recorded session unserved again.
	old := s.handler()
	if e, err := replay.NewEngine(s.x, s.opts); err == nil {
		s.e = e
	} else {
		s.emit(debug.Event{Kind: debug.Failed, Err: err})
	}
	if h, err := s.newHandler(); err == nil {
		s.hmu.Lock()
		s.h = h
		s.hmu.Unlock()
	} else {
		s.emit(debug.Event{Kind: debug.Failed, Err: err})
		old = nil
	}
	s.gate = replay.Gate[replay.Output]{}
	s.held = nil
	s.inits, s.announced, s.awaiting = 0, 0, 0
	s.transport, s.httpOn = "", false
	s.progressed(s.e.Progress())
	return func() {
		if old != nil {
			old.Close()
		}
	}
}

// Restart ends the client run under way (the debugger's r): an attached
// stdio client is disconnected, an HTTP client's session is forgotten, and
// the tape starts again from the top for the next client.
func (s *Server) Restart() {
	s.mu.Lock()
	if s.transport == "stdio" && s.conn != nil {
		s.restarting = true
		c := s.conn
		s.mu.Unlock()
		c.Close() // its reader ends the run
		return
	}
	after := s.endRun("restarted")
	s.mu.Unlock()
	after()
}

// Runs returns the client runs so far, the one under way last (its Ended
// empty).
func (s *Server) Runs() []debug.RunReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]debug.RunReport(nil), s.runs...)
	if s.runOn {
		rr := debug.RunReport{Run: s.run, Transport: s.transport}
		if s.transport == "http" {
			rr.Report = s.handler().Report()
		} else {
			rr.Report = s.e.Report()
		}
		rr.Requests, rr.Matched = rr.Report.Requests, rr.Report.Matched
		rr.Divergences, rr.Unused, rr.Dropped = len(rr.Report.Divergences), len(rr.Report.Unused), rr.Report.Dropped
		out = append(out, rr)
	}
	return out
}

// handler returns the HTTP handler of the run.
func (s *Server) handler() *replay.HTTPHandler {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	return s.h
}

// newHandler builds an HTTP handler over the tape for one run.
func (s *Server) newHandler() (*replay.HTTPHandler, error) {
	return replay.NewHTTPHandler(s.x, s.opts, replay.HTTPOptions{
		Gated:        true,
		Admit:        s.admit,
		OnProgress:   s.httpProgressed,
		OnDivergence: s.httpDivergence,
		AllowHosts:   s.allowHosts,
		AllowOrigins: s.allowOrigins,
	})
}

// tapeInitializes counts the initialize requests the tape's server was
// sent: the recorded sessions a run opens.
func tapeInitializes(x *tape.Index, server string) int {
	n := 0
	for i := range x.Len() {
		if e := x.Entry(i); e.Kind == tape.KindRequest && e.Dir == tape.DirSend && e.Method == "initialize" && e.Server == server {
			n++
		}
	}
	return n
}

// sessionEnds returns, for each recorded session after the first (spans,
// from the HTTP handler), the tape position a run's progress waits at once
// the session before it is done: the session's first client message of
// server's (the tape's length when it has none).
func sessionEnds(x *tape.Index, server string, spans []replay.Span) []int {
	var out []int
	for _, sp := range spans[min(1, len(spans)):] {
		end := x.Len()
		for i := sp.Lo; i < sp.Hi; i++ {
			if e := x.Entry(i); e.Server == server && e.IsWire() && e.Dir == tape.DirSend {
				end = i
				break
			}
		}
		out = append(out, end)
	}
	return out
}

// freshInitialize reads a session-less POST's body to see whether it is an
// initialize, and puts the body back for the handler. Bodies over 1 MiB
// are not looked at (no initialize is that large).
func freshInitialize(r *http.Request) bool {
	if r.Method != http.MethodPost || r.Header.Get(mcphttp.HeaderSession) != "" || r.Body == nil {
		return false
	}
	const limit = 1 << 20
	head, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = struct {
		io.Reader
		io.Closer
	}{io.MultiReader(bytes.NewReader(head), r.Body), r.Body}
	if err != nil || len(head) > limit {
		return false
	}
	for _, m := range tape.Classify(bytes.TrimSpace(head)) {
		if m.Kind == tape.KindRequest && m.Method == "initialize" {
			return true
		}
	}
	return false
}

// armIdle ends an HTTP run that stays quiet for RunIdle once the tape has
// no recorded client message left, or waits for the next recorded
// session's first one (the TypeScript SDK's client never sends DELETE).
// mu is held.
func (s *Server) armIdle(awaiting int) {
	s.awaiting = awaiting
	if s.idle != nil {
		s.idle.Stop()
		s.idle = nil
	}
	if s.transport != "http" {
		return
	}
	why := "the client went quiet after the tape's end"
	if awaiting < s.x.Len() {
		k := slices.Index(s.sessionEnds, awaiting)
		if k < 0 {
			return
		}
		why = fmt.Sprintf("the client went quiet after recorded session %d of %d", k+1, len(s.sessionEnds)+1)
	}
	run := s.run
	s.idle = time.AfterFunc(s.runIdle, func() {
		s.mu.Lock()
		if s.run != run || !s.runOn || s.inflight > 0 || len(s.held) > 0 {
			s.mu.Unlock()
			return
		}
		after := s.endRun(why)
		s.mu.Unlock()
		after()
	})
}
