package record

import (
	"io"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Session records a live exchange message by message, through the same
// core as the shim and the proxy (redaction, the lost-record line after a
// failed write, the first write error kept): the recording of every writer
// of live traffic that is neither, such as upstream's fall-through and
// vcr. NewSession writes $transport/start; Message records each message,
// Lifecycle any other record; Close writes $transport/close and returns the first error writing the
// tape. It is safe for concurrent use.
type Session struct {
	rec  *recorder
	o    SessionOptions
	mu   sync.Mutex
	sk   *sink
	done bool
}

// SessionOptions configure a Session.
type SessionOptions struct {
	// Tape receives the records, a whole line a write.
	Tape io.Writer
	// Server names the server on the tape.
	Server string
	// Redact, if set, redacts each message's copy on the tape.
	Redact *tape.Redactor
	// Start are the $transport/start record's params ("transport",
	// "recorder", "episode": "new" for an episode appended to a tape).
	Start map[string]any
	// CloseReason is the $transport/close record's reason; empty means
	// "the session ended". The start's "episode" is repeated in it.
	CloseReason string
	// Now stamps the records; nil means time.Now.
	Now func() time.Time
	// Warn, if not nil, is told of the first failure to write the tape,
	// once; the session goes on, and the tape says later what was lost.
	Warn func(error)
}

// NewSession starts a recording session on o.Tape with its
// $transport/start record.
func NewSession(o SessionOptions) *Session {
	rec := newRecorder(o.Tape, o.Server, o.Redact, o.Now)
	rec.dest.warn = o.Warn
	s := &Session{rec: rec, o: o, sk: rec.direct()}
	rec.note(s.sk.lifecycle(tape.MethodStart, o.Start, nil))
	return s
}

// Message records raw, a message (or batch, or invalid frame) that went
// in direction dir (tape.DirSend: to the server). An error writing the
// tape is kept for Close.
func (s *Session) Message(dir tape.Dir, raw []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.rec.note(s.sk.message(raw, dir, nil))
}

// Lifecycle records a lifecycle record, method (such as
// tape.MethodUnanswered) with params, between the start and the close. An
// error writing the tape is kept for Close.
func (s *Session) Lifecycle(method string, params any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return
	}
	s.rec.note(s.sk.lifecycle(method, params, nil))
}

// SetCloseReason replaces SessionOptions.CloseReason: the reason the
// $transport/close record will give, when the session ended otherwise
// than foreseen at its start.
func (s *Session) SetCloseReason(reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.o.CloseReason = reason
}

// Close writes $transport/close (once) and returns the first error
// writing the tape, if any.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.done {
		s.done = true
		reason := s.o.CloseReason
		if reason == "" {
			reason = "the session ended"
		}
		params := map[string]any{"reason": reason}
		if ep, ok := s.o.Start["episode"]; ok {
			params["episode"] = ep
		}
		s.rec.note(s.sk.lifecycle(tape.MethodClose, params, nil))
	}
	return s.rec.Err()
}
