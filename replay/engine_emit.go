package replay

// Emission: what the engine sends back, and when.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unsafe"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// waitingAnswer is a recorded answer held for the client's replies to the
// server requests sent before it (their live ids).
type waitingAnswer struct {
	out   []byte
	req   int // the recorded request answered
	seq   int // its recorded answer
	reqID tape.ID
}

// consume marks recorded request seq as matched by live request m and
// answers it.
func (e *Engine) consume(m tape.Entry, seq int) {
	e.report.matched++
	e.order.lost = false
	e.report.used[seq] = true
	if t := field(m.Raw, "params._meta.progressToken"); t != nil {
		e.out.liveToken[seq] = bytes.Clone(t) // m.Raw is the caller's buffer
	}
	e.setRef(seq)
	e.pass(seq)
	if p := e.x.Pair(seq).Partner; p >= 0 {
		e.sendDeferredBefore(seq, p)
	}
	e.respond(m, seq)
	e.sendDeferred(seq)
	e.taskCreated(seq)
	e.advance()
}

// RuleAnswered tells the engine that the client sent request msg and a
// rule at the edge answered it (respond, error) or dropped it (block), so
// the engine never received it (replay --rules). The recorded request it
// stands for, matched as Receive would, is consumed without sending its
// recorded answer: the client did send it, so it is not reported unused,
// and the report names the rule (Report.RuleAnswered). A request that
// matches no recorded one is listed there too (Seq -1), and is no
// divergence: the client was answered. Notifications and replies are not counted. It returns the
// outputs due by now: the recorded server messages before that request.
func (e *Engine) RuleAnswered(msg []byte, rule, action string, now time.Time) []Output {
	e.pos.now = now
	es := tape.Classify(msg)
	if len(es) != 1 || es[0].Kind != tape.KindRequest {
		return e.Poll(now)
	}
	m := es[0]
	e.report.requests++
	ra := RuleAnswer{Rule: rule, Action: action, Seq: -1, Method: m.Method}
	if p := field(m.Raw, "params"); p != nil {
		ra.Params = json.RawMessage(bytes.Clone(p))
	}
	if seq := e.standsFor(m); seq >= 0 {
		ra.Seq, ra.Line = seq, e.x.Entry(seq).Line
		e.report.matched++
		e.order.lost = false
		e.report.used[seq] = true
		e.setRef(seq)
		e.pass(seq)
		e.sendDeferred(seq)
		e.advance()
	}
	e.report.ruled = append(e.report.ruled, ra)
	return e.Poll(now)
}

// standsFor returns the recorded request live request m matches, as
// Receive would match it (strict: the next expected or one in the reorder
// window; keyed: by key), or -1; it answers and reports nothing.
func (e *Engine) standsFor(m tape.Entry) int {
	if e.opts.Mode != Strict {
		k, err := e.key(m.Method, m.Raw)
		if err != nil || !e.x.HasMethod(m.Method) {
			return -1
		}
		seq := e.lookup(k)
		if seq >= 0 {
			e.keys.served[k] = seq
		}
		return seq
	}
	if exp := e.nextExpected(); exp >= 0 {
		if rec, err := e.recorded(exp); err == nil {
			if same, _ := e.sameRequest(m, rec); same {
				return exp
			}
		}
	}
	return e.lookAhead(m)
}

// respond sends the recorded response of request seq with m's id.
func (e *Engine) respond(m tape.Entry, seq int) {
	p := e.x.Pair(seq)
	resp := p.Partner
	if p.Cancelled {
		// The client cancelled it while recording: wait for the live
		// cancellation, then send the late response if there was one.
		e.out.awaitCancel[m.ID] = resp
		return
	}
	if resp < 0 {
		if rej, last := batchRejection(e.x, e.server, seq); rej >= 0 {
			e.rejectBatch(m, rej, last)
			return
		}
		if resp = Rejection(e.x, e.server, seq); resp < 0 {
			// Never answered on the tape: say so rather than leave the
			// client waiting for an answer that will not come.
			en := e.x.Entry(seq)
			e.report.unanswered = append(e.report.unanswered, Unused{Seq: seq, Line: en.Line, Method: en.Method})
			why := "the recording ended before the server answered"
			if later := e.laterLine(seq); later > 0 {
				why = fmt.Sprintf("the server never answered it, though the tape goes on to line %d", later)
			}
			msg := fmt.Sprintf("tapedeck replay: the tape holds no answer to %s (tape line %d): %s", en.Method, en.Line, why)
			e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeNoAnswer, msg, nil), e.pos.now, -1, m.ID, nil)
			return
		}
	}
	if e.x.Entry(resp).Dropped {
		// A rule stopped the server's answer when recording: the client
		// never got it then; say so now rather than send it.
		en := e.x.Entry(seq)
		e.report.unanswered = append(e.report.unanswered, Unused{Seq: seq, Line: en.Line, Method: en.Method})
		msg := fmt.Sprintf("tapedeck replay: the answer to %s (tape line %d) was dropped by a rule when recording: the client never got it", en.Method, en.Line)
		e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeNoAnswer, msg, nil), e.pos.now, -1, m.ID, nil)
		return
	}
	e.keys.window = [2]int{seq, resp}
	e.advanceTo(resp)
	if e.pos.frontier < resp {
		e.streamMates(resp)
	}
	e.keys.window = [2]int{}
	body, ok := e.scanned.answers[resp]
	if !ok {
		rec, err := e.x.Message(resp)
		if err != nil {
			e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeDiverged, fmt.Sprintf("tapedeck replay: read recorded response: %v", err), nil), e.pos.now, resp, m.ID, nil)
			return
		}
		body = tape.StripMeta(rec.Raw)
		if len(e.scanned.answers) >= memoSize {
			clear(e.scanned.answers)
		}
		e.scanned.answers[resp] = body
	}
	out := jsonrpc.SpliceID(body, []byte(m.ID))
	if m.Method == "initialize" {
		// Answer with the version the client asked for: a client of
		// another era than the recording's must still get through
		// initialize (version drift is tolerated, see EngineOptions).
		if v := gjson.GetBytes(m.Raw, "params.protocolVersion"); v.Type == gjson.String && gjson.GetBytes(out, "result.protocolVersion").Exists() {
			if patched, err := sjson.SetBytes(out, "result.protocolVersion", v.String()); err == nil {
				out = patched
			}
		}
	}
	if len(e.repliesAwaited(seq, resp)) > 0 {
		// The recorded server asked the client something (roots,
		// sampling, elicitation) and answered after the reply: so does
		// the replay, whose answer must not reach the client first.
		// It waits until every server request recorded inside the call
		// was sent and answered, not only those sent so far: a server that
		// polls a task the client runs asks several times in a row.
		e.out.waiting = append(e.out.waiting, waitingAnswer{out: out, req: seq, seq: resp, reqID: m.ID})
		return
	}
	e.push(out, e.at(resp), resp, m.ID, nil)
}

// repliesAwaited returns the live ids of the server requests the replay
// sent between recorded request seq and its response resp whose recorded
// replies came before resp.
func (e *Engine) repliesAwaited(seq, resp int) []tape.ID {
	var ids []tape.ID
	for id, q := range e.out.outstanding {
		if q > seq && q < resp {
			if r := e.x.Pair(q).Partner; r >= 0 && r < resp {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// allReplied reports whether every server request recorded between
// request seq and its answer resp, and replied to before resp, has had
// the live client's reply.
func (e *Engine) allReplied(seq, resp int) bool {
	for q := seq + 1; q < resp; q++ {
		en := e.x.Entry(q)
		if en.Server != e.server || en.Dir != tape.DirRecv || en.Kind != tape.KindRequest || en.Dropped {
			continue
		}
		if r := e.x.Pair(q).Partner; r >= 0 && r < resp && !e.report.used[r] {
			return false
		}
	}
	return true
}

// inWindow reports whether recorded message seq lies inside a call the
// live client made and is being answered: the one being answered now, or
// one whose answer waits for the client's replies.
func (e *Engine) inWindow(seq int) bool {
	if e.keys.window[0] < seq && seq < e.keys.window[1] {
		return true
	}
	for _, w := range e.out.waiting {
		if w.req < seq && seq < w.seq {
			return true
		}
	}
	return false
}

// releaseWaiting sends the held answers no longer waiting for a reply.
func (e *Engine) releaseWaiting() {
	kept := e.out.waiting[:0]
	for _, w := range e.out.waiting {
		if e.allReplied(w.req, w.seq) {
			e.push(w.out, e.at(w.seq), w.seq, w.reqID, nil)
			continue
		}
		kept = append(kept, w)
	}
	clear(e.out.waiting[len(kept):])
	e.out.waiting = kept
}

// laterLine returns the line of the server's next wire message after seq,
// or 0 when the tape ends first.
func (e *Engine) laterLine(seq int) int {
	for i := seq + 1; i < e.x.Len(); i++ {
		if en := e.x.Entry(i); en.Server == e.server && en.IsWire() {
			return en.Line
		}
	}
	return 0
}

// Rejection returns the response with "id":null that answered recorded
// request seq, or -1: a Streamable HTTP server rejects a request it cannot
// read yet (server-everything's HTTP 400 to server/discover before
// initialize) without its id, so the tape cannot pair them. It is the
// server's first response after seq, before the client's next message.
func Rejection(x *tape.Index, server string, seq int) int {
	for i := seq + 1; i < x.Len(); i++ {
		en := x.Entry(i)
		if en.Server != server || !en.IsWire() {
			continue
		}
		if en.Dir == tape.DirSend || en.Kind == tape.KindResponse && !x.Pair(i).Orphan {
			return -1
		}
		if en.Kind != tape.KindResponse {
			continue
		}
		if m, err := x.Message(i); err == nil && m.ID == "null" {
			return i
		}
		return -1
	}
	return -1
}

// batchRejection returns the response with "id":null that rejected the
// whole batch recorded request seq travelled in (a server that does not
// take batches answers one parse or invalid-request error for all of
// them), and whether seq is the batch's last request; -1 when seq was not
// in a batch or the batch was answered member by member.
func batchRejection(x *tape.Index, server string, seq int) (int, bool) {
	b := x.Entry(seq).Batch
	if b == 0 {
		return -1, false
	}
	last := true
	for i := seq + 1; i < x.Len(); i++ {
		en := x.Entry(i)
		if en.Server != server || !en.IsWire() {
			continue
		}
		if en.Dir == tape.DirSend {
			if en.Batch != b {
				return -1, false
			}
			last = last && en.Kind != tape.KindRequest
			continue
		}
		if en.Kind != tape.KindResponse {
			continue
		}
		if !x.Pair(i).Orphan {
			return -1, false
		}
		if m, err := x.Message(i); err == nil && m.ID == "null" {
			return i, last
		}
		return -1, false
	}
	return -1, false
}

// rejectBatch answers live request m, which matched a member of a batch
// the recorded server rejected whole (rej): nothing until the batch's last
// member, then the recorded rejection, once, with its id null.
func (e *Engine) rejectBatch(m tape.Entry, rej int, last bool) {
	if !last {
		e.out.batchIDs[rej] = append(e.out.batchIDs[rej], m.ID)
		return
	}
	also := e.out.batchIDs[rej]
	delete(e.out.batchIDs, rej)
	e.advanceTo(rej)
	rec, err := e.x.Message(rej)
	if err != nil {
		e.push(jsonrpc.ErrorResponse([]byte(m.ID), CodeDiverged, fmt.Sprintf("tapedeck replay: read recorded response: %v", err), nil), e.pos.now, rej, m.ID, nil)
		return
	}
	e.pushOutput(Output{Msg: tape.StripMeta(rec.Raw), At: e.at(rej), Seq: rej, reqID: m.ID, also: also})
}

// field returns the raw JSON of path in msg, as a slice of msg (no copy,
// unlike gjson.GetBytes), or nil when it is absent.
func field(msg []byte, path string) []byte {
	r := gjson.Get(unsafeString(msg), path)
	switch {
	case !r.Exists():
		return nil
	case r.Index > 0:
		return msg[r.Index : r.Index+len(r.Raw)]
	}
	return []byte(r.Raw) // not a plain slice of msg
}

// unsafeString views b as a string for gjson, without a copy. Only for
// reading: nothing returned may keep a string made from it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// streamMates sends now the recorded server notifications before response
// resp that the tape had on resp's own HTTP stream, when the frontier
// cannot reach them yet: it waits at a client message of another request
// made at the same time (the client sent 7 and 8 together; 7's log
// messages came on 7's stream, after 8's answer). Sent later, they would
// miss 7's stream, which closes with its answer.
func (e *Engine) streamMates(resp int) {
	rm, err := e.x.Message(resp)
	if err != nil {
		return
	}
	stream := tape.ParseHTTPMeta(rm.Raw).Stream
	if stream == 0 {
		return // not recorded over HTTP, or not on a stream
	}
	for i := e.pos.frontier + 1; i < resp; i++ {
		en := e.x.Entry(i)
		if en.Server != e.server || en.Dir != tape.DirRecv || en.Kind != tape.KindNotification || e.out.early[i] {
			continue
		}
		if m, err := e.x.Message(i); err == nil && tape.ParseHTTPMeta(m.Raw).Stream == stream {
			e.visit(i)
			e.out.early[i] = true
		}
	}
}

// pass moves the frontier past recorded message seq: the recorded server
// messages before it are emitted, the client messages before it passed.
func (e *Engine) pass(seq int) {
	for e.pos.frontier <= seq {
		e.visit(e.pos.frontier)
		e.pos.frontier++
	}
}

// advance emits the recorded server messages up to the next client message
// the tape still waits for.
func (e *Engine) advance() { e.advanceTo(e.end()) }

func (e *Engine) advanceTo(limit int) {
	limit = min(limit, e.end())
	for e.pos.frontier < limit {
		en := e.x.Entry(e.pos.frontier)
		if en.Server == e.server && en.IsWire() && en.Dir == tape.DirSend && !e.report.used[e.pos.frontier] {
			return
		}
		e.visit(e.pos.frontier)
		e.pos.frontier++
	}
}

// visit emits recorded message seq if it is a server notification or
// request. In keyed and loose mode one that belongs to a client message the
// live client has not sent (see owner) waits for it instead.
func (e *Engine) visit(seq int) {
	if e.out.early[seq] {
		delete(e.out.early, seq) // sent already (streamMates)
		return
	}
	en := e.x.Entry(seq)
	if en.Server == e.server && en.Dir == tape.DirSend && en.IsWire() {
		e.owned.lastClient = seq
	}
	if e.out.stderr && en.Server == e.server && en.Kind == tape.KindLifecycle && en.Method == tape.MethodStderr {
		e.stderrLine(seq)
		return
	}
	if en.Server != e.server || en.Dir != tape.DirRecv || en.Dropped {
		return // a dropped message never reached the client when recording
	}
	if e.opts.Mode != Strict && (en.Kind == tape.KindNotification || en.Kind == tape.KindRequest) {
		if o := e.owner(seq); o >= 0 && !e.report.used[o] {
			e.owned.deferred[o] = append(e.owned.deferred[o], seq)
			return
		}
	}
	e.emit(seq)
}

// stderrLine queues the line the recorded server wrote on stderr at seq,
// at its recorded time.
func (e *Engine) stderrLine(seq int) {
	rec, err := e.x.Message(seq)
	if err != nil {
		return
	}
	text := gjson.GetBytes(rec.Raw, "params.text")
	if text.Type != gjson.String {
		return
	}
	line := []byte(text.Str)
	if len(line) == 0 || line[len(line)-1] != '\n' {
		line = append(line, '\n')
	}
	e.pushOutput(Output{Stderr: line, At: e.at(seq), Seq: seq})
}

// owner returns the client message recorded message seq (a server
// notification or request, being visited) belongs to: for a progress
// notification the request that asked for it, else the client message it
// followed (a request, a notification or a reply to the server); -1 when
// none came before it.
func (e *Engine) owner(seq int) int {
	en := e.x.Entry(seq)
	if en.Kind == tape.KindNotification && en.Method == "notifications/progress" {
		if rec, err := e.x.Message(seq); err == nil {
			if r := e.tokenRequest(seq, field(rec.Raw, "params.progressToken")); r >= 0 {
				return r
			}
		}
	}
	return e.owned.lastClient
}

// tokenRequest returns the recorded request before seq, among the 64 last,
// that carried progressToken token, or -1.
func (e *Engine) tokenRequest(seq int, token []byte) int {
	if token == nil {
		return -1
	}
	i, _ := slices.BinarySearch(e.scanned.reqs, seq)
	for looked := 0; i > 0 && looked < 64; looked++ {
		i--
		rec, err := e.recorded(e.scanned.reqs[i])
		if err == nil && bytes.Equal(field(rec.Raw, "params._meta.progressToken"), token) {
			return e.scanned.reqs[i]
		}
	}
	return -1
}

// sendDeferred emits the recorded server messages that waited for client
// message seq (visit), now that the live client sent it.
func (e *Engine) sendDeferred(seq int) { e.sendDeferredBefore(seq, e.end()) }

// sendDeferredBefore emits those recorded before limit: a call's answer
// goes between the ones before it and the ones after.
func (e *Engine) sendDeferredBefore(seq, limit int) {
	d := e.owned.deferred[seq]
	n := 0
	for n < len(d) && d[n] < limit {
		e.emit(d[n])
		n++
	}
	if n == len(d) {
		delete(e.owned.deferred, seq)
	} else if n > 0 {
		e.owned.deferred[seq] = d[n:]
	}
}

// emit sends recorded server message seq, a notification or a request.
func (e *Engine) emit(seq int) {
	en := e.x.Entry(seq)
	switch en.Kind {
	case tape.KindNotification:
		rec, err := e.x.Message(seq)
		if err != nil {
			return
		}
		body := tape.StripMeta(rec.Raw)
		if en.Method == "notifications/progress" {
			var ok bool
			if body, ok = e.progressFor(seq, body); !ok {
				return
			}
			e.push(body, e.at(seq), seq, "", nil)
			e.out.queue[len(e.out.queue)-1].progress = true
			return
		}
		e.push(body, e.at(seq), seq, "", nil)
	case tape.KindRequest:
		rec, err := e.x.Message(seq)
		if err != nil {
			return
		}
		id := rec.ID
		if _, taken := e.out.outstanding[id]; taken {
			e.out.srvIDs++
			id = tape.ID(strconv.Quote(fmt.Sprintf("tapedeck-%d", e.out.srvIDs)))
		}
		e.out.outstanding[id] = seq
		e.push(jsonrpc.SpliceID(e.liveTaskID(en.Method, tape.StripMeta(rec.Raw)), []byte(id)), e.at(seq), seq, "", nil)
	}
}

// progressFor gives recorded progress notification body (at seq) the
// progressToken of the live request its recorded request matched; ok is
// false when that live request asked for no progress, and the notification
// is not sent. A notification whose request is not found among the
// matched requests shortly before it goes out as recorded.
func (e *Engine) progressFor(seq int, body []byte) ([]byte, bool) {
	token := field(body, "params.progressToken")
	if token == nil {
		return body, true
	}
	i, _ := slices.BinarySearch(e.scanned.reqs, seq)
	for looked := 0; i > 0 && looked < 64; looked++ {
		i--
		r := e.scanned.reqs[i]
		if !e.report.used[r] {
			continue
		}
		rec, err := e.recorded(r)
		if err != nil || !bytes.Equal(field(rec.Raw, "params._meta.progressToken"), token) {
			continue
		}
		live, ok := e.out.liveToken[r]
		if !ok {
			return nil, false
		}
		return jsonrpc.Splice(body, "params.progressToken", live), true
	}
	return body, true
}

// notification handles a live client notification: it consumes the next
// recorded one of the same method, and honours cancellations.
func (e *Engine) notification(m tape.Entry) {
	if m.Method == "notifications/cancelled" {
		id := tape.ID(gjson.GetBytes(m.Raw, "params.requestId").Raw)
		e.out.queue = slices.DeleteFunc(e.out.queue, func(o Output) bool { return o.reqID == id && o.Seq >= 0 })
		if late, ok := e.out.awaitCancel[id]; ok {
			delete(e.out.awaitCancel, id)
			if late >= 0 {
				if rec, err := e.x.Message(late); err == nil {
					e.push(jsonrpc.SpliceID(tape.StripMeta(rec.Raw), []byte(id)), e.pos.now, late, id, nil)
				}
			}
		}
	}
	if e.opts.Mode != Strict {
		if i := e.recordedNotification(m.Method); i >= 0 {
			e.report.used[i] = true
			e.setRef(i)
			e.sendDeferred(i)
		}
		e.advance()
		return
	}
	// Look for it among the client messages the tape waits for next.
	n := e.end()
	for i := e.pos.frontier; i < n; i++ {
		en := e.x.Entry(i)
		if en.Server != e.server || en.Dir != tape.DirSend || !en.IsWire() || e.report.used[i] {
			continue
		}
		if en.Kind == tape.KindRequest {
			break
		}
		if en.Kind == tape.KindNotification && en.Method == m.Method {
			e.report.used[i] = true
			e.setRef(i)
			break
		}
	}
	e.advance()
}

// recordedNotification returns, in keyed and loose mode, the first
// recorded client notification of method not yet matched, wherever it is
// on the tape, or -1. A cursor a method keeps the search linear.
func (e *Engine) recordedNotification(method string) int {
	n := e.end()
	i, ok := e.keys.notifAt[method]
	if !ok {
		i = e.pos.lo
	}
	for ; i < n; i++ {
		en := e.x.Entry(i)
		if en.Server == e.server && en.Dir == tape.DirSend && en.Kind == tape.KindNotification && en.Method == method && !e.report.used[i] {
			e.keys.notifAt[method] = i + 1
			return i
		}
	}
	e.keys.notifAt[method] = n
	return -1
}

// reply handles the client's response to a server request sent from the tape.
func (e *Engine) reply(m tape.Entry) {
	q, ok := e.out.outstanding[m.ID]
	if !ok {
		d := e.newDivergence(m, -1, ReasonUnexpected)
		d.Message = fmt.Sprintf("replay mismatch for server '%s': response id %s answers no request the replay sent", e.server, m.ID)
		d.Resolution = NotAnswered
		e.push(nil, e.pos.now, -1, "", d)
		return
	}
	delete(e.out.outstanding, m.ID)
	defer e.releaseWaiting()
	rec := e.x.Pair(q).Partner
	if rec >= 0 {
		e.report.used[rec] = true
		e.setRef(rec)
		defer e.sendDeferred(rec)
		method := e.x.Entry(q).Method
		r, err := e.recorded(rec)
		var want, got any
		if err == nil {
			want, err = e.norm.Normalize(r.Raw)
		}
		var problem string
		switch {
		case err != nil:
			problem = fmt.Sprintf("the recorded reply at tape line %d could not be read: %v", e.x.Entry(rec).Line, err)
		default:
			if got, err = e.norm.Normalize(m.Raw); err != nil {
				problem = fmt.Sprintf("the reply received could not be decoded: %v", err)
			}
		}
		if problem == "" {
			e.noteClientTask(r.Raw, m.Raw)
			dropVolatileTask(method, want)
			dropVolatileTask(method, got)
		}
		if problem != "" {
			d := e.newDivergence(m, rec, ReasonReply)
			d.Resolution = NotAnswered
			d.Message = fmt.Sprintf("replay mismatch for server '%s': the reply to %s %s cannot be checked: %s", e.server, method, m.ID, problem)
			e.push(nil, e.pos.now, -1, "", d)
		} else if diff := Diff(want, got); len(diff) > 0 {
			d := e.newDivergence(m, rec, ReasonReply)
			d.Diff = diff
			d.Resolution = NotAnswered
			d.Message = fmt.Sprintf("replay mismatch for server '%s': reply to %s %s differs from the recorded reply (%s)", e.server, method, m.ID, diffSummary(diff))
			e.push(nil, e.pos.now, -1, "", d)
		}
	}
	e.advance()
}
