package record

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/internal/sse"

	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// Rules in the recorders
//
// With a rules file, each message a recorder passes on is first put to a
// rules.Conn. What a rule did is on the tape: the message that went on the
// wire (or the one that was dropped), with _meta.injected saying which
// rule, what action, and the original bytes of a message it changed; an
// answer a rule made up is recorded in the other direction, marked
// injected. The wire carries exactly what the tape says.

// injectedMeta is the metaExtra of a message a rule acted on: the
// recorder's own members (base, may be nil) plus injected.
type injectedMeta struct {
	base metaExtra
	inj  []rules.Injection
}

func (m injectedMeta) appendJSON(b []byte) []byte {
	if m.base != nil {
		b = m.base.appendJSON(b)
	}
	if len(m.inj) == 0 {
		return b
	}
	return tape.AppendInjections(append(b, `,"`+tape.MetaInjected+`":`...), m.inj)
}

func (m injectedMeta) fields() map[string]any {
	f := map[string]any{}
	if m.base != nil {
		f = m.base.fields()
	}
	if len(m.inj) > 0 {
		f[tape.MetaInjected] = json.RawMessage(tape.AppendInjections(nil, m.inj))
	}
	return f
}

// withInjections returns base with the injections added, or base itself
// when there are none.
func withInjections(base metaExtra, inj []rules.Injection) metaExtra {
	if len(inj) == 0 {
		return base
	}
	return injectedMeta{base: base, inj: inj}
}

// lockedWriter serializes writes from a relay and from the other
// direction's replies.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// NewLockedWriter returns a writer that passes each Write to w, one at a
// time: for recorders that share one tape (the live intercept's shims of
// successive clients).
func NewLockedWriter(w io.Writer) io.Writer { return &lockedWriter{w: w} }

// ruleRelay is one direction of the stdio shim under rules: it records
// each line as the rules leave it and forwards what they let through.
type ruleRelay struct {
	conn   *rules.Conn
	dir    tape.Dir
	server string
	sink   *sink
	batch  *lineBatch
	out    io.Writer // this direction's peer
	back   io.Writer // the sender, for answers a rule makes up
	reply  *sink     // records those answers (straight to the tape)
	note   func(error)
	logf   func(string)
	cut    func() // disconnect both sides
	pend   []byte // lines to forward at the next flush, copied
	span   []byte // or: lines to forward, in the relay's buffer
	werr   error
	// hold waits d for a delay rule; it reports false when the session
	// ended first (the message is then recorded as dropped, not sent).
	hold func(d time.Duration) bool
	// holding counts the messages being held, until they are sent on or
	// recorded as dropped (the shim waits for it before its close record).
	holding *atomic.Int32
	peek    tape.Peeker
	icpt    Interceptor
}

// line handles one line as it came (with its line ending).
func (rr *ruleRelay) line(raw []byte) {
	msg := bytes.TrimRight(raw, "\r\n")
	if len(bytes.TrimSpace(msg)) == 0 {
		rr.keep(raw)
		return
	}
	if msg[0] == '[' && rr.batchLine(raw, msg) {
		return
	}
	h := rr.peek.Peek(msg)
	m := rules.Message{Raw: msg, Dir: rr.dir, Server: rr.server, Head: &h}
	d := rules.Decide(rr.conn, rr.icpt, m, rr.flush) // what came before a held message goes on
	for _, l := range d.Logs {
		rr.logf(l)
	}
	if !d.Matched {
		if len(d.Injections) > 0 || !h.Plain || !rr.sink.plain(msg) {
			rr.note(rr.sink.message(msg, rr.dir, withInjections(nil, d.Injections)))
		}
		rr.keep(raw)
		return
	}
	if d.Delay > 0 {
		rr.flush()
		rr.holding.Add(1)
		defer rr.holding.Add(-1)
		if !rr.hold(d.Delay) {
			rr.note(rr.sink.message(msg, rr.dir, withInjections(nil, endedHolding(d.Injections))))
			rr.note(rr.batch.flush())
			return
		}
	}
	meta := withInjections(nil, d.Injections)
	switch {
	case d.Disconnect:
		rr.note(rr.sink.message(msg, rr.dir, meta))
		rr.flush()
		rr.cut()
		return
	case d.Out == nil:
		rr.note(rr.sink.message(msg, rr.dir, meta))
		rr.keep(raw)
	case len(d.Out) == 0:
		rr.note(rr.sink.message(msg, rr.dir, meta))
	default:
		for _, o := range d.Out {
			rr.note(rr.sink.message(o, rr.dir, meta))
			rr.add(o, true)
		}
	}
	if d.Reply != nil {
		rr.flush() // the message is on the tape before its answer
		rr.note(rr.reply.message(d.Reply, rr.dir.Opposite(), withInjections(nil, d.ReplyInjections)))
		_, _ = rr.back.Write(append(d.Reply, '\n'))
	}
}

// keep forwards a line as it came. Lines that pass unchanged one after
// another in the relay's buffer are forwarded from it, without a copy.
func (rr *ruleRelay) keep(raw []byte) {
	n := len(rr.span)
	if len(rr.pend) == 0 && (n == 0 || cap(rr.span) >= n+len(raw) && &rr.span[:n+1][n] == &raw[0]) {
		if n == 0 {
			rr.span = raw
		} else {
			rr.span = rr.span[:n+len(raw)]
		}
		return
	}
	rr.add(raw, false)
}

// add forwards b (and a newline) in the pending copy.
func (rr *ruleRelay) add(b []byte, newline bool) {
	if len(rr.span) > 0 {
		rr.pend = append(rr.pend, rr.span...)
		rr.span = nil
	}
	rr.pend = append(rr.pend, b...)
	if newline {
		rr.pend = append(rr.pend, '\n')
	}
}

// batchLine puts each message of a JSON-RPC batch to the rules: what they
// let through goes on as one batch, the answers they made up go back as
// one (a batch when several), a dropped message's bytes go in its
// injection's original. It reports false, doing nothing, when no rule
// acted (the line then goes on as it came).
func (rr *ruleRelay) batchLine(raw, msg []byte) bool {
	var elems []json.RawMessage
	if rr.conn == nil || json.Unmarshal(msg, &elems) != nil || len(elems) == 0 {
		return false
	}
	var out, replies [][]byte
	var inj, rinj []rules.Injection
	var delay time.Duration
	acted, cut := false, false
	for _, el := range elems {
		d := rr.conn.Apply(rules.Message{Raw: el, Dir: rr.dir, Server: rr.server})
		for _, l := range d.Logs {
			rr.logf(l)
		}
		if d.Out != nil && len(d.Out) == 0 {
			for i := range d.Injections {
				if d.Injections[i].Dropped && len(d.Injections[i].Original) == 0 {
					d.Injections[i].Original = el
				}
			}
		}
		inj = append(inj, d.Injections...)
		if !d.Matched {
			out = append(out, el)
			continue
		}
		acted = true
		delay += d.Delay
		cut = cut || d.Disconnect
		if d.Out == nil {
			out = append(out, el)
		} else {
			out = append(out, d.Out...)
		}
		if d.Reply != nil {
			replies = append(replies, d.Reply)
			rinj = append(rinj, d.ReplyInjections...)
		}
	}
	if !acted && len(inj) == 0 {
		return false
	}
	if delay > 0 {
		rr.flush()
		rr.holding.Add(1)
		defer rr.holding.Add(-1)
		if !rr.hold(delay) {
			rr.note(rr.sink.message(msg, rr.dir, withInjections(nil, endedHolding(inj))))
			rr.note(rr.batch.flush())
			return true
		}
	}
	meta := withInjections(nil, inj)
	switch {
	case cut:
		rr.note(rr.sink.message(msg, rr.dir, meta))
		rr.flush()
		rr.cut()
		return true
	case !acted:
		rr.note(rr.sink.message(msg, rr.dir, meta)) // audits only
		rr.keep(raw)
	case len(out) > 0:
		b := joinBatch(out)
		rr.note(rr.sink.message(b, rr.dir, meta))
		rr.add(b, true)
	default:
		rr.note(rr.sink.message(msg, rr.dir, meta)) // every message dropped
	}
	if len(replies) > 0 {
		rr.flush()
		reply := replies[0]
		if len(replies) > 1 {
			reply = joinBatch(replies)
		}
		rr.note(rr.reply.message(reply, rr.dir.Opposite(), withInjections(nil, rinj)))
		_, _ = rr.back.Write(append(reply, '\n'))
	}
	return true
}

// endedHolding marks the delay injections of a message the session ended
// on while a rule held it: dropped, with the reason.
func endedHolding(inj []rules.Injection) []rules.Injection {
	out := make([]rules.Injection, len(inj))
	for i, x := range inj {
		if x.Action == string(rules.Delay) && !x.Audit {
			x.Dropped = true
			x.Note = fmt.Sprintf("the session ended while the rule held the message (delay %s): never sent", time.Duration(x.DelayMS)*time.Millisecond)
		}
		out[i] = x
	}
	return out
}

// holdUntil returns a ruleRelay.hold that waits d, or less when ending is
// closed (false then). With in, the relay's input, it reads ahead while it
// waits, so that the client closing its input is seen (eof) although the
// relay is not reading.
func holdUntil(ending <-chan struct{}, in *aheadReader) func(time.Duration) bool {
	return func(d time.Duration) bool {
		t := time.NewTimer(d)
		defer t.Stop()
		if in != nil {
			in.start()
			defer in.stop()
		}
		select {
		case <-t.C:
			return true
		case <-ending:
			return false
		}
	}
}

// aheadReader is the client's input under rules. While a delay rule holds
// a message the relay reads no further, so the reader reads ahead on a
// goroutine of its own (start, stop) and closes eof when the input ends:
// the shim then knows the client is done. What it read ahead, and how the
// input ended, the relay reads next, in order.
type aheadReader struct {
	r   io.Reader
	eof chan struct{} // closed when a read ahead met the input's end

	mu     sync.Mutex
	ahead  bool          // reading ahead is wanted
	busy   chan struct{} // a read-ahead goroutine runs; closed when it returns
	buf    []byte        // read ahead, not yet read
	err    error         // how the input ended, once a read ahead met it
	closed sync.Once
}

func newAheadReader(r io.Reader) *aheadReader {
	return &aheadReader{r: r, eof: make(chan struct{})}
}

// maxAhead bounds what is read ahead: past it, the client waits.
const maxAhead = 4 << 20

func (a *aheadReader) start() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.ahead = true
	if a.busy != nil || a.err != nil || len(a.buf) >= maxAhead {
		return
	}
	busy := make(chan struct{})
	a.busy = busy
	go func() {
		chunk := make([]byte, 64<<10)
		for {
			n, err := a.r.Read(chunk)
			a.mu.Lock()
			a.buf = append(a.buf, chunk[:n]...)
			if err != nil {
				a.err = err
				a.closed.Do(func() { close(a.eof) })
			}
			if err != nil || !a.ahead || len(a.buf) >= maxAhead {
				a.busy = nil
				a.mu.Unlock()
				close(busy)
				return
			}
			a.mu.Unlock()
		}
	}()
}

func (a *aheadReader) stop() {
	a.mu.Lock()
	a.ahead = false
	a.mu.Unlock()
}

func (a *aheadReader) Read(p []byte) (int, error) {
	a.mu.Lock()
	for len(a.buf) == 0 && a.busy != nil {
		busy := a.busy
		a.mu.Unlock()
		<-busy
		a.mu.Lock()
	}
	if len(a.buf) > 0 {
		n := copy(p, a.buf)
		a.buf = a.buf[n:]
		if len(a.buf) == 0 {
			a.buf = nil
		}
		a.mu.Unlock()
		return n, nil
	}
	err := a.err
	a.mu.Unlock()
	if err != nil {
		return 0, err
	}
	return a.r.Read(p)
}

// joinBatch makes a JSON-RPC batch of messages.
func joinBatch(msgs [][]byte) []byte {
	b := []byte{'['}
	for i, m := range msgs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, m...)
	}
	return append(b, ']')
}

// flush puts the recorded lines on the tape and forwards what is pending;
// the relay calls it before its buffer is read into again.
func (rr *ruleRelay) flush() {
	rr.note(rr.batch.flush())
	out := rr.pend
	if len(rr.span) > 0 {
		out = rr.span
	}
	if len(out) > 0 && rr.werr == nil {
		_, rr.werr = rr.out.Write(out)
	}
	rr.pend, rr.span = rr.pend[:0], nil
}

// Interceptor holds messages for a person to decide on (the debugger's
// live intercept): each message the rules left alone is offered to Holds,
// and one it holds waits in Decide, the messages before it forwarded, its
// direction stopped, until the decision, which is applied as a rule's
// (rules.Decide, rules first, then the person).
type Interceptor = rules.Person

// errDisconnect is how a rule's disconnect reaches the reverse proxy's
// error handler, which aborts the client's connection.
var errDisconnect = errors.New("tapedeck: a rule cut the connection")

// decide puts one message of the HTTP proxy to the rules; ok is false when
// no rule could apply (a batch, or nothing matched and nothing audited).
func (p *Proxy) decide(msg []byte, dir tape.Dir, session string) (rules.Decision, bool) {
	if (p.rules == nil && p.Intercept == nil) || len(msg) == 0 || msg[0] != '{' {
		return rules.Decision{}, false
	}
	m := rules.Message{Raw: msg, Dir: dir, Server: p.rec.server, Session: session}
	d := rules.Decide(p.rules, p.Intercept, m, nil)
	for _, l := range d.Logs {
		if p.Logf != nil {
			p.Logf(l)
		}
	}
	return d, d.Matched || len(d.Injections) > 0
}

// ruleRequest applies the rules to a POSTed message before it goes
// upstream, recording it. It returns the body to forward, or done when the
// request has been dealt with here (answered, dropped or cut).
func (p *Proxy) ruleRequest(w http.ResponseWriter, r *http.Request, ex *exchange, body []byte) ([]byte, bool) {
	trimmed := bytes.TrimSpace(body)
	d, ok := p.decide(trimmed, tape.DirSend, ex.session)
	if !ok {
		p.note(p.message(body, tape.DirSend, recordMeta{ex: ex}))
		return body, false
	}
	meta := withInjections(recordMeta{ex: ex}, d.Injections)
	if d.Delay > 0 {
		sleepCtx(r.Context(), d.Delay)
	}
	switch {
	case d.Disconnect:
		p.note(p.message(trimmed, tape.DirSend, meta))
		panic(http.ErrAbortHandler)
	case d.Out == nil:
		p.note(p.message(trimmed, tape.DirSend, meta))
		return body, false
	case len(d.Out) == 0:
		p.note(p.message(trimmed, tape.DirSend, meta))
	default:
		p.note(p.message(d.Out[0], tape.DirSend, meta))
		for _, dup := range d.Out[1:] {
			// A duplicate: the copy goes upstream in a POST of its own,
			// whose answer is recorded but is not the client's.
			p.note(p.message(dup, tape.DirSend, meta))
			rule := ""
			for _, in := range d.Injections {
				if in.Action == string(rules.Duplicate) {
					rule = in.Rule
				}
			}
			go p.duplicateUpstream(ex, dup, rule)
		}
		return d.Out[0], false
	}
	if p.RuleAnswered != nil {
		for _, in := range d.Injections {
			if in.Dropped && !in.Audit {
				p.RuleAnswered(ex.session, trimmed, in.Rule, in.Action)
				break
			}
		}
	}
	if d.Reply != nil {
		p.note(p.message(d.Reply, tape.DirRecv, withInjections(recordMeta{ex: ex, status: http.StatusOK}, d.ReplyInjections)))
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(d.Reply)
		return nil, true
	}
	if es := tape.Classify(trimmed); len(es) == 1 && es[0].Kind == tape.KindRequest {
		<-r.Context().Done() // a dropped request is never answered
		return nil, true
	}
	w.WriteHeader(http.StatusAccepted)
	return nil, true
}

// ruleResponse applies the rules to a JSON answer before the client gets it.
func (p *Proxy) ruleResponse(resp *http.Response, msg []byte, m recordMeta) error {
	d, ok := p.decide(msg, tape.DirRecv, m.ex.session)
	if !ok {
		p.note(p.message(msg, tape.DirRecv, m))
		return nil
	}
	meta := withInjections(m, d.Injections)
	if d.Delay > 0 {
		sleepCtx(resp.Request.Context(), d.Delay)
	}
	switch {
	case d.Disconnect:
		p.note(p.message(msg, tape.DirRecv, meta))
		return errDisconnect
	case d.Out == nil:
		p.note(p.message(msg, tape.DirRecv, meta))
	case len(d.Out) == 0:
		p.note(p.message(msg, tape.DirRecv, meta))
		<-resp.Request.Context().Done() // a dropped answer never comes
		return resp.Request.Context().Err()
	default:
		for _, o := range d.Out {
			p.note(p.message(o, tape.DirRecv, meta))
		}
		body := d.Out[0]
		if len(d.Out) > 1 { // a duplicate: both, as a batch
			body = append(append(append([]byte{'['}, d.Out[0]...), ','), append(d.Out[1], ']')...)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		resp.ContentLength = int64(len(body))
		resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	}
	return nil
}

// ruleEvent applies the rules to the message of an SSE event; it returns
// the bytes to send the client in its place.
func (s *sseRelay) ruleEvent(e sse.Event, m recordMeta) []byte {
	p := s.p
	d, ok := p.decide(bytes.TrimSpace(e.Data), tape.DirRecv, s.ex.session)
	if !ok {
		p.note(p.message(e.Data, tape.DirRecv, m))
		return e.Raw
	}
	meta := withInjections(m, d.Injections)
	if d.Delay > 0 {
		time.Sleep(d.Delay)
	}
	switch {
	case d.Disconnect:
		p.note(p.message(e.Data, tape.DirRecv, meta))
		s.err = errDisconnect
		return nil
	case d.Out == nil:
		p.note(p.message(e.Data, tape.DirRecv, meta))
		return e.Raw
	case len(d.Out) == 0:
		p.note(p.message(e.Data, tape.DirRecv, meta))
	default:
		var b bytes.Buffer
		for i, o := range d.Out {
			p.note(p.message(o, tape.DirRecv, meta))
			ev := e
			ev.Data = o
			if i > 0 {
				ev.HasID, ev.ID = false, ""
			}
			_ = sse.Write(&b, ev)
		}
		if d.Reply == nil {
			return b.Bytes()
		}
		e.Raw = b.Bytes()
	}
	if d.Reply != nil {
		// A server's request answered by a rule: the answer goes upstream.
		p.note(p.message(d.Reply, tape.DirSend, withInjections(recordMeta{ex: s.ex}, d.ReplyInjections)))
		go p.postUpstream(s.ex, d.Reply)
	}
	if d.Out != nil && len(d.Out) > 0 {
		return e.Raw
	}
	return nil
}

// postUpstream sends a message a rule made up to the server, in the
// exchange's session; the server's answer (202) is not the client's.
func (p *Proxy) postUpstream(ex *exchange, msg []byte) {
	req, err := p.upstreamPost(context.Background(), ex, msg)
	if err != nil {
		return
	}
	resp, err := p.rp.Transport.RoundTrip(req)
	if err == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// duplicateUpstream sends a copy of a client's message (a duplicate rule)
// upstream, recording the server's answer to it, which the client never
// sees.
func (p *Proxy) duplicateUpstream(ex *exchange, msg []byte, rule string) {
	req, err := p.upstreamPost(context.Background(), ex, msg)
	if err != nil {
		return
	}
	resp, err := p.rp.Transport.RoundTrip(req)
	if err != nil {
		return
	}
	defer resp.Body.Close()
	meta := withInjections(recordMeta{ex: ex, status: resp.StatusCode}, []rules.Injection{{Rule: rule, Action: string(rules.Duplicate), Dropped: true,
		Note: "the server's answer to the duplicate: recorded, not forwarded to the client"}})
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		rd := sse.NewReader(resp.Body)
		for {
			e, err := rd.Next()
			if data := bytes.TrimSpace(e.Data); len(data) > 0 {
				p.note(p.message(data, tape.DirRecv, meta))
			}
			if err != nil {
				return
			}
		}
	}
	if body, err := io.ReadAll(resp.Body); err == nil {
		if body = bytes.TrimSpace(body); len(body) > 0 && body[0] == '{' {
			p.note(p.message(body, tape.DirRecv, meta))
		}
	}
}

// upstreamPost is a POST of the proxy's own to the upstream server, in
// ex's session and protocol version.
func (p *Proxy) upstreamPost(ctx context.Context, ex *exchange, msg []byte) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.Upstream.String(), bytes.NewReader(msg))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if ex.session != "" {
		req.Header.Set("Mcp-Session-Id", ex.session)
	}
	if ex.protocolVersion != "" {
		req.Header.Set("Mcp-Protocol-Version", ex.protocolVersion)
	}
	return req, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// Resend sends a request of the proxy's own to the upstream server in the
// latest client's session (the debugger's re-send), recording it with inj
// and its answer marked as the answer to a re-sent request, and returns the
// answer; the client never sees either.
func (p *Proxy) Resend(ctx context.Context, msg []byte, inj []rules.Injection) ([]byte, error) {
	p.init()
	p.lastMu.Lock()
	ex := &exchange{method: http.MethodPost, session: p.lastSession, protocolVersion: p.lastVersion}
	p.lastMu.Unlock()
	es := tape.Classify(msg)
	if len(es) != 1 || es[0].Kind != tape.KindRequest {
		return nil, errors.New("record: Resend takes one request")
	}
	id := es[0].ID
	p.note(p.message(msg, tape.DirSend, withInjections(recordMeta{ex: ex}, inj)))
	req, err := p.upstreamPost(ctx, ex, msg)
	if err != nil {
		return nil, err
	}
	resp, err := p.rp.Transport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	answerMeta := func() metaExtra {
		return withInjections(recordMeta{ex: ex, status: resp.StatusCode}, []rules.Injection{{Rule: "debugger", Action: "resend", Dropped: true,
			Note: "the answer to a request the debugger sent again: shown in the debugger, not forwarded to the client"}})
	}
	if mediaType(resp.Header.Get("Content-Type")) == "text/event-stream" {
		rd := sse.NewReader(resp.Body)
		for {
			e, err := rd.Next()
			if data := bytes.TrimSpace(e.Data); len(data) > 0 {
				if rs := tape.Classify(data); len(rs) == 1 && rs[0].Kind == tape.KindResponse && rs[0].ID == id {
					p.note(p.message(data, tape.DirRecv, answerMeta()))
					return data, nil
				}
			}
			if err != nil {
				return nil, fmt.Errorf("the server's stream ended before its answer: %w", err)
			}
		}
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	body = bytes.TrimSpace(body)
	if resp.StatusCode/100 != 2 || len(body) == 0 || body[0] != '{' {
		return nil, fmt.Errorf("the server answered %s: %s", resp.Status, body)
	}
	p.note(p.message(body, tape.DirRecv, answerMeta()))
	return body, nil
}
