package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// Conn is a live server connection for Verify: Send writes one JSON-RPC
// message; Recv returns the next message the server sent (io.EOF when it
// closed). StdioConn adapts a process's pipes.
type Conn interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Server is the tape's server to verify; empty when the tape holds one.
	Server string
	// Ignore lists paths dropped before comparing responses ("result.x").
	Ignore []tape.Path
	// Timeout bounds the wait for each response; 0 means 30 s.
	Timeout time.Duration
	// Now is the clock for latencies; nil means time.Now.
	Now func() time.Time
	// Concurrent sends a request the tape shows was sent before an earlier
	// one was answered without waiting for that answer either, as the
	// recorded client did; answers are matched by id. The default waits
	// for each answer before sending the next request: deterministic, but
	// recorded concurrency is serialized.
	Concurrent bool
}

// CallResult is the verdict on one recorded request replayed to a live server.
type CallResult struct {
	Seq    int    `json:"seq"`
	Line   int    `json:"line"`
	Method string `json:"method"`
	// Name is the tool, prompt or resource the call names, if any.
	Name    string          `json:"name,omitempty"`
	Pass    bool            `json:"pass"`
	Diff    []replay.DiffOp `json:"diff,omitempty"`
	Problem string          `json:"problem,omitempty"` // no response, a transport error
	// Skipped says why the call was sent but not checked: the tape holds no
	// answer to compare with (the recorded client cancelled it, or the
	// server never answered). A skipped call passes.
	Skipped string `json:"skipped,omitempty"`
	// Negotiation says, for a server/discover probe the recorded server
	// rejected before initialize (tape.Negotiation), how the live server
	// answered it: version negotiation, passed without comparing answers.
	Negotiation string `json:"negotiation,omitempty"`
	// Polls counts the times a task's poll was asked again, waiting for
	// the live task to reach the recorded terminal status.
	Polls    int           `json:"polls,omitempty"`
	Recorded time.Duration `json:"recorded"` // the recorded latency
	Live     time.Duration `json:"live"`
	// Response is the recorded response's seq (-1 if none), and Answer the
	// live server's answer as it came (for verify --update).
	Response int    `json:"-"`
	Answer   []byte `json:"-"`
}

// VerifyReport is what Verify found, call by call.
type VerifyReport struct {
	Server string       `json:"server"`
	Calls  []CallResult `json:"calls"`
}

// Err returns nil when every call passed, else an error wrapping replay.ErrDiverged.
func (r *VerifyReport) Err() error {
	n := 0
	for _, c := range r.Calls {
		if !c.Pass {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: server '%s': %d of %d calls answered differently", replay.ErrDiverged, r.Server, n, len(r.Calls))
}

// Verify sends the client side of the tape's server to a live server over
// conn, in recorded order, with ids of its own; it answers the server's own
// requests with the recorded replies and compares each response with the
// recorded one by meaning. By default each request waits for the previous
// one's answer, so the run is deterministic; with opts.Concurrent, requests
// the tape shows were sent before an earlier one was answered are sent
// without waiting for it, and answers are matched by id. onCall, if not
// nil, sees each result in recorded order as it is decided.
func Verify(ctx context.Context, x *tape.Index, conn Conn, opts VerifyOptions, onCall func(CallResult)) (VerifyReport, error) {
	server, err := replay.PickServer(x, opts.Server)
	if err != nil {
		return VerifyReport{}, err
	}
	if err := checkRequests(x, server); err != nil {
		return VerifyReport{Server: server}, err
	}
	v := &verifier{
		x: x, conn: conn, server: server, opts: opts,
		norm:    tape.Normalizer{Ignore: opts.Ignore},
		liveIDs: map[tape.ID]tape.ID{},
		used:    map[int]bool{},
		unasked: map[int]bool{},
		flight:  map[tape.ID]*call{},
	}
	if v.opts.Timeout == 0 {
		v.opts.Timeout = 30 * time.Second
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	rep := VerifyReport{Server: server}
	emitted := 0
	report := func() {
		for ; emitted < len(v.calls) && v.calls[emitted].decided; emitted++ {
			if onCall != nil {
				onCall(v.calls[emitted].res)
			}
		}
	}
	finish := func(err error) (VerifyReport, error) {
		for _, c := range v.calls {
			rep.Calls = append(rep.Calls, c.res)
		}
		report()
		return rep, err
	}
	for i := 0; i < x.Len(); i++ {
		en := x.Entry(i)
		if !sends(en, server) {
			continue
		}
		// Wait for the answers the tape had before this message was sent
		// (all of them, unless concurrent).
		err := v.wait(ctx, func(c *call) bool { return !v.opts.Concurrent || c.want < i })
		if err == nil {
			err = v.waitAsked(ctx, i)
		}
		report()
		if err != nil {
			return finish(err)
		}
		if en.Kind == tape.KindNotification {
			if err := v.notify(ctx, i); err != nil {
				return finish(err)
			}
			continue
		}
		if err := v.send(ctx, i); err != nil {
			return finish(err)
		}
		report()
	}
	return finish(v.wait(ctx, func(*call) bool { return true }))
}

// ErrNoRequests reports a tape that holds no client request to send to the
// server chosen: there is nothing to verify.
var ErrNoRequests = errors.New("the tape holds no client requests")

// checkRequests returns an error wrapping ErrNoRequests, naming the servers
// that do have requests, when the tape holds none for server.
func checkRequests(x *tape.Index, server string) error {
	isRequest := func(en tape.Entry) bool {
		return en.Kind == tape.KindRequest && en.Dir == tape.DirSend && en.IsWire()
	}
	for i := 0; i < x.Len(); i++ {
		if en := x.Entry(i); en.Server == server && isRequest(en) {
			return nil
		}
	}
	counts := map[string]int{}
	var names []string
	for i := 0; i < x.Len(); i++ {
		if en := x.Entry(i); isRequest(en) {
			if counts[en.Server] == 0 {
				names = append(names, en.Server)
			}
			counts[en.Server]++
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("%w for server '%s': it holds none for any server", ErrNoRequests, server)
	}
	held := make([]string, len(names))
	for i, n := range names {
		held[i] = fmt.Sprintf("%q (%d)", n, counts[n])
	}
	return fmt.Errorf("%w for server '%s': it holds requests for %s", ErrNoRequests, server, strings.Join(held, ", "))
}

type verifier struct {
	x       *tape.Index
	conn    Conn
	server  string
	opts    VerifyOptions
	norm    tape.Normalizer
	next    int
	liveIDs map[tape.ID]tape.ID // recorded client id → live id
	used    map[int]bool        // recorded server requests answered
	unasked map[int]bool        // recorded server requests the live server did not ask in time (waitAsked)
	calls   []*call             // in recorded order
	flight  map[tape.ID]*call   // by live id, waiting for their answers
	// subst maps the recorded task ids and requestStates to the live
	// server's (raw JSON strings); taskReads indexes the server's tasks by
	// their reads; polling holds the polls waiting to be asked again
	// (verify_tasks.go).
	subst     map[string][]byte
	taskReads map[int]tape.Task
	polling   []*call
}

// call is one recorded request sent to the live server.
type call struct {
	res      CallResult
	want     int // the recorded response's seq
	start    time.Time
	deadline time.Time
	decided  bool
	poll     *taskPoll // a task's tasks/get, repeated until its terminal status
}

func (v *verifier) notify(ctx context.Context, seq int) error {
	m, err := v.x.Message(seq)
	if err != nil {
		return err
	}
	msg := tape.StripMeta(m.Raw)
	if m.Method == "notifications/cancelled" {
		r := gjson.GetBytes(msg, "params.requestId")
		if live, ok := v.liveIDs[tape.ID(r.Raw)]; ok && r.Index > 0 {
			msg = append(append(append([]byte{}, msg[:r.Index]...), live...), msg[r.Index+len(r.Raw):]...)
		}
	}
	return v.conn.Send(ctx, msg)
}

// send sends recorded request seq with a live id; its answer is awaited by
// wait.
func (v *verifier) send(ctx context.Context, seq int) error {
	m, err := v.x.Message(seq)
	if err != nil {
		return err
	}
	if err := v.pace(ctx, seq); err != nil {
		return err
	}
	p := v.x.Pair(seq)
	c := &call{res: CallResult{Seq: seq, Line: m.Line, Method: m.Method, Recorded: p.Latency}}
	c.res.Name = tape.Target(m.Method, m.Raw)
	v.calls = append(v.calls, c)
	want, sent, skip := recordedAnswer(v.x, v.server, seq)
	if !sent {
		c.res.Pass, c.decided = true, true
		c.res.Skipped = skip
		return nil
	}
	v.next++
	live := tape.ID(strconv.Itoa(v.next))
	v.liveIDs[m.ID] = live
	c.start = v.opts.Now()
	body := v.liveValues(tape.StripMeta(m.Raw))
	c.poll = v.newPoll(seq, m.Method, body)
	if err := v.conn.Send(ctx, jsonrpc.SpliceID(body, []byte(live))); err != nil {
		c.res.Problem, c.decided = "not sent: "+err.Error(), true
		return err
	}
	c.want = want
	if want < 0 {
		// Cancelled or never answered on the tape: nothing to wait for.
		c.res.Pass, c.decided = true, true
		c.res.Skipped = skip
		return nil
	}
	c.deadline = c.start.Add(v.opts.Timeout)
	v.flight[live] = c
	return nil
}

// sends reports whether Verify sends recorded message en to server: a
// request or notification the client sent it on the wire (a message a rule
// dropped never reached the server).
func sends(en tape.Entry, server string) bool {
	return en.Server == server && en.Dir == tape.DirSend && en.IsWire() && !en.Dropped &&
		(en.Kind == tape.KindRequest || en.Kind == tape.KindNotification)
}

// recordedAnswer returns the recorded answer verify compares the live
// answer to request seq with (-1 when there is none), whether verify sends
// the request at all, and, without an answer, why (CallResult.Skipped).
func recordedAnswer(x *tape.Index, server string, seq int) (want int, sent bool, skip string) {
	p := x.Pair(seq)
	if p.Partner >= 0 && x.Entry(p.Partner).Kind == tape.KindLifecycle {
		// Refused by an authorization challenge (a $http/exchange with
		// the 401 or 403): the recorded client retried it with a token,
		// and the retry is on the tape. Not sent.
		return -1, false, "the recorded server refused it with an authorization challenge and the client retried with a token: not sent"
	}
	if p.Cancelled {
		return -1, true, "the recorded client cancelled it: nothing to compare"
	}
	want = p.Partner
	if want < 0 {
		want = replay.Rejection(x, server, seq) // an HTTP 400 with "id":null
	}
	if want < 0 {
		return -1, true, "the recorded server never answered it: nothing to compare"
	}
	return want, true, ""
}

// Compared reports whether Verify, given the tape and server, compares a
// live answer with the recorded answer of message seq: a request the
// client sent to server, sent by Verify, with a recorded answer that is
// not a version-negotiation rejection (those pass whatever the live server
// says). Requests the server sent are answered from the tape, not
// compared; notifications are sent, not compared.
func Compared(x *tape.Index, server string, seq int) bool {
	if en := x.Entry(seq); en.Kind != tape.KindRequest || !sends(en, server) {
		return false
	}
	want, _, _ := recordedAnswer(x, server, seq)
	return want >= 0 && !x.Negotiation(want)
}

// wait reads the server's messages, answering its requests and deciding
// the calls its responses answer, until no call in flight satisfies must.
// A call not answered by its deadline fails with "no response".
func (v *verifier) wait(ctx context.Context, must func(*call) bool) error {
	for {
		var deadline time.Time
		pending := false
		for _, c := range v.flight {
			pending = pending || must(c)
			if deadline.IsZero() || c.deadline.Before(deadline) {
				deadline = c.deadline
			}
		}
		for _, c := range v.polling {
			pending = pending || must(c)
			if deadline.IsZero() || c.poll.resendAt.Before(deadline) {
				deadline = c.poll.resendAt
			}
		}
		if !pending {
			return nil
		}
		rctx, cancel := context.WithTimeout(ctx, deadline.Sub(v.opts.Now()))
		msg, err := v.conn.Recv(rctx)
		cancel()
		if err != nil {
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				if err := v.resendPolls(ctx); err != nil {
					return err
				}
				now := v.opts.Now()
				for id, c := range v.flight {
					if !c.deadline.After(now) {
						c.res.Problem, c.decided = fmt.Sprintf("no response within %v", v.opts.Timeout), true
						delete(v.flight, id)
					}
				}
				continue
			}
			problem := fmt.Sprintf("no response: %v", err)
			if errors.Is(err, io.EOF) {
				problem = "no response: the server closed the connection"
			}
			for id, c := range v.flight {
				c.res.Problem, c.decided = problem, true
				delete(v.flight, id)
			}
			return err
		}
		if err := v.handle(ctx, msg); err != nil {
			return err
		}
	}
}

// handle answers the server's requests in msg and decides the calls its
// responses answer.
func (v *verifier) handle(ctx context.Context, msg []byte) error {
	for _, e := range tape.Classify(bytes.TrimSpace(msg)) {
		switch e.Kind {
		case tape.KindRequest:
			if err := v.answer(ctx, e); err != nil {
				return err
			}
		case tape.KindResponse:
			c, ok := v.flight[e.ID]
			if !ok {
				continue // a late answer to a cancelled request
			}
			delete(v.flight, e.ID)
			if err := v.judge(c, e); err != nil {
				return err
			}
		}
	}
	return nil
}

// askGrace bounds how long verify waits, before sending a message, for a
// server request the tape shows was asked before it.
const askGrace = 5 * time.Second

// waitAsked reads the server's messages (answering its requests, deciding
// calls) until it has asked each request the tape shows the server asked
// before message seq, so that what the recorded client's message followed
// (roots/list after its notifications/roots/list_changed, say) has happened
// live too. A request the live server does not ask within askGrace is
// waited for no more; the calls that follow show any difference it makes.
func (v *verifier) waitAsked(ctx context.Context, seq int) error {
	unasked := func() []int {
		var out []int
		for j := 0; j < seq; j++ {
			en := v.x.Entry(j)
			if en.Server == v.server && en.Dir == tape.DirRecv && en.Kind == tape.KindRequest && en.IsWire() && !v.used[j] && !v.unasked[j] {
				out = append(out, j)
			}
		}
		return out
	}
	deadline := v.opts.Now().Add(min(v.opts.Timeout, askGrace))
	for {
		pending := unasked()
		if len(pending) == 0 {
			return nil
		}
		d := deadline.Sub(v.opts.Now())
		if d <= 0 {
			for _, j := range pending {
				v.unasked[j] = true
			}
			return nil
		}
		rctx, cancel := context.WithTimeout(ctx, d)
		msg, err := v.conn.Recv(rctx)
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if !errors.Is(err, context.DeadlineExceeded) {
				return nil // the connection ended: wait says so for the calls in flight
			}
			continue
		}
		if err := v.handle(ctx, msg); err != nil {
			return err
		}
	}
}

// judge compares live response e with call c's recorded one. A probe the
// recorded server rejected as version negotiation passes whatever the live
// server answers: rejecting it too (in its transport's way: -32601 over
// stdio, HTTP 400 and -32000 over HTTP) or answering it is the live
// server's era, not a failure.
func (v *verifier) judge(c *call, e tape.Entry) error {
	c.res.Live = v.opts.Now().Sub(c.start)
	c.decided = true
	c.res.Response, c.res.Answer = c.want, bytes.Clone(e.Raw)
	if v.x.Negotiation(c.want) {
		c.res.Pass = true
		c.res.Negotiation = "version negotiation: the recorded server rejected server/discover before initialize, and so did the live one"
		if !tape.Negotiation(c.res.Method, true, e.Raw, httpStatusOf(e.Raw)) {
			c.res.Negotiation = "version negotiation: the recorded server rejected server/discover before initialize; the live one answered it (not compared)"
		}
		return nil
	}
	if st := httpStatusOf(e.Raw); st == http.StatusUnauthorized || st == http.StatusForbidden {
		c.res.Problem = fmt.Sprintf("the server refused it with HTTP %d, an authorization challenge: it needs a bearer token with the access the recorded client had", st)
	}
	rec, err := v.x.Message(c.want)
	if err != nil {
		return err
	}
	v.learn(rec.Raw, e.Raw)
	if v.repoll(c, rec.Raw, e.Raw) {
		c.decided = false // asked again until the task ends (verify_tasks.go)
		return nil
	}
	want, err1 := v.norm.Normalize(rec.Raw)
	got, err2 := v.norm.Normalize(e.Raw)
	if err1 != nil || err2 != nil {
		c.res.Problem = fmt.Sprintf("undecodable response: %v", errors.Join(err1, err2))
		return nil
	}
	snapshot := statusSnapshot(c, c.res.Method, rec.Raw, e.Raw)
	dropVolatile(want, snapshot)
	dropVolatile(got, snapshot)
	c.res.Diff = replay.Diff(want, got)
	c.res.Pass = len(c.res.Diff) == 0
	return nil
}

// answer replies to a live server request with the recorded reply to the
// next recorded server request of the same method.
func (v *verifier) answer(ctx context.Context, req tape.Entry) error {
	for i := 0; i < v.x.Len(); i++ {
		en := v.x.Entry(i)
		if v.used[i] || en.Server != v.server || en.Dir != tape.DirRecv || en.Kind != tape.KindRequest || en.Method != req.Method {
			continue
		}
		v.used[i] = true
		if reply := v.x.Pair(i).Partner; reply >= 0 {
			if m, err := v.x.Message(reply); err == nil {
				return v.conn.Send(ctx, jsonrpc.SpliceID(tape.StripMeta(m.Raw), []byte(req.ID)))
			}
		}
		break
	}
	return v.conn.Send(ctx, jsonrpc.ErrorResponse([]byte(req.ID), replay.CodeNotRecorded, "tapedeck verify: the tape holds no reply to "+req.Method, nil))
}

// StdioConn is a Conn over a stdio server's pipes: one message a line.
type StdioConn struct {
	w     io.Writer
	lines chan []byte
	done  chan struct{}
	once  sync.Once
}

// NewStdioConn returns a Conn writing to w (the server's stdin) and reading
// lines from r (its stdout) in a goroutine, until r ends. Close it when
// done with it.
func NewStdioConn(w io.Writer, r io.Reader) *StdioConn {
	c := &StdioConn{w: w, lines: make(chan []byte, 64), done: make(chan struct{})}
	go func() {
		defer close(c.lines)
		deliver := func(line []byte) error { // its end is the end of the lines
			select {
			case c.lines <- line:
			case <-c.done:
				// Nobody listens any more: drop it, and keep reading so
				// the server never blocks on a full pipe.
			}
			return nil
		}
		// A server line over jsonrpc.MaxLine is skipped; what verify is told
		// instead is an error response it cannot match, so the call fails.
		_ = jsonrpc.ReadLines(r, 0, deliver, func() error { return deliver(jsonrpc.LineTooLong("tapedeck replay", jsonrpc.MaxLine)) })
	}()
	return c
}

// Close stops delivering the server's output: from then on what it writes
// is read and dropped until its stdout ends, so a server that keeps
// writing is not left blocked on a full pipe while it is being stopped.
// It closes neither pipe.
func (c *StdioConn) Close() error {
	c.once.Do(func() { close(c.done) })
	return nil
}

// Send writes msg and a newline.
func (c *StdioConn) Send(_ context.Context, msg []byte) error {
	_, err := c.w.Write(append(bytes.TrimSpace(msg), '\n'))
	return err
}

// Recv returns the next line the server wrote; io.EOF once its stdout
// ended or the conn was closed.
func (c *StdioConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case <-c.done:
		return nil, io.EOF
	default:
	}
	select {
	case <-c.done:
		return nil, io.EOF
	case line, ok := <-c.lines:
		if !ok {
			return nil, io.EOF
		}
		return line, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
