package replay

// Strict matching: the client's requests in recorded order, per server.

import (
	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// nextExpected returns the next unused recorded request in strict order, or -1.
func (e *Engine) nextExpected() int {
	for {
		for e.order.next < len(e.scanned.reqs) && (e.report.used[e.scanned.reqs[e.order.next]] || e.order.passed[e.scanned.reqs[e.order.next]] || e.isTaskRead(e.scanned.reqs[e.order.next])) {
			e.order.next++
		}
		if e.order.next < len(e.scanned.reqs) {
			return e.scanned.reqs[e.order.next]
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
			e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeMethodNotFound, "Method not found: server/discover", nil), e.pos.now, -1, m.ID, nil)
			return
		case m.Method == "ping" && expEntry.Method != "ping":
			e.push([]byte(`{"jsonrpc":"2.0","id":`+string(m.ID)+`,"result":{}}`), e.pos.now, -1, m.ID, nil)
			return
		case exp >= 0 && expEntry.Method == "ping" && m.Method != "ping":
			// A recorded keepalive ping is timing, not behaviour: skip it.
			e.report.used[exp] = true
			continue
		case exp >= 0 && expEntry.Method == "server/discover" && m.Method == "initialize" && e.probeFailed(exp):
			// The recording client probed server/discover and fell back to
			// initialize; a client that starts with initialize skips the
			// probe, which is version drift, not behaviour.
			e.report.used[exp] = true
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
			e.scanned.unreadable[exp] = err
			e.divergeUnreadable(m, exp, err)
			return
		}
		if !e.opts.Hold && e.order.lost {
			if later := e.resync(m); later >= 0 {
				return
			}
		}
		e.diverge(m, exp, ReasonMismatch)
		if !e.opts.Hold {
			e.order.lost = true
			if m.Method == expEntry.Method && tape.Target(m.Method, m.Raw) == tape.Target(rec.Method, rec.Raw) {
				// The client's changed version of the expected call (same
				// method, same tool, prompt or resource): the next request
				// is compared with the one recorded after it, so one
				// difference stays one divergence.
				e.order.passed[exp] = true
			}
		}
		return
	}
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
	for i := e.order.next + 1; seen < resyncLimit; i++ {
		if i >= len(e.scanned.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.scanned.reqs[i]
		if e.report.used[seq] || e.order.passed[seq] {
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
		for _, r := range e.scanned.reqs[e.order.next:i] {
			if !e.report.used[r] && !e.order.passed[r] {
				e.order.passed[r] = true
				skipped++
			}
		}
		en := e.x.Entry(seq)
		e.order.resyncs = append(e.order.resyncs, Resync{Seq: seq, Line: en.Line, Method: en.Method, Skipped: skipped})
		e.consume(m, seq)
		return seq
	}
	return -1
}

// probeFailed reports whether the recorded server/discover at seq was
// version negotiation (tape.Negotiation: a server from before 2026-07-28
// rejected it before initialize), or never answered.
func (e *Engine) probeFailed(seq int) bool {
	return e.x.Pair(seq).Partner < 0 || e.x.Negotiation(seq)
}

// lookAhead returns the first of the EngineOptions.Reorder unused recorded
// requests after the next expected one that m matches, or -1.
func (e *Engine) lookAhead(m tape.Entry) int {
	seen := 0
	for i := e.order.next + 1; seen < e.opts.Reorder; i++ {
		if i >= len(e.scanned.reqs) && !e.scanNext() {
			return -1
		}
		seq := e.scanned.reqs[i]
		if e.report.used[seq] || e.order.passed[seq] {
			continue
		}
		seen++
		rec, err := e.recorded(seq)
		same := false
		if err == nil {
			same, err = e.sameRequest(m, rec)
		}
		if err != nil {
			e.scanned.unreadable[seq] = err // diverges when it is the next expected
			continue
		}
		if same {
			return seq
		}
	}
	return -1
}
