package tape

// Calls: a request with its answer, as exporters and diff see a session.

import (
	"bufio"
	"bytes"
	"errors"
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
	// (without the tape's _meta); ResponseRaw is nil without a response
	// (and with ReadCallsMapped's CallOptions.Lean, for most answers).
	RequestRaw, ResponseRaw []byte
	// RequestTail and ResponseTail are nil but for a call read with
	// CallOptions.Alias: then a message is RequestRaw followed by
	// RequestTail (see RequestBytes), both in the tape's mapping, and a
	// tail not nil says the message is valid JSON.
	RequestTail, ResponseTail []byte
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

// ReadCalls reads the tape through r (from its start) in one sequential
// pass and calls fn for each request of server ("" for all) with its
// response, in the order the calls completed (a response's position;
// requests never answered come last, in recorded order). x is the tape's
// index: it says which messages are requests and responses, how they pair
// and where their bytes are, so only those messages are read from r and no
// line is classified again; a message's id, _meta and stripped bytes come
// from one scan of its members. Messages written after the index was built
// are left out. Memory holds only the requests still awaiting their answer.
func ReadCalls(r io.Reader, x *Index, server string, fn func(Call) error) error {
	a := newCallAssembler(x, fn)
	calls := func(k Kind) bool { return k == KindRequest || k == KindResponse }
	err := walkIndexed(r, x, server, calls, func(seq int, e Entry, raw []byte, m *callInfo) error {
		switch e.Kind {
		case KindRequest:
			c := newCall(seq, e, raw, m)
			c.RequestRaw = m.stripped(raw)
			c.TraceParent = traceParent(c.RequestRaw)
			c.Target = Target(e.Method, c.RequestRaw)
			return a.request(seq, c)
		case KindResponse:
			b := m.stripped(raw)
			return a.response(seq, answer{raw: b, full: b, end: e.Time})
		}
		return nil
	})
	if err != nil {
		return err
	}
	return a.flush()
}

// Message is one message of a tape as ReadMessages gives it.
type Message struct {
	// Entry is the message's index entry, with Raw its bytes (_meta
	// included; valid only until fn returns) and Dir, Server and Time
	// read from them as a Reader reads them. ID is not filled in.
	Entry
	Body []byte   // StripMeta(Raw), in memory of its own
	HTTP HTTPMeta // ParseHTTPMeta(Raw)
}

// ReadMessages reads the tape through r (from its start) in one sequential
// pass and calls fn with each valid message of server ("" for all) in
// recorded order, as ReadCalls does: x says where each message's bytes are
// and what it is, so no line is classified again, and its _meta and
// stripped body come from one scan of its members. Invalid lines are left
// out, and so are messages written after the index was built. m is reused
// by the next call.
func ReadMessages(r io.Reader, x *Index, server string, fn func(m *Message) error) error {
	var msg Message
	valid := func(k Kind) bool { return k != KindInvalid }
	return walkIndexed(r, x, server, valid, func(_ int, e Entry, raw []byte, m *callInfo) error {
		e.Raw = raw
		msg = Message{Entry: e, Body: m.stripped(raw)}
		if m.meta.ok() {
			msg.HTTP = httpMetaOf(m.meta.in(raw))
		}
		return fn(&msg)
	})
}

// walkIndexed is ReadCalls' and ReadMessages' pass: it reads, through r
// from the tape's start, the bytes of each message of server ("" for all)
// whose kind want takes, as x places them, and calls fn with its entry
// (Server, Dir and Time read from its _meta), its bytes and one scan of its
// members. It stops at the index's end or where the tape was cut short.
func walkIndexed(r io.Reader, x *Index, server string, want func(Kind) bool, fn func(seq int, e Entry, raw []byte, m *callInfo) error) error {
	src := spanReader{r: bufio.NewReaderSize(r, 1<<20)}
	var cls classifier
	for seq, n := 0, x.Len(); seq < n; seq++ {
		e, size := x.span(seq)
		if !want(e.Kind) {
			continue
		}
		if server != "" && e.Server != server && e.Server != moreServers {
			continue
		}
		raw, err := src.read(e.Offset, size)
		if errors.Is(err, io.ErrUnexpectedEOF) {
			break // the tape is shorter than its index: it was cut since
		}
		if err != nil {
			return fmt.Errorf("read message %d (line %d): %w", seq, e.Line, err)
		}
		m := cls.callMessage(raw)
		if e.Server = stringValue(raw, m.server); server != "" && e.Server != server {
			continue
		}
		e.Dir, e.Time = Dir(stringValue(raw, m.dir)), m.when
		if err := fn(seq, e, raw, &m); err != nil {
			return err
		}
	}
	return nil
}

// containsTraceparent is bytes.Contains(b, []byte("traceparent")), found
// by its 'p' (rarer in text than its 't', whose every occurrence
// bytes.Index would stop at): the check runs on every request's bytes.
func containsTraceparent(b []byte) bool {
	const word, at = "traceparent", 5 // b[k] == 'p' starts a match at k-at
	for k := at; k+len(word)-at <= len(b); {
		i := bytes.IndexByte(b[k:len(b)-(len(word)-at-1)], 'p')
		if i < 0 {
			return false
		}
		k += i
		if string(b[k-at:k-at+len(word)]) == word {
			return true
		}
		k++
	}
	return false
}

// moreServers is the name the index gives every server past the most it
// tells apart (see Index.ServersOverflow): such a message's own name is
// read from its bytes.
const moreServers = "(more)"

// span returns message i's entry (without its body) and its size in bytes.
func (x *Index) span(i int) (Entry, int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.entry(i), int(x.recs.at(i).n)
}

// callInfo is what ReadCalls reads of a message's bytes: its id, the
// tape's _meta (dir, server, ts) as the classifier reads them, and the
// member StripMeta cuts.
type callInfo struct {
	msgInfo
	meta    span // the record's metadata object, RecordMeta's
	cut     span
	first   bool
	hasCut  bool
	scanned bool
}

// callMessage scans message raw's members once (see classifier.object and
// recordMetaMember, whose choices it makes: the last "id"; the last
// AltMetaKey member, else the last "_meta").
func (c *classifier) callMessage(raw []byte) callInfo {
	var ci callInfo
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ci
	}
	prevEnd, isFirst := i+1, true
	var meta, alt, metaCut, altCut span
	var metaFirst, altFirst bool
	_, err := c.members(raw, i, func(key []byte, v span) {
		switch string(key) {
		case "id":
			ci.id = v
		case "_meta":
			meta, metaCut, metaFirst = v, span{prevEnd, v.end}, isFirst
		case AltMetaKey:
			alt, altCut, altFirst = v, span{prevEnd, v.end}, isFirst
		}
		isFirst = false
		prevEnd = v.end
	})
	if err != nil {
		return ci
	}
	switch {
	case alt.ok():
		ci.cut, ci.first, ci.hasCut = altCut, altFirst, true
		meta = alt
	case meta.ok():
		ci.cut, ci.first, ci.hasCut = metaCut, metaFirst, true
	}
	if meta.ok() {
		ci.meta = meta
	}
	c.meta(raw, &ci.msgInfo, meta)
	return ci
}

// stripped is StripMeta(raw), in memory of its own.
func (ci *callInfo) stripped(raw []byte) []byte {
	if !ci.hasCut {
		return bytes.Clone(raw)
	}
	return spliceOut(raw, ci.cut, ci.first)
}

// spanReader reads a tape's bytes forward, a line at a time, keeping the
// last line read so that the messages of a batch are sliced from it.
type spanReader struct {
	r      *bufio.Reader
	pos    int64  // the offset of the next byte r gives
	seg    []byte // the bytes last read, from segOff: valid until the next read
	segOff int64
}

// read returns the size bytes at off, valid until the next call: off is
// never behind the last call's.
func (s *spanReader) read(off int64, size int) ([]byte, error) {
	if off >= s.segOff && off+int64(size) <= s.segOff+int64(len(s.seg)) {
		return s.seg[off-s.segOff:][:size], nil
	}
	if off < s.pos {
		return nil, fmt.Errorf("expected a message at byte %d, behind the reader at byte %d", off, s.pos)
	}
	if _, err := s.r.Discard(int(off - s.pos)); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	s.pos = off
	line, err := s.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := bytes.Clone(line) // line is the reader's buffer, which ReadBytes refills
		rest, err2 := s.r.ReadBytes('\n')
		line = append(head, rest...)
		err = err2
	}
	s.seg, s.segOff = line, off
	s.pos += int64(len(line))
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(line) < size {
		return nil, io.ErrUnexpectedEOF
	}
	return line[:size], nil
}

// complete fills in a call's answer.
func complete(c Call, resp []byte, end time.Time, seq int, x *Index) Call {
	return completeWith(c, answer{raw: resp, full: resp, end: end}, seq, x)
}

// completeWith fills in a call's answer r, response seq of x: its error
// is read from r.full.
func completeWith(c Call, r answer, seq int, x *Index) Call {
	r.failure, r.negotiation, r.late = x.Failure(seq), x.Negotiation(seq), x.Pair(seq).Late
	return completeAnswer(c, r, seq)
}

// completeAnswer fills in a call's answer r, response seq, whose index
// facts r holds: its error is read from r.full.
func completeAnswer(c Call, r answer, seq int) Call {
	c.Response, c.ResponseRaw, c.ResponseTail, c.End = seq, r.raw, r.tail, r.end
	if !c.Start.IsZero() && !r.end.IsZero() {
		c.Latency = r.end.Sub(c.Start)
	}
	c.Status = "ok"
	switch r.failure {
	case RPCError:
		c.Status = "error"
		er := gjson.GetBytes(r.full, "error")
		c.ErrorCode, c.ErrorMessage = er.Get("code").Int(), er.Get("message").String()
	case NoFailure:
		if r.negotiation {
			c.Status = "negotiation" // a rejected server/discover probe: not a failure
			er := gjson.GetBytes(r.full, "error")
			c.ErrorCode, c.ErrorMessage = er.Get("code").Int(), er.Get("message").String()
		}
	case ToolError:
		c.Status = "tool-error"
	}
	if r.late {
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
