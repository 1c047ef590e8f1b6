package importer

import (
	"io"
	"sync"
)

// tapeSink is the buffered writer under an import's tape.Writer (what
// bufio.Writer was), which can also write a line importer's records
// straight from the chunk they were encoded into: a chunk's records sit
// back to back in its output, so a run of them is lent to the sink
// (lend) and written with one write(2) from there once the chunk is
// applied (settle), instead of being copied into the buffer first. Bytes
// reach w in the order they were given, lent or written.
type tapeSink struct {
	w    io.Writer
	buf  []byte // buffered bytes, before lent
	lent []byte // a run of lent bytes, valid until settle
	err  error

	// chunk is the output of the chunk being applied (lineChunk.out):
	// records in it may be lent.
	chunk []byte
}

const (
	sinkSize = 1 << 20 // the buffer
	// sinkDirect: a lent run at least this long is written from where it
	// is; a shorter one is copied into the buffer (a run cut short by
	// records the reorder held costs no more system calls than before).
	sinkDirect = 64 << 10
)

// sinkBufs keeps a sink's buffer for the next import (fresh memory is
// zeroed and faulted in).
var sinkBufs struct {
	sync.Mutex
	free [][]byte
}

func newTapeSink(w io.Writer) *tapeSink {
	s := &tapeSink{w: w}
	sinkBufs.Lock()
	if n := len(sinkBufs.free); n > 0 {
		s.buf = sinkBufs.free[n-1][:0]
		sinkBufs.free = sinkBufs.free[:n-1]
	}
	sinkBufs.Unlock()
	if s.buf == nil {
		s.buf = make([]byte, 0, sinkSize)
	}
	return s
}

// Write buffers p after what was lent.
func (s *tapeSink) Write(p []byte) (int, error) {
	if s.err != nil {
		return 0, s.err
	}
	if len(s.lent) > 0 {
		s.settle()
	}
	if len(s.buf)+len(p) > cap(s.buf) {
		s.flushBuf()
	}
	if len(p) >= cap(s.buf) {
		if s.err == nil {
			_, s.err = s.w.Write(p) // the buffer is empty: written where it is
		}
	} else if s.err == nil {
		s.buf = append(s.buf, p...)
	}
	if s.err != nil {
		return 0, s.err
	}
	return len(p), nil
}

// owns reports whether r's bytes are the chunk's being applied, at
// r.start (not a copy of them).
func (s *tapeSink) owns(r rec) bool {
	return len(r.b) > 0 && r.end <= len(s.chunk) && r.start < r.end && &s.chunk[r.start] == &r.b[0]
}

// lend has p, bytes of the chunk being applied, written after what came
// before (p is not copied now: it must stay as it is until settle).
func (s *tapeSink) lend(p []byte) error {
	if s.err != nil {
		return s.err
	}
	if n := len(s.lent); n > 0 && cap(s.lent)-n >= len(p) && &s.lent[:n+1][n] == &p[0] {
		s.lent = s.lent[:n+len(p)] // the next record, right after the run
		return nil
	}
	if len(s.lent) > 0 {
		s.settle()
	}
	s.lent = p
	return s.err
}

// settle writes what was lent (the chunk is done with): a long run from
// where it is, after the buffer; a short one copied into the buffer.
func (s *tapeSink) settle() {
	p := s.lent
	s.lent = nil
	if s.err != nil || len(p) == 0 {
		return
	}
	if len(p) < sinkDirect {
		if len(s.buf)+len(p) > cap(s.buf) {
			s.flushBuf()
		}
		s.buf = append(s.buf, p...)
		return
	}
	s.flushBuf()
	if s.err == nil {
		_, s.err = s.w.Write(p)
	}
}

func (s *tapeSink) flushBuf() {
	if s.err == nil && len(s.buf) > 0 {
		_, s.err = s.w.Write(s.buf)
	}
	s.buf = s.buf[:0]
}

// Flush writes everything given so far.
func (s *tapeSink) Flush() error {
	s.settle()
	s.flushBuf()
	return s.err
}

// close gives the sink's buffer to the next import (after Flush; the
// sink is not used again).
func (s *tapeSink) close() {
	sinkBufs.Lock()
	if len(sinkBufs.free) < 2 {
		sinkBufs.free = append(sinkBufs.free, s.buf[:0])
	}
	sinkBufs.Unlock()
	s.buf, s.lent, s.chunk = nil, nil, nil
}
