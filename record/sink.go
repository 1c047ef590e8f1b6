package record

import (
	"bytes"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// sink writes wire messages and lifecycle records of one server to a tape
// (see the design comment in core.go), redacting the tape's copy when rules
// are set. It never touches the bytes that are forwarded to the peer.
type sink struct {
	rc *recorder
	w  *tape.Writer

	// The fast path of a stream's sink: lines of its direction are
	// encoded straight into its batch, without allocating.
	enc   *tape.Encoder
	lines *[]byte
	extra []byte      // the fast path's encoded metaExtra, reused
	peek  tape.Peeker // line's look at a relayed line
	// chunk, while a relay records the lines of one read, is the time
	// they were read: one clock call a read, not one a line.
	chunk time.Time
}

// now is the time a record is stamped with: the chunk's, in a chunk.
func (s *sink) now() time.Time {
	if !s.chunk.IsZero() {
		return s.chunk
	}
	return s.rc.now()
}

// inChunk starts a chunk (the lines of one read) if none is started: its
// lines are stamped alike, until endChunk.
func (s *sink) inChunk() {
	if s.chunk.IsZero() {
		s.chunk = s.rc.now()
	}
}

func (s *sink) endChunk() { s.chunk = time.Time{} }

func (s *sink) meta(dir tape.Dir, extra map[string]any) tape.Meta {
	return tape.Meta{Dir: dir, Server: s.rc.server, Time: s.now(), Extra: extra}
}

// plain records a message a tape.Peeker found Plain on the fast path,
// without walking it again; false: the sink has no fast path (redaction).
func (s *sink) plain(msg []byte) bool {
	if s.enc == nil || s.rc.redact != nil {
		return false
	}
	*s.lines = s.enc.AppendLinePlain(*s.lines, msg, s.now(), nil)
	return true
}

// line records one line a relay read (its newline cut off, so it holds
// none): message, without the encoder's scan of the line for a newline,
// stamped with the time of the chunk it came in (endChunk ends it). A
// Plain message one object on the line, without a carriage return, goes
// straight into the batch; anything else to message.
func (s *sink) line(frame []byte, dir tape.Dir) error {
	s.inChunk()
	if s.enc != nil && s.rc.redact == nil {
		msg := bytes.TrimSpace(frame)
		// PeekLine's Plain holds no carriage return, and a relay's line
		// no newline.
		if n := len(msg); n >= 2 && msg[0] == '{' && msg[n-1] == '}' && s.peek.PeekLine(msg).Plain {
			*s.lines = s.enc.AppendLinePlain(*s.lines, msg, s.now(), nil)
			return nil
		}
	}
	return s.message(frame, dir, nil)
}

// message records one frame that crossed the wire in direction dir: a
// JSON-RPC message or batch, or else an invalid frame (kept as text). A
// blank frame is not recorded.
func (s *sink) message(frame []byte, dir tape.Dir, mx metaExtra) error {
	frame = bytes.TrimSpace(frame)
	if len(frame) == 0 {
		return nil
	}
	if s.enc != nil && s.rc.redact == nil {
		var extra []byte
		if mx != nil {
			extra = mx.appendJSON(s.extra[:0])
			s.extra = extra[:0]
		}
		if b, ok := s.enc.AppendLineMeta(*s.lines, frame, s.now(), extra); ok {
			*s.lines = b
			return nil
		}
	}
	var extra map[string]any
	if mx != nil {
		extra = mx.fields()
	}
	entries := tape.Classify(frame)
	if len(entries) == 0 {
		return nil
	}
	if entries[0].Kind == tape.KindInvalid {
		return s.w.WriteInvalid(s.redactText(frame), s.meta(dir, extra))
	}
	if s.rc.redact == nil {
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
	out, paths, err := s.rc.redact.Redact(msg)
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

// lifecycle records a lifecycle event such as $transport/start.
func (s *sink) lifecycle(method string, params any, extra map[string]any) error {
	return s.w.WriteLifecycle(method, params, s.meta(tape.DirLifecycle, extra))
}

// stderr records one line the server wrote on stderr; value rules apply to
// it, since servers log secrets too.
func (s *sink) stderr(line []byte) error {
	return s.lifecycle(tape.MethodStderr, map[string]string{"text": string(s.redactText(line))}, nil)
}

func (s *sink) redactText(b []byte) []byte { return s.rc.redactText(b) }

func (rc *recorder) redactText(b []byte) []byte {
	if rc.redact == nil {
		return b
	}
	return rc.redact.RedactText(b)
}
