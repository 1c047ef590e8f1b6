package compare

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// spanReader reads messages' bytes from a large tape file in the index's
// order, as tape.MessageReader does (a window of the file mapped at a
// time, no copy), but where a message's line is followed by the next
// message's on the next line it knows where the line ends from the next
// message's offset: its bytes are not searched for the newline first (a
// pass over every byte read, most of them then read once more).
type spanReader struct {
	x      *tape.Index
	f      *os.File
	size   int64
	data   []byte // the file's bytes from base
	base   int64
	unmap  func() error
	pos    int64
	window int64
}

const (
	spanThreshold = 4 << 20  // below this, tape.MessageReader reads
	spanWindow    = 64 << 20 // mapped at a time: bounds the resident set
)

// newSpanReader maps r when it is a regular file of threshold bytes or
// more; nil otherwise (or when it cannot be mapped).
func newSpanReader(x *tape.Index, r io.Reader, threshold, window int64) *spanReader {
	f, ok := r.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() < threshold {
		return nil
	}
	s := &spanReader{x: x, f: f, size: st.Size(), window: window}
	if err := s.remap(0, min(s.size, window)); err != nil {
		return nil
	}
	return s
}

func (s *spanReader) remap(base, length int64) error {
	_ = s.Close()
	data, unmap, err := mmap.Map(s.f, base, length, mmap.Sequential)
	if err != nil {
		return fmt.Errorf("map the tape at byte %d: %w", base, err)
	}
	s.data, s.base, s.unmap = data, base, unmap
	if afterMap != nil {
		afterMap()
	}
	return nil
}

// afterMap, when not nil, is called right after a spanReader maps a
// window (a test's hook: it cuts the file there).
var afterMap func()

// At returns message e's bytes (its line's, _meta included, without the
// line's end), valid until the next call (call it, and read them, under
// mmap.Guard or mmap.Catch); next is the message after e
// (nil for the last), whose offset ends e's line when it starts the next.
func (s *spanReader) At(e tape.Entry, next *tape.Entry) ([]byte, error) {
	if e.Batch != 0 || e.Offset < s.pos {
		msg, err := s.x.Message(e.Seq) // one of a batch: its bytes are part of a line
		return msg.Raw, err
	}
	if e.Offset >= s.size {
		return nil, fmt.Errorf("read message %d (line %d): %w", e.Seq, e.Line, io.ErrUnexpectedEOF)
	}
	end := int64(-1) // where the line's '\n' is, when known
	if next == nil {
		end = s.size
	} else if next.Batch == 0 && next.Line == e.Line+1 && next.Offset > e.Offset && next.Offset <= s.size {
		end = next.Offset - 1
	}
	page := int64(os.Getpagesize())
	if end >= 0 {
		need := min(end+1, s.size) // the newline read too
		if e.Offset < s.base || need > s.base+int64(len(s.data)) {
			base := e.Offset &^ (page - 1)
			if err := s.remap(base, min(s.size-base, max(s.window, need-base))); err != nil {
				return nil, err
			}
		}
		line := s.data[e.Offset-s.base : end-s.base]
		if end == s.size {
			// The last line: up to its newline, if it has one.
			if k := bytes.IndexByte(line, '\n'); k >= 0 {
				line = line[:k]
			}
		} else if s.data[end-s.base] != '\n' {
			return s.search(e)
		}
		s.pos = e.Offset + int64(len(line))
		return bytes.TrimRight(line, "\r"), nil
	}
	return s.search(e)
}

// search finds the end of e's line by its newline.
func (s *spanReader) search(e tape.Entry) ([]byte, error) {
	page := int64(os.Getpagesize())
	length := s.window
	for {
		end := s.base + int64(len(s.data))
		if e.Offset >= s.base && e.Offset < end {
			rest := s.data[e.Offset-s.base:]
			if k := bytes.IndexByte(rest, '\n'); k >= 0 {
				s.pos = e.Offset + int64(k)
				return bytes.TrimRight(rest[:k], "\r"), nil
			}
			if end == s.size {
				s.pos = s.size
				return bytes.TrimRight(rest, "\r"), nil
			}
			if s.base == e.Offset&^(page-1) {
				length = 2 * int64(len(s.data)) // one line longer than the window
			}
		}
		base := e.Offset &^ (page - 1)
		if err := s.remap(base, min(s.size-base, length)); err != nil {
			return nil, err
		}
	}
}

// Close unmaps the window.
func (s *spanReader) Close() error {
	if s.unmap == nil {
		return nil
	}
	err := s.unmap()
	s.unmap, s.data = nil, nil
	return err
}
