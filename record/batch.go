package record

import (
	"io"
	"sync"
)

// tapeDest serializes whole-line writes from several relays to one tape,
// and keeps the tape whole when writing it fails (a full disk): the first
// failure is reported once (warn), what could not be written is counted,
// and the next write that succeeds first ends a line left partial and
// records what was lost ($transport/lost), so no record is ever glued to
// another and no hole goes unsaid. The relays go on relaying meanwhile.
type tapeDest struct {
	mu   sync.Mutex
	w    io.Writer
	warn func(error) // the first failure, once; nil: none
	lost func(bytes, writes int64) []byte
	res  *reserver // reserves a tape file's blocks ahead; nil: none

	warned     bool
	partial    bool  // a short write left a line unfinished
	lostBytes  int64 // not written since the last successful write
	lostWrites int64
}

func (d *tapeDest) Write(b []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.lostWrites > 0 {
		// Resume on a line boundary, saying what was lost, before b.
		var head []byte
		if d.partial {
			head = append(head, '\n')
		}
		if d.lost != nil {
			head = append(head, d.lost(d.lostBytes, d.lostWrites)...)
		}
		d.res.ahead(len(head) + len(b))
		n, err := d.w.Write(head)
		d.res.wrote(n)
		if err != nil {
			d.partial = d.partial || n > 0 && head[n-1] != '\n'
			return d.fail(b, err)
		}
		d.partial, d.lostBytes, d.lostWrites = false, 0, 0
	}
	d.res.ahead(len(b))
	n, err := d.w.Write(b)
	d.res.wrote(n)
	if err != nil {
		d.partial = n > 0 && b[n-1] != '\n'
		d.lostBytes -= int64(n) // what was written is not lost
		return d.fail(b, err)
	}
	return n, nil
}

// fail counts b as lost and reports the first failure; the caller holds mu.
func (d *tapeDest) fail(b []byte, err error) (int, error) {
	d.lostBytes += int64(len(b))
	d.lostWrites++
	if !d.warned && d.warn != nil {
		d.warned = true
		d.warn(err)
	}
	return 0, err
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
