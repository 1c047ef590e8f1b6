package record

import (
	"bytes"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// sink writes wire messages and lifecycle records of one server to a tape,
// redacting the tape's copy when rules are set. It never touches the bytes
// that are forwarded to the peer.
type sink struct {
	w      *tape.Writer
	server string
	redact *tape.Redactor // nil: no rules
	now    func() time.Time

	// The fast path of a relay's sink: lines of its direction are encoded
	// straight into its batch, without allocating.
	enc   *tape.Encoder
	lines *[]byte
}

func newSink(w *tape.Writer, server string, r *tape.Redactor, now func() time.Time) *sink {
	if now == nil {
		now = time.Now
	}
	if r != nil && r.Empty() {
		r = nil
	}
	return &sink{w: w, server: server, redact: r, now: now}
}

// relaySink returns a sink for one relay's direction that writes into the
// relay's batch, taking the fast path for plain messages.
func relaySink(b *lineBatch, dir tape.Dir, server string, r *tape.Redactor, now func() time.Time) *sink {
	s := newSink(tape.NewWriter(b), server, r, now)
	s.enc, s.lines = tape.NewEncoder(dir, server), &b.buf
	return s
}

func (s *sink) meta(dir tape.Dir, extra map[string]any) tape.Meta {
	return tape.Meta{Dir: dir, Server: s.server, Time: s.now(), Extra: extra}
}

// message records one frame that crossed the wire in direction dir: a
// JSON-RPC message or batch, or else an invalid frame (kept as text). A
// blank frame is not recorded.
func (s *sink) message(frame []byte, dir tape.Dir, extra map[string]any) error {
	frame = bytes.TrimSpace(frame)
	if len(frame) == 0 {
		return nil
	}
	if s.enc != nil && s.redact == nil && extra == nil {
		if b, ok := s.enc.AppendLine(*s.lines, frame, s.now()); ok {
			*s.lines = b
			return nil
		}
	}
	entries := tape.Classify(frame)
	if len(entries) == 0 {
		return nil
	}
	if entries[0].Kind == tape.KindInvalid {
		return s.w.WriteInvalid(s.redactText(frame), s.meta(dir, extra))
	}
	if s.redact == nil {
		return s.w.Write(frame, s.meta(dir, extra))
	}
	if len(entries) == 1 && frame[0] == '{' {
		return s.writeRedacted(frame, dir, extra)
	}
	// A batch: each message on its own line, sharing a batch number, as
	// tape.Writer does, but redacted one by one so each line lists its own
	// redacted paths.
	m := s.meta(dir, extra)
	batch := m.Time.UnixNano()
	for _, e := range entries {
		ex := make(map[string]any, len(extra)+2)
		for k, v := range extra {
			ex[k] = v
		}
		ex["batch"] = batch
		if err := s.writeRedacted(e.Raw, dir, ex); err != nil {
			return err
		}
	}
	return nil
}

func (s *sink) writeRedacted(msg []byte, dir tape.Dir, extra map[string]any) error {
	out, paths, err := s.redact.Redact(msg)
	if err != nil {
		return err
	}
	if len(paths) > 0 {
		ex := make(map[string]any, len(extra)+1)
		for k, v := range extra {
			ex[k] = v
		}
		ex[tape.MetaRedacted] = paths
		extra = ex
	}
	return s.w.Write(out, s.meta(dir, extra))
}

// invalid records a frame known not to be a message (say, a non-JSON SSE
// data field).
func (s *sink) invalid(frame []byte, dir tape.Dir, extra map[string]any) error {
	return s.w.WriteInvalid(s.redactText(frame), s.meta(dir, extra))
}

// lifecycle records a lifecycle event such as $transport/start.
func (s *sink) lifecycle(method string, params any, extra map[string]any) error {
	return s.w.WriteLifecycle(method, params, s.meta(tape.DirLifecycle, extra))
}

// stderr records one line the server wrote on stderr; value rules apply to
// it, since servers log secrets too.
func (s *sink) stderr(line []byte) error {
	return s.lifecycle(tape.MethodStderr, map[string]string{"text": string(s.redactText(line))}, nil)
}

func (s *sink) redactText(b []byte) []byte {
	if s.redact == nil {
		return b
	}
	return s.redact.RedactText(b)
}
