package replay

// Routing: a POST's messages go into its session's engine; each output goes
// to the stream the tape had it on, or the answer that brought it out, or is
// held for the next stream. With HTTPOptions.Gated outputs wait for
// Release; at a speed above 0 a goroutine polls the engines.

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/tape"
)

// gatedOutput is an output held for Release, with its session and the
// exchange whose POST brought it out.
type gatedOutput struct {
	o      Output
	sess   *session
	origin *exchange
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
			writeJSON(w, http.StatusRequestEntityTooLarge, jsonrpc.ErrorResponse([]byte("null"), CodeInvalidRequest, msg, nil))
			return
		}
		http.Error(w, "tapedeck replay: read request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	body = bytes.TrimSpace(body)
	if len(body) == 0 || string(body) == "[]" {
		// Nothing to serve: JSON-RPC's "invalid request" (it used to be 202).
		writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse([]byte("null"), CodeInvalidRequest, "tapedeck replay: expected a JSON-RPC message or batch in the body, found none", nil))
		return
	}
	entries := tape.Classify(body)
	if limit := h.maxBatch(); len(entries) > limit {
		// Each message of a batch is matched under the handler's lock:
		// a huge one would hold every other client up.
		msg := fmt.Sprintf("tapedeck replay: a batch of %d messages is over the limit of %d", len(entries), limit)
		writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse([]byte("null"), CodeInvalidRequest, msg, nil))
		return
	}
	var ids []tape.ID
	initialize := false
	var initID tape.ID
	for _, m := range entries {
		switch m.Kind {
		case tape.KindInvalid:
			writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse([]byte("null"), CodeParseError, "tapedeck replay: "+m.Problem, nil))
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
			writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse(id, CodeHeaderMismatch, "tapedeck replay: "+msg, nil))
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
			writeJSON(w, http.StatusBadRequest, jsonrpc.ErrorResponse([]byte(id), CodeInvalidRequest, "tapedeck replay: request id "+string(id)+" is already in flight", nil))
			return
		}
	}
	sess.nstream++
	ex := &exchange{stream: newStream(sess.nstream), ids: ids, left: len(ids), batch: len(entries) > 1, version: r.Header.Get(mcphttp.HeaderProtocol)}
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
		ex.push(item{msg: m, seq: -1, sse: true})
	}
	sess.held = nil
	for _, id := range ids {
		sess.pending[id] = ex
	}
	sess.open = append(sess.open, ex)
	if len(entries) == 1 {
		h.dispatch(sess, sess.e.Receive(body, h.now()), ex)
	} else {
		// A batch, a message at a time, the lock released in between:
		// other clients are not held up for the whole of it.
		for i, m := range entries {
			if i > 0 {
				h.mu.Lock()
			}
			h.dispatch(sess, sess.e.Receive(m.Raw, h.now()), ex)
			if i < len(entries)-1 {
				h.unlock()
			}
		}
	}
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
	if name, ok := tape.NameHeader(m.Method, m.Raw); ok {
		if h := hd.Get(mcphttp.HeaderName); h != name {
			return fmt.Sprintf("Mcp-Name header %q does not match the body's %q", h, name)
		}
	}
	return ""
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
		case h.opts.Gated && !h.gate.Pass(o.Seq):
			h.gate.Hold(o.Seq, gatedOutput{o, sess, origin})
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
	for _, g := range h.gate.Release(upTo) {
		h.route(g.sess, g.o, g.origin)
	}
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

// RuleAnswered tells the engine of session sid (its Mcp-Session-Id; ""
// before one was issued) that the client sent request msg and a rule in
// front of the handler answered or dropped it, so it never reached the
// handler (replay --listen --rules): see Engine.RuleAnswered. A request
// outside any session is listed in the report as the tape's none.
func (h *HTTPHandler) RuleAnswered(sid string, msg []byte, rule, action string) {
	h.mu.Lock()
	var sess *session
	switch {
	case !h.sessions:
		sess = h.lone
	case sid != "":
		sess = h.byID[sid]
	default:
		// Before an initialize: the session the next one opens, as
		// sessionFor gives traffic before its initialize.
		if h.fresh == nil && !h.issued {
			h.fresh = h.claim()
		}
		sess = h.fresh
	}
	if sess == nil {
		if es := tape.Classify(msg); len(es) == 1 && es[0].Kind == tape.KindRequest {
			h.ruled = append(h.ruled, RuleAnswer{Rule: rule, Action: action, Seq: -1, Method: es[0].Method})
		}
		h.unlock()
		return
	}
	h.dispatch(sess, sess.e.RuleAnswered(msg, rule, action, h.now()), nil)
	h.progressed(sess)
	h.unlock()
	h.kick()
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
		ex.left--
		for _, id := range o.also { // a batch rejected whole: one answer for all
			if sess.pending[id] == ex {
				delete(sess.pending, id)
				ex.left--
			}
		}
		msg := o.Msg
		if info.nullID {
			// Rejected before the server read the id: keep "id":null.
			msg = jsonrpc.SpliceID(msg, []byte("null"))
		}
		final := ex.left <= 0
		if info.resumed && h.sessions {
			// The recorded server closed the POST's stream and the client
			// got this answer on resuming it: so must this client.
			ex.breakHere()
		}
		ex.push(item{msg: msg, seq: o.Seq, status: info.status, sse: info.sse || info.resumed, final: final, whole: len(o.also) > 0})
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
		h.standalone(sess).push(item{msg: o.Msg, seq: o.Seq})
		return
	}
	if info.resumed && h.sessions {
		// On a POST's stream the client resumed: that POST's, after the
		// break where the recorded server closed it.
		ex := origin
		if ex == nil || ex.finished {
			ex = nil
			if n := len(sess.open); n > 0 {
				ex = sess.open[n-1]
			}
		}
		if ex != nil {
			ex.breakHere()
			ex.push(item{msg: o.Msg, seq: o.Seq, sse: true})
			return
		}
	}
	getOpen := sess.get != nil && sess.get.attached
	if !info.viaGET {
		if origin != nil && !origin.finished {
			origin.push(item{msg: o.Msg, seq: o.Seq, sse: true})
			return
		}
		if n := len(sess.open); n > 0 && (h.httpTape || !getOpen) {
			sess.open[n-1].push(item{msg: o.Msg, seq: o.Seq, sse: true})
			return
		}
	}
	switch {
	case getOpen:
		sess.get.push(item{msg: o.Msg, seq: o.Seq})
	case len(sess.held) < maxHeld:
		sess.held = append(sess.held, o.Msg)
	default:
		h.dropped++
	}
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
