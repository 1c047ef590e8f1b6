package tape

// Calls: a request with its answer, as exporters and diff see a session.

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/tidwall/gjson"
)

// Call is one request of a tape with its response, if any.
type Call struct {
	Request  int // the request's seq
	Response int // its response's seq, or -1
	Server   string
	// Dir is who sent the request: DirSend for the client's, DirRecv for
	// the server's own (roots/list, sampling, elicitation).
	Dir     Dir
	Method  string
	Target  string // the tool, prompt or resource it names (Target), or ""
	ID      ID
	Start   time.Time     // the request's timestamp (zero when unknown)
	End     time.Time     // the response's timestamp (zero when unknown or none)
	Latency time.Duration // End - Start when both are known
	// Status is "ok", "error" (a JSON-RPC error), "tool-error"
	// (result.isError), "negotiation" (a server/discover probe rejected
	// before initialize: not a failure, see Negotiation), "pending" (no
	// answer on the tape), "cancelled" (and no late answer), "late"
	// (answered after its cancellation) or "challenged" (refused over HTTP
	// with a 401 or 403 authorization challenge, a $http/exchange that
	// carried no message; the client retried with a token).
	Status string
	// ErrorCode and ErrorMessage are the JSON-RPC error's, when Status is
	// "error" or "negotiation".
	ErrorCode    int64
	ErrorMessage string
	// RequestRaw and ResponseRaw are the messages as they crossed the wire
	// (without the tape's _meta); ResponseRaw is nil without a response.
	RequestRaw, ResponseRaw []byte
	// Line is the request's line in the file.
	Line int
	// Session is the request's HTTP session (Mcp-Session-Id), or "" (a
	// stdio tape, or before initialize answered); HTTP says the tape was
	// recorded over HTTP.
	Session string
	HTTP    bool
	// TraceParent is the request's params._meta.traceparent (W3C), if any.
	TraceParent string
}

// ReadCalls reads the tape at path in one sequential pass and calls fn for
// each request of server ("" for all) with its response, in the order the
// calls completed (a response's position; requests never answered come
// last, in recorded order). x is the tape's index, which holds the
// pairing. Memory holds only the requests still awaiting their answer.
func ReadCalls(r io.Reader, x *Index, server string, fn func(Call) error) error {
	rd := NewReader(r)
	open := map[int]Call{} // request seq → call awaiting its response
	var order []int        // requests in recorded order, to flush the unanswered ones
	for e := range rd.Entries() {
		if server != "" && e.Server != server {
			continue
		}
		if e.Seq >= x.Len() {
			break // written after the index was built
		}
		switch e.Kind {
		case KindRequest:
			c := Call{Request: e.Seq, Response: -1, Server: e.Server, Dir: e.Dir, Method: e.Method, ID: e.ID, Start: e.Time, Line: e.Line}
			if bytes.Contains(e.Raw, []byte(`"http"`)) { // the HTTP dialect's _meta, else no need to parse it
				if hm := ParseHTTPMeta(e.Raw); hm.HTTP {
					c.Session, c.HTTP = hm.Session, true
				}
			}
			c.RequestRaw = StripMeta(e.Raw)
			if bytes.Contains(c.RequestRaw, []byte("traceparent")) {
				if tp := gjson.GetBytes(c.RequestRaw, "params._meta.traceparent"); tp.Type == gjson.String {
					c.TraceParent = tp.String()
				}
			}
			c.Target = Target(e.Method, c.RequestRaw)
			p := x.Pair(e.Seq)
			switch {
			case p.Partner < 0 && p.Cancelled:
				c.Status = "cancelled"
			case p.Partner < 0:
				c.Status = "pending"
			case x.Entry(p.Partner).Kind == KindLifecycle:
				c.Status = "challenged"
			}
			if p.Partner >= 0 && p.Partner < e.Seq {
				// Answered before it was recorded (Reordered): the answer
				// came first and waits in open under the response's seq.
				if r, ok := open[-p.Partner-1]; ok {
					delete(open, -p.Partner-1)
					c = complete(c, r.ResponseRaw, r.End, p.Partner, x)
					if err := fn(c); err != nil {
						return err
					}
					continue
				}
			}
			open[e.Seq] = c
			order = append(order, e.Seq)
		case KindResponse:
			p := x.Pair(e.Seq)
			if p.Partner < 0 {
				continue // an orphan: no call to complete
			}
			c, ok := open[p.Partner]
			if !ok {
				// Its request comes later on the tape (Reordered).
				open[-e.Seq-1] = Call{ResponseRaw: StripMeta(e.Raw), End: e.Time}
				continue
			}
			delete(open, p.Partner)
			if err := fn(complete(c, StripMeta(e.Raw), e.Time, e.Seq, x)); err != nil {
				return err
			}
		}
	}
	if err := rd.Err(); err != nil {
		return err
	}
	for _, seq := range order {
		if c, ok := open[seq]; ok {
			if err := fn(c); err != nil {
				return err
			}
		}
	}
	return nil
}

// complete fills in a call's answer.
func complete(c Call, resp []byte, end time.Time, seq int, x *Index) Call {
	c.Response, c.ResponseRaw, c.End = seq, resp, end
	if !c.Start.IsZero() && !end.IsZero() {
		c.Latency = end.Sub(c.Start)
	}
	c.Status = "ok"
	switch x.Failure(seq) {
	case RPCError:
		c.Status = "error"
		er := gjson.GetBytes(resp, "error")
		c.ErrorCode, c.ErrorMessage = er.Get("code").Int(), er.Get("message").String()
	case NoFailure:
		if x.Negotiation(seq) {
			c.Status = "negotiation" // a rejected server/discover probe: not a failure
			er := gjson.GetBytes(resp, "error")
			c.ErrorCode, c.ErrorMessage = er.Get("code").Int(), er.Get("message").String()
		}
	case ToolError:
		c.Status = "tool-error"
	}
	if x.Pair(seq).Late {
		c.Status = "late"
	}
	return c
}

// String is a call in a line: "#12 tools/call echo: tool-error (3ms)".
func (c Call) String() string {
	s := fmt.Sprintf("#%d %s", c.Request, c.Method)
	if c.Target != "" {
		s += " " + c.Target
	}
	s += ": " + c.Status
	if c.Response >= 0 && !c.Start.IsZero() && !c.End.IsZero() {
		s += " (" + FormatLatency(1, c.Latency) + ")"
	}
	return s
}
