package record

// SSE relaying: an upstream's event stream goes to the client event by
// event, each event recorded before it is forwarded; a legacy server's
// endpoint event is rewritten to name the proxy; an event over MaxEvent is
// relayed as it comes and recorded by size.

import (
	"bytes"
	"errors"
	"io"
	"net/url"
	"strings"

	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// sseRelay is the body of an SSE answer as the client reads it: each event
// is recorded, then its bytes are handed out, so the tape leads the client.
type sseRelay struct {
	p      *Proxy
	ex     *exchange
	status int
	stream int64
	body   io.ReadCloser
	events *sse.Reader
	out    []byte // bytes of recorded events not yet read
	err    error

	// An event over maxEvent, relayed as it comes: its size so far and
	// first bytes, recorded by those once it ends.
	skipping   bool
	skipSize   int64
	skipPrefix []byte

	// What a POST's stream carried, so that one that ends with no message
	// (a server that primes the stream with an event id and closes it, for
	// the client to resume with Last-Event-ID) still leaves a record.
	messages  int
	lastEvent string
	ended     bool
}

// DefaultMaxEvent is Proxy.MaxEvent's default.
const DefaultMaxEvent = 64 << 20

func (s *sseRelay) Read(b []byte) (int, error) {
	for len(s.out) == 0 {
		if s.err != nil {
			return 0, s.err
		}
		if s.skipping {
			chunk, done, err := s.events.Skip()
			s.out, s.skipSize = chunk, s.skipSize+int64(len(chunk))
			if done || err != nil {
				s.endOversize(err == nil)
			}
			if err != nil {
				if errors.Is(err, io.ErrUnexpectedEOF) {
					err = io.EOF
				}
				s.err = err
			}
			continue
		}
		e, err := s.events.Next()
		if errors.Is(err, sse.ErrTooLong) {
			s.skipping, s.skipSize = true, int64(len(e.Raw))
			s.skipPrefix = bytes.Clone(e.Raw[:min(len(e.Raw), 4<<10)])
			s.out = e.Raw
			continue
		}
		if len(e.Raw) > 0 {
			s.out = s.record(e)
		}
		if err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				err = io.EOF // a cut last event: forwarded as it came
			}
			s.err = err
			s.end()
		}
	}
	n := copy(b, s.out)
	s.out = s.out[n:]
	return n, nil
}

// Close closes the upstream body and gives the event reader back: the
// reverse proxy neither reads nor closes a body twice, and no event handed
// out aliases the reader's buffer.
func (s *sseRelay) Close() error {
	if s.events != nil {
		s.p.putSSEReader(s.events)
		s.events = nil
		if s.err == nil {
			s.err = io.ErrClosedPipe
		}
	}
	return s.body.Close()
}

// end records a POST's stream that ended without a message: without this
// record the tape would hold the request and nothing of its answer.
func (s *sseRelay) end() {
	if s.ended || s.messages > 0 || s.ex.method != "POST" || !errors.Is(s.err, io.EOF) {
		return
	}
	s.ended = true
	params := map[string]any{"method": s.ex.method, "status": s.status, "stream": s.stream, "messages": 0}
	if s.lastEvent != "" {
		params["lastEvent"] = s.lastEvent // the id a client resumes from
	}
	s.p.note(s.p.sink.lifecycle(MethodHTTPExchange, params, recordMeta{ex: s.ex, status: s.status, stream: s.stream}.fields()))
}

// endOversize records the over-long event just relayed.
func (s *sseRelay) endOversize(ended bool) {
	m := recordMeta{ex: s.ex, status: s.status, stream: s.stream}
	s.p.note(s.p.sink.lifecycle(tape.MethodOversize, map[string]any{
		"from": string(tape.DirRecv), "size": s.skipSize, "prefix": string(s.p.rec.redactText(s.skipPrefix)), "ended": ended,
	}, m.fields()))
	s.skipping, s.skipSize, s.skipPrefix = false, 0, nil
}

func (s *sseRelay) record(e sse.Event) []byte {
	m := recordMeta{ex: s.ex, status: s.status, stream: s.stream, event: e.ID, hasEvent: e.HasID}
	if e.HasID {
		s.lastEvent = e.ID
	}
	if e.Event == "endpoint" && e.Data != nil {
		return s.endpoint(e, m.fields())
	}
	if len(bytes.TrimSpace(e.Data)) == 0 {
		return e.Raw // priming events and keep-alives carry no message
	}
	s.messages++
	if s.p.rules != nil || s.p.Intercept != nil {
		return s.ruleEvent(e, m)
	}
	s.p.note(s.p.message(e.Data, tape.DirRecv, m))
	return e.Raw
}

// endpoint rewrites a legacy endpoint event so that the client posts
// through the proxy: an absolute URL naming the upstream's host is given
// the proxy's host; a relative one already resolves against the proxy.
func (s *sseRelay) endpoint(e sse.Event, extra map[string]any) []byte {
	named := string(e.Data)
	given := named
	if u, err := url.Parse(named); err == nil && u.IsAbs() && u.Host == s.p.Upstream.Host {
		u.Scheme, u.Host = "http", s.ex.host
		given = u.String()
	}
	s.p.note(s.p.sink.lifecycle(MethodHTTPEndpoint, map[string]any{"url": named, "proxied": given}, extra))
	if u, err := s.p.Upstream.Parse(named); err == nil {
		s.p.serve(u.Path) // where the client will post
	}
	if given == named {
		return e.Raw
	}
	e.Data = []byte(given)
	var b bytes.Buffer
	_ = sse.Write(&b, e)
	return b.Bytes()
}

// sseBuffer is the first size of an SSE relay's read buffer: most events
// are small, and the buffer grows for a long one. A reader whose buffer has
// grown past sseKeep is not kept for reuse.
const (
	sseBuffer = 4 << 10
	sseKeep   = 64 << 10
)

func (p *Proxy) sseReader(body io.Reader) *sse.Reader {
	r, ok := p.readers.Get().(*sse.Reader)
	if ok {
		r.Reset(body)
	} else {
		r = sse.NewReaderSize(body, sseBuffer)
	}
	r.Max = p.MaxEvent
	if r.Max <= 0 {
		r.Max = DefaultMaxEvent
	}
	return r
}

func (p *Proxy) putSSEReader(r *sse.Reader) {
	if r.Size() <= sseKeep {
		r.Reset(nil)
		p.readers.Put(r)
	}
}

// mediaType is the lower-case media type of a Content-Type value, without
// parameters; unlike mime.ParseMediaType it allocates nothing.
func mediaType(contentType string) string {
	t, _, _ := strings.Cut(contentType, ";")
	return strings.ToLower(strings.TrimSpace(t))
}
