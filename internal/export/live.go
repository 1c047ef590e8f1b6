package export

import (
	"bytes"
	"io"
	"sync"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// LiveCalls is the tape writer of a recording that also sends each call
// to a Tracer as soon as its answer is written (record --otlp-endpoint).
// It passes every write to the tape first; the recorders write whole lines.
type LiveCalls struct {
	w    io.Writer
	t    *Tracer
	mu   sync.Mutex
	seq  int
	line int
	open map[liveKey]tape.Call
	// With bodies: the records each open call carries, the open calls in
	// the order they started, and the records waiting for a server's next
	// call (see otlp_bodies.go).
	recs    map[liveKey][]carried
	order   []liveKey
	waiting map[string][]carried
	tasks   liveTasks // the tasks, each a span once ended (live_tasks.go)
}

type liveKey struct {
	server, session, id string
	dir                 tape.Dir // the request's
}

// NewLiveCalls tees the tape written to w into t.
func NewLiveCalls(w io.Writer, t *Tracer) *LiveCalls {
	return &LiveCalls{w: w, t: t, open: map[liveKey]tape.Call{}, recs: map[liveKey][]carried{}, waiting: map[string][]carried{}}
}

// Write writes p to the tape, then follows the calls in it.
func (l *LiveCalls) Write(p []byte) (int, error) {
	n, err := l.w.Write(p)
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, line := range bytes.Split(p[:n], []byte("\n")) {
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		l.line++
		for _, e := range tape.Classify(line) {
			if l.t.opts.WithBodies {
				e.Seq, e.Raw = l.seq, append([]byte(nil), e.Raw...)
			}
			l.follow(e)
			l.seq++
		}
	}
	return n, err
}

func (l *LiveCalls) follow(e tape.Entry) {
	hm := tape.ParseHTTPMeta(e.Raw)
	switch e.Kind {
	case tape.KindRequest:
		c := tape.Call{Request: l.seq, Response: -1, Server: e.Server, Dir: e.Dir, Method: e.Method, ID: e.ID, Start: e.Time, Line: l.line, Session: hm.Session, HTTP: hm.HTTP, Status: "pending"}
		c.RequestRaw = tape.StripMeta(e.Raw)
		c.Target = tape.Target(e.Method, c.RequestRaw)
		if tp := gjson.GetBytes(c.RequestRaw, "params._meta.traceparent"); tp.Type == gjson.String {
			c.TraceParent = tp.String()
		}
		k := liveKey{e.Server, hm.Session, string(e.ID), e.Dir}
		l.open[k] = c
		l.taskMessage(e, l.seq)
		if l.t.opts.WithBodies {
			l.recs[k] = append(append(l.recs[k], l.waiting[e.Server]...), carried{seq: l.seq, time: e.Time, line: e.Raw})
			delete(l.waiting, e.Server)
			l.order = append(l.order, k)
		}
	case tape.KindResponse:
		reqDir := tape.DirSend
		if e.Dir == tape.DirSend {
			reqDir = tape.DirRecv
		}
		id := string(e.ID)
		if id == "null" && hm.InReplyTo != "" {
			id = hm.InReplyTo
		}
		k := liveKey{e.Server, hm.Session, id, reqDir}
		c, ok := l.open[k]
		if !ok {
			l.carry(e)
			return
		}
		delete(l.open, k)
		c.Response, c.ResponseRaw, c.End = l.seq, tape.StripMeta(e.Raw), e.Time
		if !c.Start.IsZero() && !c.End.IsZero() {
			c.Latency = c.End.Sub(c.Start)
		}
		switch e.Failed() {
		case tape.RPCError:
			c.Status = "error"
			er := gjson.GetBytes(c.ResponseRaw, "error")
			c.ErrorCode, c.ErrorMessage = er.Get("code").Int(), er.Get("message").String()
		case tape.ToolError:
			c.Status = "tool-error"
		default:
			c.Status = "ok"
		}
		var recs []carried
		if l.t.opts.WithBodies {
			recs = append(l.recs[k], carried{seq: l.seq, time: e.Time, line: e.Raw})
			delete(l.recs, k)
			for i, o := range l.order {
				if o == k {
					l.order = append(l.order[:i:i], l.order[i+1:]...)
					break
				}
			}
		}
		l.t.add(c, recs)
		l.taskAnswer(c, e, l.seq)
	default:
		l.taskMessage(e, l.seq)
		l.carry(e)
	}
}

// carry puts a record that is no request or answer of a call on the
// innermost open call of its server, or keeps it for the next.
func (l *LiveCalls) carry(e tape.Entry) {
	if !l.t.opts.WithBodies {
		return
	}
	rec := carried{seq: l.seq, time: e.Time, line: e.Raw}
	for i := len(l.order) - 1; i >= 0; i-- {
		if k := l.order[i]; k.server == e.Server {
			l.recs[k] = append(l.recs[k], rec)
			return
		}
	}
	l.waiting[e.Server] = append(l.waiting[e.Server], rec)
}

// Flush sends the calls never answered as pending spans, and the tasks
// never ended as unfinished ones.
func (l *LiveCalls) Flush() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushTasks()
	for _, k := range l.order {
		l.t.add(l.open[k], l.recs[k])
		delete(l.open, k)
	}
	for k, c := range l.open {
		l.t.add(c, nil)
		delete(l.open, k)
	}
	l.order, l.recs = nil, map[liveKey][]carried{}
	l.t.addRecords(l.waiting)
	l.waiting = map[string][]carried{}
}
