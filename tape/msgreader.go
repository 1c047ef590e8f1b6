package tape

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// MessageReader reads messages' bytes from a tape in the order of its
// index, for a pass that wants some of its messages' bytes (diff's calls,
// check --spec's answers) without a read(2) and a classification each, as
// Index.Message costs: those on lines of their own from the file, through
// read-only mappings of a window at a time where it can be mapped (no copy,
// and no more than a window resident), else through a buffer, skipping what
// lies between; others (one of a batch, or behind the reader) from the
// index.
type MessageReader struct {
	x      *Index
	r      *bufio.Reader
	pos    int64
	mapped *MappedLines // the file mapped a window at a time, or nil
}

// NewMessageReader reads x's messages from r (the tape's file, from its
// start), mapped a window at a time (mapWindow, as the index is) when r
// is a file of mapThreshold bytes or more.
func NewMessageReader(x *Index, r io.Reader) *MessageReader {
	return newMessageReader(x, r, mapThreshold, mapWindow)
}

// MessageReader is a MessageReader over the index's own source (the file it
// was opened from, mapped when it is a large regular file), for a pass
// that has the index but not the tape's path.
func (x *Index) MessageReader() *MessageReader {
	if f, ok := x.src.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() >= mapThreshold {
			if ml, err := MapLines(f, st.Size(), mapWindow); err == nil {
				return &MessageReader{x: x, mapped: ml}
			}
		}
	}
	return &MessageReader{x: x, r: bufio.NewReaderSize(io.NewSectionReader(x.src, 0, math.MaxInt64), 1<<20)}
}

// newMessageReader reads from r, mapped a window at a time when r is a
// file of threshold bytes or more.
func newMessageReader(x *Index, r io.Reader, threshold, window int64) *MessageReader {
	m := &MessageReader{x: x}
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() && st.Size() >= threshold {
			if ml, err := MapLines(f, st.Size(), window); err == nil {
				m.mapped = ml
				return m
			}
		}
	}
	m.r = bufio.NewReaderSize(r, 1<<20)
	return m
}

// Guard runs fn, which calls At and reads the messages it returns on this
// goroutine, so that a mapped file cut shorter meanwhile is an error
// wrapping mmap.ErrShrank (naming the file), not a crash; without a
// mapping it is fn().
func (m *MessageReader) Guard(fn func() error) error {
	if m.mapped == nil {
		return fn()
	}
	return m.mapped.Guard(fn)
}

// Close unmaps the window.
func (m *MessageReader) Close() {
	if m.mapped != nil {
		_ = m.mapped.Close()
	}
}

// At returns message e's bytes (its line's, _meta included), valid until
// the next call (call it, and read them, under Guard); e comes from the index, read in its order.
func (m *MessageReader) At(e Entry) ([]byte, error) {
	if e.Batch != 0 || e.Offset < m.pos {
		msg, err := m.x.Message(e.Seq) // one of a batch: its bytes are part of a line
		return msg.Raw, err
	}
	if m.mapped != nil {
		line, err := m.mapped.Line(e.Offset)
		if err != nil {
			return nil, fmt.Errorf("read message %d (line %d): %w", e.Seq, e.Line, err)
		}
		m.pos = e.Offset + int64(len(line))
		return bytes.TrimRight(line, "\r"), nil
	}
	if _, err := m.r.Discard(int(e.Offset - m.pos)); err != nil {
		return nil, fmt.Errorf("read message %d (line %d): %w", e.Seq, e.Line, err)
	}
	m.pos = e.Offset
	line, err := m.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) {
		head := slices.Clone(line) // line is the reader's buffer, which ReadBytes refills
		rest, err2 := m.r.ReadBytes('\n')
		line = append(head, rest...)
		err = err2
	}
	if err != nil && !(errors.Is(err, io.EOF) && len(line) > 0) {
		return nil, fmt.Errorf("read message %d (line %d): %w", e.Seq, e.Line, err)
	}
	m.pos += int64(len(line))
	return bytes.TrimRight(line, "\r\n"), nil
}
