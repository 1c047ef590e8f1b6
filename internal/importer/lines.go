package importer

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// Importing a line-oriented log on every core: turning a line into tape
// bytes (validating and splitting its envelope, encoding its record)
// depends on nothing but the line, so workers do it for chunks of the
// input (split at newlines), while one ordered stage applies what is
// stateful across lines (a session's first $transport/start, the reorder
// repair, counters, a line's error) chunk after chunk, in input order, and
// writes the records' bytes. What reaches the tape, and the error and its
// line, are those of reading the lines one by one; with one worker (one
// core) the chunks are made and applied in turn, without goroutines.

const (
	linesChunk    = 512 << 10 // input bytes a worker takes at once (whole lines: more for a longer line)
	linesInFlight = 8         // chunks read, worked on or waiting to be applied: bounds the memory
)

// lineWorkers is how many goroutines work on chunks: o.workers when set
// (tests), else the cores Go may use, up to 4.
func (o Options) lineWorkers() int {
	if o.workers > 0 {
		return o.workers
	}
	return min(runtime.GOMAXPROCS(0), 4)
}

func (o Options) lineChunk() int {
	if o.chunk > 0 {
		return o.chunk
	}
	return linesChunk
}

// chunkMem is a chunk's storage, kept in chunkPool between imports:
// fresh memory (zeroed, faulted in) costs more than the work done in it.
type chunkMem struct {
	buf, out []byte
	items    any // a []lineItem[R]
}

// chunkPool holds the storage of up to linesInFlight chunks between
// imports (a sync.Pool would lose it to the collections an import makes).
var chunkPool struct {
	sync.Mutex
	free []chunkMem
}

// newLineChunk is a chunk with storage from chunkPool.
func newLineChunk[R any]() *lineChunk[R] {
	c := &lineChunk[R]{done: make(chan struct{}, 1)}
	chunkPool.Lock()
	defer chunkPool.Unlock()
	if n := len(chunkPool.free); n > 0 {
		m := chunkPool.free[n-1]
		chunkPool.free[n-1] = chunkMem{}
		chunkPool.free = chunkPool.free[:n-1]
		c.buf, c.out = m.buf[:0], m.out[:0]
		if items, ok := m.items.([]lineItem[R]); ok {
			c.items = items[:0]
		}
	}
	return c
}

// recycle gives c's storage back to chunkPool, once nothing holds c.
func (c *lineChunk[R]) recycle() {
	clear(c.items) // no pointers kept into the import's memory
	m := chunkMem{buf: c.buf[:0], out: c.out[:0], items: c.items[:0]}
	c.buf, c.out, c.data, c.items = nil, nil, nil, nil
	chunkPool.Lock()
	defer chunkPool.Unlock()
	if len(chunkPool.free) < linesInFlight {
		chunkPool.free = append(chunkPool.free, m)
	}
}

// lineChunk is a run of whole lines of the input and what a worker made
// of them.
type lineChunk[R any] struct {
	buf   []byte // the chunk's storage, reused
	data  []byte // whole lines (the last one without its newline at the end of the input)
	err   error  // after data's lines: errLineTooLong (the next line) or the reader's error
	lines int    // the lines data holds
	items []lineItem[R]
	out   []byte // the records' bytes (lineItem.r's spans)
	done  chan struct{}
	win   *mapWindow // the mapping data is in, held until applied; nil when read
	size  int        // the chunks' size (lineReader.size): out's room is made for it at once
}

// release lets go of c's mapping, once its records are applied.
func (c *lineChunk[R]) release() {
	if c.win != nil {
		c.win.release()
		c.win = nil
	}
}

// lineItem is what a worker made of a line that is not blank.
type lineItem[R any] struct {
	rel     int  // the line's index in its chunk (0 for the first)
	tooLong bool // longer than the bound: the import's error
	r       R
}

// lineReader cuts its input into chunks of whole lines.
type lineReader struct {
	r    io.Reader
	size int
	max  int64
	tail []byte // the bytes after the last newline handed out
	err  error  // the read error (io.EOF at the end) once seen
	done bool
	m    *mapSource // the file's mapped part, nil when it is read
	read bool       // m handed out: the file is read after it
}

// fill sets c.data to the next lines (at least size bytes of them when
// the input has that many), and c.err to what stops the input after
// them. It reports false at the end of the input.
func fillChunk[R any](cr *lineReader, c *lineChunk[R]) bool {
	c.size = cr.size
	if cr.done {
		return false
	}
	if cr.m != nil && !cr.read {
		var ok bool
		err := mmap.Guard(func() (err error) { ok, err = fillMapped(cr, c); return err }) // the file cut shorter: ErrShrank, not a crash
		switch {
		case err != nil:
			c.data, c.err, cr.done = nil, err, true
			return true
		case ok:
			c.err = nil
			return true
		}
		// The mapped part is handed out: read from its end.
		cr.read = true
		if _, err := cr.m.f.Seek(cr.m.off, io.SeekStart); err != nil {
			c.data, c.err, cr.done = nil, err, true
			return true
		}
	}
	buf := append(c.buf[:0], cr.tail...)
	defer func() { c.buf = buf[:0] }()
	c.err = nil
	from := 0 // where to look for the last newline: buf[:from] holds none after nl
	nl := -1
	for {
		if k := bytes.LastIndexByte(buf[from:], '\n'); k >= 0 {
			nl = from + k
		}
		from = len(buf)
		if int64(len(buf)-(nl+1)) > cr.max {
			// An unended line already longer than the bound (with its
			// newline yet to come, longer still): the lines before it,
			// then the error, without holding more of it.
			c.data, c.err, cr.done = buf[:nl+1], errLineTooLong, true
			return true
		}
		if cr.err != nil {
			cr.done = true
			if errors.Is(cr.err, io.EOF) {
				c.data = buf // the last line may lack its newline
				return len(buf) > 0
			}
			c.data, c.err = buf[:nl+1], cr.err // a line cut by the error is not read
			return true
		}
		if nl >= 0 && len(buf) >= cr.size {
			c.data = buf[:nl+1]
			cr.tail = append(cr.tail[:0], buf[nl+1:]...)
			return true
		}
		if cap(buf)-len(buf) < 4096 {
			nb := make([]byte, len(buf), max(2*cap(buf), cr.size+cr.size/4))
			copy(nb, buf)
			buf = nb
		}
		n, err := cr.r.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err != nil {
			cr.err = err
		}
	}
}

// work makes c's items: each line that is not blank, through parse
// (which fills the item's r, zero before, in place, and appends its
// record's bytes to out).
func workChunk[R, W any](c *lineChunk[R], w W, max int64, parse func(w W, line, out []byte, r *R) []byte) {
	defer mmap.Catch(&c.err)() // a mapped file cut shorter: ErrShrank, not a crash
	c.items, c.out, c.lines = c.items[:0], c.out[:0], 0
	data := c.data
	// The records take about as many bytes as the lines (an envelope's
	// members give way to _meta): room for them at once, made once for
	// the chunks of any length (not grown, nor made again for a longer
	// chunk than the last).
	if cap(c.out) < len(data)+len(data)/8 {
		c.out = make([]byte, 0, len(data)+c.size)
	}
	for len(data) > 0 {
		line := data
		if k := bytes.IndexByte(data, '\n'); k >= 0 {
			line, data = data[:k+1], data[k+1:]
		} else {
			data = nil
		}
		rel := c.lines
		c.lines++
		if int64(len(line)) > max {
			c.items = append(c.items, lineItem[R]{rel: rel, tooLong: true})
			return // the import stops here
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		c.items = append(c.items, lineItem[R]{rel: rel})
		c.out = parse(w, line, c.out, &c.items[len(c.items)-1].r)
	}
}

// eachLineParallel reads r's lines as eachLine does, each that is not
// blank parsed by a worker (newWorker makes each worker's state) and then
// applied in input order with the bytes of the chunk's records; it returns
// how many lines were applied. An *Error from apply gets the line's
// number; a line longer than o.maxLine() is an error naming it.
func eachLineParallel[R, W any](r io.Reader, format string, o Options, newWorker func() W, parse func(w W, line, out []byte, r *R) []byte, apply func(r *R, out []byte) error) (_ int, err error) {
	defer func() {
		f, ok := r.(*os.File)
		if c, isCtx := r.(ctxReader); isCtx {
			f, ok = c.r.(*os.File)
		}
		if ok && errors.Is(err, mmap.ErrShrank) {
			err = fmt.Errorf("read %s: %w", f.Name(), err)
		}
	}()
	defer mmap.Catch(&err)() // the mapped file cut shorter: ErrShrank, not a crash
	max := o.maxLine()
	cr := &lineReader{r: r, size: o.lineChunk(), max: max, m: newMapSource(r, max)}
	lines, base := 0, 0
	tooLong := func(n int) error {
		return &Error{Format: format, Line: n, Err: fmt.Errorf("expected a line of at most %d bytes, found a longer one", max)}
	}
	// applyChunk applies c's items; done reports the end of the import.
	applyChunk := func(c *lineChunk[R]) (done bool, err error) {
		if s := o.sink; s != nil {
			// The chunk's records may be lent to the sink, written from
			// c.out once they are all applied (before c is used again).
			s.chunk = c.out
			defer func() { s.settle(); s.chunk = nil }()
		}
		for i := range c.items {
			it := &c.items[i]
			n := base + it.rel + 1
			if it.tooLong {
				return true, tooLong(n)
			}
			lines++
			if err := apply(&it.r, c.out); err != nil {
				var ie *Error
				if errors.As(err, &ie) {
					ie.Line = n
				}
				return true, err
			}
		}
		base += c.lines
		switch {
		case errors.Is(c.err, errLineTooLong):
			return true, tooLong(base + 1)
		case c.err != nil:
			return true, c.err
		}
		return false, nil
	}

	workers := o.lineWorkers()
	if workers <= 1 {
		c := newLineChunk[R]()
		w := newWorker()
		if cr.m != nil {
			defer cr.m.close()
		}
		for fillChunk(cr, c) {
			workChunk(c, w, max, parse)
			done, err := applyChunk(c)
			c.release()
			if done {
				return lines, err
			}
		}
		c.recycle()
		return lines, nil
	}

	free := make(chan *lineChunk[R], linesInFlight)
	for range linesInFlight {
		free <- newLineChunk[R]()
	}
	// Every chunk is in at most one of free, work and order at a time, so
	// sends to work and order never block.
	work := make(chan *lineChunk[R], linesInFlight)
	order := make(chan *lineChunk[R], linesInFlight)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(quit) // the reader stops at its next chunk; workers at the end of work
		if cr.m != nil {
			// A mapping is unmapped once no goroutine reads it (a file's
			// reads end: this does not wait on a pipe).
			wg.Wait()
			cr.m.close()
		}
	}()
	wg.Add(1 + workers)
	go func() {
		defer wg.Done()
		defer close(order)
		defer close(work)
		for {
			var c *lineChunk[R]
			select {
			case c = <-free:
			case <-quit:
				return
			}
			if !fillChunk(cr, c) {
				return
			}
			work <- c
			order <- c
		}
	}()
	for range workers {
		go func() {
			defer wg.Done()
			w := newWorker()
			for c := range work {
				workChunk(c, w, max, parse)
				c.done <- struct{}{}
			}
		}()
	}
	for c := range order {
		<-c.done
		done, err := applyChunk(c)
		c.release()
		if done {
			return lines, err
		}
		free <- c
	}
	// Every chunk but the one the reader found no lines for was applied
	// and is back in free (order is closed once the reader is done, and
	// each chunk in it was waited for): their storage goes to the next
	// import.
	for {
		select {
		case c := <-free:
			c.recycle()
		default:
			return lines, nil
		}
	}
}

// rec is a record (one or more tape lines) encoded ahead of writing: its
// bytes, what out counts once they are written, and the error encoding it
// met after its bytes (written first, as the Writer would have).
type rec struct {
	start, end int    // its bytes in the chunk's out, until b is set
	b          []byte // its bytes
	err        error
	msgs, life int
	server     string
}

// bytesIn returns r with b taken from out.
func (r rec) bytesIn(out []byte) rec {
	r.b = out[r.start:r.end]
	return r
}

// put writes r's bytes and counts it: lent to the sink when they are
// the chunk's being applied.
func (o *out) put(r rec) error {
	switch {
	case len(r.b) == 0:
	case o.sink != nil && o.sink.owns(r):
		if err := o.sink.lend(r.b); err != nil {
			return err
		}
	default:
		if err := o.w.WriteLines(r.b); err != nil {
			return err
		}
	}
	if r.err != nil {
		return r.err
	}
	o.res.Messages += r.msgs
	o.res.Lifecycle += r.life
	if r.server != o.lastServer || len(o.servers) == 0 {
		o.servers[r.server] = true
		o.lastServer = r.server
	}
	return nil
}

// recEncoder encodes records as out writes them, into a buffer.
type recEncoder struct {
	buf        []byte
	scratch    []byte // startRec's
	w          *tape.Writer
	prefixes   map[encKey][]byte // plain's, by direction and server
	lastKey    encKey            // the key of lastPrefix, plain's last
	lastPrefix []byte
	ts         tsWriter
}

func newRecEncoder() *recEncoder {
	e := &recEncoder{prefixes: map[encKey][]byte{}}
	e.w = tape.NewWriter(e).KeepMicroseconds()
	return e
}

// Write appends p to the buffer (the Writer's io.Writer).
func (e *recEncoder) Write(p []byte) (int, error) {
	e.buf = append(e.buf, p...)
	return len(p), nil
}

// with runs f appending to out, returning the record of what it appended.
func (e *recEncoder) with(out []byte, f func() error) (rec, []byte) {
	e.buf = out
	start := len(out)
	err := f()
	out, e.buf = e.buf, nil
	return rec{start: start, end: len(out), err: err}, out
}

// plain is out.plain's record: msg, a single JSON-RPC object on one line
// a tape.Peeker found Plain, with _meta spliced in before its closing
// brace, byte for byte the line tape.Encoder.AppendLinePlain (made
// KeepMicroseconds) writes, its time formatted by hand.
func (e *recEncoder) plain(out, msg []byte, m tape.Meta) (rec, []byte) {
	k := encKey{m.Dir, m.Server}
	prefix := e.lastPrefix
	if prefix == nil || k != e.lastKey { // the last record's, most often (no map lookup, no hash)
		if prefix = e.prefixes[k]; prefix == nil {
			prefix = metaPrefix(m.Dir, m.Server)
			e.prefixes[k] = prefix
		}
		e.lastKey, e.lastPrefix = k, prefix
	}
	start := len(out)
	msg = bytes.TrimSpace(msg)
	n := len(msg)
	out = append(out, msg[:n-1]...)
	if len(bytes.TrimSpace(msg[1:n-1])) > 0 {
		out = append(out, ',')
	}
	out = append(out, prefix...)
	out = e.ts.append(out, m.Time)
	out = append(out, "\"}}\n"...)
	return rec{start: start, end: len(out), msgs: 1, server: m.Server}, out
}

// metaPrefix is a plain line's _meta up to its time's opening quote, as
// tape.NewEncoder builds it.
func metaPrefix(dir tape.Dir, server string) []byte {
	p := []byte(`"_meta":{"dir":`)
	p = jsonscan.AppendQuoted(p, string(dir), false)
	p = append(p, `,"server":`...)
	p = jsonscan.AppendQuoted(p, server, false)
	return append(p, `,"ts":"`...)
}

// message is out.message's record.
func (e *recEncoder) message(out, msg []byte, m tape.Meta) (rec, []byte) {
	r, out := e.with(out, func() error { return e.w.Write(msg, m) })
	r.server, r.msgs = m.Server, 1
	if bytes.HasPrefix(bytes.TrimSpace(msg), []byte("[")) {
		r.msgs = len(tape.Classify(msg))
	}
	return r, out
}

// lifecycle is out.lifecycle's record.
func (e *recEncoder) lifecycle(out []byte, method string, params any, m tape.Meta) (rec, []byte) {
	r, out := e.with(out, func() error { return e.w.WriteLifecycle(method, params, m) })
	r.server, r.life = m.Server, 1
	return r, out
}

// invalid is out.invalid's record.
func (e *recEncoder) invalid(out, frame []byte, m tape.Meta) (rec, []byte) {
	r, out := e.with(out, func() error { return e.w.WriteInvalid(frame, m) })
	r.server, r.life = m.Server, 1
	return r, out
}

// startRec encodes a $transport/start for the ordered stage (a session's
// first), its bytes e's until the next call.
func (e *recEncoder) startRec(format string, params map[string]any, m tape.Meta) rec {
	r, out := e.lifecycle(e.scratch[:0], tape.MethodStart, startParams(format, params), m)
	e.scratch = out
	return r.bytesIn(out)
}
