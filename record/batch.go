package record

import (
	"io"
	"sync"
)

// tapeDest serializes whole-line writes from several relays to one tape.
type tapeDest struct {
	mu sync.Mutex
	w  io.Writer
}

func (d *tapeDest) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.w.Write(b)
}

// lineBatch collects the tape lines of one relay between two forwards, so
// that the lines of a chunk read at once reach the tape in one write, made
// before the chunk is forwarded. Every line is complete in the batch, so a
// crash mid-write still tears at most the last line of the tape.
type lineBatch struct {
	buf  []byte // the encoder appends here directly, copying each line once
	dest io.Writer
}

func (b *lineBatch) Write(p []byte) (int, error) {
	b.buf = append(b.buf, p...)
	return len(p), nil
}

func (b *lineBatch) flush() error {
	if len(b.buf) == 0 {
		return nil
	}
	_, err := b.dest.Write(b.buf)
	b.buf = b.buf[:0]
	if cap(b.buf) > keepBuffer {
		b.buf = nil
	}
	return err
}
