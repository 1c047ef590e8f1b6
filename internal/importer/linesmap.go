package importer

import (
	"bytes"
	"context"
	"io"
	"os"
	"sync"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// A line log that is a regular file is read through read-only mappings of
// a window of it at a time (linesMapWindow), its chunks cut from the
// mapping in place: no read(2) copies its bytes. A chunk holds its window
// until it is applied; a window is unmapped when the reader has moved
// past it and no chunk holds it. The mapping covers the file up to its
// last newline when the import starts; the rest (a last line without
// one, and what is appended meanwhile) is read as any input is.

// linesMapWindow is how many bytes of the file a window maps (more for a
// chunk whose last line runs past it); a variable for tests.
var linesMapWindow int64 = 64 << 20

// mapWindow is a mapping of the file's bytes from base.
type mapWindow struct {
	data  []byte
	base  int64
	refs  atomic.Int32 // the reader's (until it moves on) and the chunks'
	once  sync.Once
	unmap func() error
}

// release drops a reference, unmapping w after the last.
func (w *mapWindow) release() {
	if w.refs.Add(-1) == 0 {
		w.once.Do(func() { _ = w.unmap() })
	}
}

// mapSource is the mapped part of a file: [off, end) still to be handed
// out, end just after the last newline the file had.
type mapSource struct {
	f        *os.File
	ctx      context.Context
	off, end int64
	win      *mapWindow
	mu       sync.Mutex
	all      []*mapWindow // every window made, for close
}

// newMapSource maps r when it is a regular file (or a ctxReader over
// one) that holds a newline after its offset, else nil (read it).
func newMapSource(r io.Reader, maxLine int64) *mapSource {
	ctx := context.Background()
	if c, ok := r.(ctxReader); ok {
		ctx, r = c.ctx, c.r
	}
	f, ok := r.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || st.Size() <= off {
		return nil
	}
	ms := &mapSource{f: f, ctx: ctx, off: off, end: st.Size()}
	// The mapped part ends after the file's last newline, looked for
	// among its last max+1 bytes (a longer last line is an error the
	// reading finds).
	tail := max(off, ms.end-maxLine-1)
	if !ms.remap(tail, ms.end-tail) {
		return nil
	}
	k := bytes.LastIndexByte(ms.win.data[tail-ms.win.base:], '\n')
	if k < 0 {
		ms.close()
		return nil
	}
	ms.end = tail + int64(k) + 1
	return ms
}

// remap makes the window the length bytes from at (its page), dropping
// the reader's hold on the last one; false when it cannot be mapped.
func (ms *mapSource) remap(at, length int64) bool {
	page := int64(os.Getpagesize())
	base := at &^ (page - 1)
	length += at - base
	data, unmap, err := mmap.Map(ms.f, base, length, mmap.Sequential)
	if err != nil {
		return false
	}
	if afterMap != nil {
		afterMap()
	}
	w := &mapWindow{data: data, base: base, unmap: unmap}
	w.refs.Store(1)
	ms.mu.Lock()
	ms.all = append(ms.all, w)
	ms.mu.Unlock()
	if ms.win != nil {
		ms.win.release()
	}
	ms.win = w
	return true
}

// afterMap, when not nil, is called right after a window is mapped (a
// test's hook: it cuts the file there).
var afterMap func()

// close unmaps every window still mapped (once no chunk is in use).
func (ms *mapSource) close() {
	ms.mu.Lock()
	defer ms.mu.Unlock()
	for _, w := range ms.all {
		w.once.Do(func() { _ = w.unmap() })
	}
	ms.all, ms.win = nil, nil
}

// fillMapped is fillChunk's from the mapping: c.data the next whole
// lines, at least size bytes of them when the mapped part has that many,
// held in place; false once the mapped part is handed out (the file is
// then read from there).
func fillMapped[R any](cr *lineReader, c *lineChunk[R]) (bool, error) {
	ms := cr.m
	if ms.off >= ms.end {
		return false, nil
	}
	if err := ms.ctx.Err(); err != nil {
		return false, err
	}
	size, bound := int64(cr.size), cr.max
	// remap maps from ms.off at least need bytes (within the mapped
	// part); false when it cannot: the rest is read.
	remap := func(need int64) bool {
		if ms.remap(ms.off, min(ms.end-ms.off, max(linesMapWindow, need))) {
			return true
		}
		ms.end = ms.off
		return false
	}
	for {
		w := ms.win
		hi := w.base + int64(len(w.data))
		if ms.off < w.base {
			if !remap(0) {
				return false, nil
			}
			continue
		}
		from, to := ms.off, ms.end // the chunk: whole lines
		if cut := ms.off + size; cut < ms.end {
			// Up to the newline after cut, looked for among the next
			// max+1 bytes: without one there, the line is longer than
			// the bound, and the chunk ends there (workChunk finds it).
			limit := min(ms.end, cut+bound+1)
			if limit > hi {
				if !remap(limit - ms.off) {
					return false, nil
				}
				continue
			}
			to = limit
			if k := bytes.IndexByte(w.data[cut-w.base:limit-w.base], '\n'); k >= 0 {
				to = cut + int64(k) + 1
			}
		} else if ms.end > hi {
			if !remap(ms.end - ms.off) {
				return false, nil
			}
			continue
		}
		c.data = w.data[from-w.base : to-w.base]
		c.win = w
		w.refs.Add(1)
		ms.off = to
		return true, nil
	}
}
