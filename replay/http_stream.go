package replay

// Answers and SSE streams: a request's answer goes out as JSON or as an SSE
// stream, as the tape recorded it; the standalone GET stream carries the
// server's own messages; every event has an id, and a stream whose client
// went away can be resumed with Last-Event-ID.

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// Bounds on what the handler keeps.
const (
	maxHeld     = 1 << 16 // server messages held for the next stream, per session
	maxHistory  = 1024    // sent events kept per stream for redelivery
	maxRetained = 16      // finished streams kept per session for redelivery
)

// stream is the sequence of events one SSE stream carries: those sent
// (kept for redelivery, up to maxHistory) and those not yet sent.
type stream struct {
	no       int    // the stream's number in its session: 0 is the GET stream
	evs      []item // evs[i] is event base+i
	base     int
	sent     int  // events before it were written to a client
	finished bool // the last event is queued
	attached bool // a response is writing it
	gen      int  // bumped when a resumption takes the stream over
	primed   bool // the priming event was queued
	// breakAt is the event before which the response writing the stream
	// ends, leaving the rest for the client to resume with Last-Event-ID,
	// as the recorded server closed the POST's stream; -1 if none.
	breakAt int
	broken  bool // a break was placed (once a stream)
	ex      *exchange
	notify  chan struct{}
}

type item struct {
	msg    []byte // nil for a priming event
	seq    int    // the recorded message it replays, -1 if none: order across streams
	status int
	sse    bool
	final  bool
	whole  bool // one answer to a whole batch (a rejection with id null)
}

func newStream(no int) *stream { return &stream{no: no, breakAt: -1, notify: make(chan struct{}, 1)} }

// breakHere has the response writing the stream end after the events
// queued so far: the rest goes to the client's resumption.
func (s *stream) breakHere() {
	if !s.broken {
		s.broken, s.breakAt = true, s.base+len(s.evs)
	}
}

// push queues it; the caller holds the handler's lock.
func (s *stream) push(it item) {
	s.evs = append(s.evs, it)
	if it.final {
		s.finished = true
	}
	s.wake()
}

func (s *stream) wake() {
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// finish marks the stream as ending after what is queued.
func (s *stream) finish() {
	s.finished = true
	s.wake()
}

// unsent counts the events queued but not written.
func (s *stream) unsent() int { return s.base + len(s.evs) - s.sent }

// prime queues the priming event before the events not yet sent.
func (s *stream) prime() {
	if s.primed {
		return
	}
	s.primed = true
	s.evs = slices.Insert(s.evs, s.sent-s.base, item{seq: -1})
	if s.breakAt >= s.sent {
		s.breakAt++
	}
}

// trim forgets sent events beyond the history bound.
func (s *stream) trim() {
	if d := s.sent - s.base - maxHistory; d > maxHistory {
		s.evs = slices.Clone(s.evs[d:])
		s.base += d
	}
}

// exchange is a POST carrying requests, waiting for their answers.
type exchange struct {
	*stream
	ids     []tape.ID // live request ids of the exchange
	left    int       // how many of them are not answered yet
	batch   bool
	session string // the session issued with it (initialize)
	version string // the protocol version the request named
}

// primes reports whether a stream of a client speaking version starts
// with a priming event.
func (h *HTTPHandler) primes(version string) bool {
	if !h.sessions {
		return false
	}
	if version == "" {
		return h.primeTape
	}
	return version >= mcphttp.PrimingVersion && version < mcphttp.ModernVersion
}

// answer writes an exchange's answer as it comes: JSON when it is a lone
// response the tape did not send on a stream, else an SSE stream.
func (h *HTTPHandler) answer(w http.ResponseWriter, r *http.Request, sess *session, ex *exchange) {
	for {
		h.mu.Lock()
		n := ex.unsent()
		h.unlock()
		if n > 0 {
			break
		}
		select {
		case <-ex.notify:
		case <-r.Context().Done():
			h.detach(sess, ex.stream, 0, -1)
			return
		case <-h.done:
			h.detach(sess, ex.stream, 0, -1)
			http.Error(w, "tapedeck replay: shutting down before the tape answered", http.StatusServiceUnavailable)
			return
		}
	}
	if ex.session != "" {
		w.Header().Set(mcphttp.HeaderSession, ex.session)
	}
	h.mu.Lock()
	if first := ex.evs[0]; len(ex.evs) == 1 && first.final && !first.sse && (!ex.batch || first.whole) && ex.breakAt < 0 {
		ex.sent = 1
		ex.attached = false
		h.retire(sess, ex.stream)
		h.unlock()
		status := first.status
		if status == 0 {
			status = http.StatusOK
		}
		writeJSON(w, status, first.msg)
		return
	}
	if h.primes(ex.version) {
		ex.prime()
	}
	h.unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	h.pipe(w, r, sess, ex.stream)
}

// pipe writes stream s as SSE events until it finishes, its client goes
// away or the handler closes. The caller has attached s.
func (h *HTTPHandler) pipe(w http.ResponseWriter, r *http.Request, sess *session, s *stream) {
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	var buf []byte
	h.mu.Lock()
	gen := s.gen
	h.unlock()
	for {
		h.mu.Lock()
		if s.gen != gen {
			// A resumption took the stream over: pass on the wake-up
			// this writer may have taken, and leave the stream to it.
			h.unlock()
			s.wake()
			return
		}
		from := s.sent
		evs := s.evs[from-s.base:]
		if s.breakAt >= from {
			evs = evs[:s.breakAt-from]
		}
		evs = evs[:h.inOrder(sess, s, evs)]
		s.sent += len(evs)
		finished := s.finished && s.unsent() == 0
		broke := s.breakAt >= 0 && s.sent == s.breakAt && s.sent > 0
		if broke {
			s.breakAt = -1
		}
		if len(evs) > 0 {
			h.wakeOthers(sess, s)
		}
		h.unlock()
		if len(evs) > 0 {
			buf = buf[:0]
			for i, it := range evs {
				ev := sse.Event{Data: it.msg, Retry: -1}
				if h.sessions {
					ev.ID, ev.HasID = strconv.Itoa(s.no)+"_"+strconv.Itoa(from+i), true
				}
				buf = sse.Append(buf, ev)
			}
			if _, err := w.Write(buf); err != nil {
				h.detach(sess, s, gen, from)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if broke {
			// The recorded server closed this stream here: end the
			// response; the client resumes with Last-Event-ID.
			h.mu.Lock()
			if s.gen == gen {
				s.attached = false
			}
			h.wakeOthers(sess, s)
			h.unlock()
			return
		}
		if finished {
			h.detach(sess, s, gen, -1)
			return
		}
		select {
		case <-s.notify:
		case <-r.Context().Done():
			h.detach(sess, s, gen, -1)
			return
		case <-h.done:
			h.detach(sess, s, gen, -1)
			return
		}
	}
}

// inOrder returns how many of evs, the next events of stream s, may be
// written now: those recorded before every event another stream of the
// session being written still has to write (the tape's order across
// streams). The caller holds the lock.
func (h *HTTPHandler) inOrder(sess *session, s *stream, evs []item) int {
	limit := -1
	for _, o := range sess.streams {
		if o == s || !o.attached {
			continue
		}
		for _, it := range o.evs[o.sent-o.base:] {
			if it.seq >= 0 {
				if limit < 0 || it.seq < limit {
					limit = it.seq
				}
				break
			}
		}
	}
	if limit < 0 {
		return len(evs)
	}
	for i, it := range evs {
		if it.seq > limit {
			return i
		}
	}
	return len(evs)
}

// wakeOthers wakes the writers of the session's other streams, which may
// be waiting for s (inOrder); the caller holds the lock.
func (h *HTTPHandler) wakeOthers(sess *session, s *stream) {
	for _, o := range sess.streams {
		if o != s && o.attached {
			o.wake()
		}
	}
}

// detach marks s as no longer written by the writer of generation gen,
// rolling its sent mark back to unsent when that is >= 0 (a failed write).
// In an era without resumption, a request's answer whose client went away
// is abandoned.
func (h *HTTPHandler) detach(sess *session, s *stream, gen, unsent int) {
	h.mu.Lock()
	defer h.unlock()
	if s.gen != gen {
		return // taken over by a resumption
	}
	s.attached = false
	h.wakeOthers(sess, s)
	if unsent >= 0 {
		s.sent = unsent
	}
	s.trim()
	if s.finished && s.unsent() == 0 {
		h.retire(sess, s)
		return
	}
	if !h.sessions && s.ex != nil && !h.closed {
		h.abandon(sess, s.ex)
	}
}

// retire keeps a finished stream for redelivery, forgetting the oldest
// beyond maxRetained; the caller holds the lock.
func (h *HTTPHandler) retire(sess *session, s *stream) {
	if !h.sessions {
		delete(sess.streams, s.no)
		return
	}
	if slices.Contains(sess.retired, s.no) {
		return
	}
	sess.retired = append(sess.retired, s.no)
	if len(sess.retired) > maxRetained {
		delete(sess.streams, sess.retired[0])
		sess.retired = sess.retired[1:]
	}
}

// abandon forgets an exchange whose client went away, counting what it
// still had to send; the caller holds the lock.
func (h *HTTPHandler) abandon(sess *session, ex *exchange) {
	for _, id := range ex.ids {
		if sess.pending[id] == ex {
			delete(sess.pending, id)
		}
	}
	sess.open = slices.DeleteFunc(sess.open, func(o *exchange) bool { return o == ex })
	h.dropped += ex.unsent()
	ex.sent = ex.base + len(ex.evs)
	ex.finished = true
	delete(sess.streams, ex.no)
}

func writeJSON(w http.ResponseWriter, status int, msg []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(msg)))
	w.WriteHeader(status)
	w.Write(msg)
}

// standalone returns the session's GET stream, made on first use; the
// caller holds the lock.
func (h *HTTPHandler) standalone(sess *session) *stream {
	if sess.get == nil {
		sess.get = newStream(0)
		sess.streams[0] = sess.get
	}
	return sess.get
}

// serveGet opens the standalone SSE stream, or, with Last-Event-ID,
// resumes a stream of the session after that event.
func (h *HTTPHandler) serveGet(w http.ResponseWriter, r *http.Request) {
	last, resume := r.Header["Last-Event-Id"]
	switch {
	case resume && !h.sessions:
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape's era has no resumable streams (Last-Event-ID needs sessions)", http.StatusMethodNotAllowed)
		return
	case !resume && !h.getStream:
		w.Header().Set("Allow", h.allow())
		http.Error(w, "tapedeck replay: the tape has no standalone SSE stream (GET)", http.StatusMethodNotAllowed)
		return
	}
	if r.Header.Get(mcphttp.HeaderSession) == "" {
		http.Error(w, "tapedeck replay: no session: initialize first, then send its Mcp-Session-Id", http.StatusBadRequest)
		return
	}
	sess := h.sessionFor(w, r, false, "")
	if sess == nil {
		return
	}
	version := r.Header.Get(mcphttp.HeaderProtocol)
	h.mu.Lock()
	if version == "" {
		version = sess.version
	}
	var s *stream
	if resume {
		var msg string
		if s, msg = h.resumable(sess, strings.TrimSpace(last[0])); s == nil {
			h.unlock()
			http.Error(w, "tapedeck replay: "+msg, http.StatusBadRequest)
			return
		}
	} else {
		s = h.standalone(sess)
		if s.finished {
			h.unlock()
			http.Error(w, "tapedeck replay: the session's standalone stream has ended", http.StatusConflict)
			return
		}
	}
	if s.attached && !resume {
		h.unlock()
		http.Error(w, fmt.Sprintf("tapedeck replay: stream %d is already being written to another response", s.no), http.StatusConflict)
		return
	}
	if s == sess.get {
		for _, m := range sess.held {
			s.push(item{msg: m, seq: -1})
		}
		sess.held = nil
		if s.sent == 0 && h.primes(version) {
			s.prime()
		}
	}
	s.attached = true
	h.unlock()

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	h.pipe(w, r, sess, s)
}

// resumable finds the stream a Last-Event-ID names and sets it to send
// again what came after that event; the caller holds the lock.
func (h *HTTPHandler) resumable(sess *session, id string) (*stream, string) {
	a, b, ok := strings.Cut(id, "_")
	no, err1 := strconv.Atoi(a)
	idx, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || no < 0 || idx < 0 {
		return nil, fmt.Sprintf("malformed Last-Event-ID %q: expected STREAM_INDEX, as the event ids this server sends", id)
	}
	s := sess.streams[no]
	switch {
	case s == nil:
		return nil, fmt.Sprintf("Last-Event-ID %q: stream %d is not held by this session (ended, or never opened)", id, no)
	case idx+1 < s.base:
		return nil, fmt.Sprintf("Last-Event-ID %q: the events after it are no longer held (the stream keeps its last %d)", id, maxHistory)
	case idx >= s.sent:
		return nil, fmt.Sprintf("Last-Event-ID %q: stream %d has sent only %d events", id, no, s.sent)
	}
	// A client resumes a stream it lost, whose old response may not have
	// noticed yet: the resumption takes it over.
	if s.attached {
		s.gen++
		s.wake()
	}
	s.sent = idx + 1
	return s, ""
}
