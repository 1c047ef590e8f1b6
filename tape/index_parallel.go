package tape

import (
	"bytes"
	"hash/maphash"
	"runtime"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// Indexing a mapped window in parallel: classifying a line (finding its
// messages' spans, kind, _meta, flags) depends on nothing but the line, so
// workers classify segments of the window (split at newlines) while the
// indexing goroutine adds each segment's messages in file order, exactly as
// the serial loop adds them (pairing, numbering, warnings and clock checks
// need the order). The result is the serial one: the same lines, the same
// msgInfo for each, added in the same order.

const (
	segmentBytes = 128 << 10 // a segment classified at once: small enough that its lines are still cached when they are added
	segmentsOut  = 8         // segments in flight: bounds the memory
)

// segment is a run of whole lines of the window and what classifying them
// found.
type segment struct {
	data  []byte
	off   int64 // file offset of data[0]
	first bool  // the tape's first line starts it: a BOM is skipped
	lines []segLine
	msgs  []msgInfo
	digs  []Digest // the messages' digests, when the index has a digester
	done  chan struct{}
	err   error // classifying it met a fault (mmap.ErrShrank)
}

// segLine is one line of a segment, as the line reader yields it.
type segLine struct {
	line   []byte
	off    int64 // file offset of line[0]
	next   int64 // file offset after the line and its newline
	nl     bool
	m0, m1 int32 // its messages: segment.msgs[m0:m1]
	array  bool  // it is a JSON array (isArray)
}

// classify splits s.data into lines and classifies each with c.
func (s *segment) classify(c *classifier, seed maphash.Seed, d Digester) {
	s.lines, s.msgs, s.digs = s.lines[:0], s.msgs[:0], s.digs[:0]
	lr := &lineReader{buf: s.data, end: len(s.data), eof: true, off: s.off, line: 1}
	if s.first {
		lr.line = 0
	}
	ascii := isASCII(s.data) // then no line of it needs its UTF-8 checked
	var prevServer, prevMethod []byte
	havePrev := false
	for {
		line, off, nl, err := lr.next()
		if err != nil { // io.EOF: a lineReader over memory has no other error
			return
		}
		m0 := int32(len(s.msgs))
		s.msgs = c.appendLine(s.msgs, line, ascii)
		prehash(s.msgs[m0:], line, seed)
		for i := m0; i < int32(len(s.msgs)); i++ {
			m := &s.msgs[i]
			server, method := m.server.in(line), m.method.in(line) // empty when absent
			m.pre, m.dirc = true, dirCode(m.dir.in(line))
			m.sameServer = havePrev && string(server) == string(prevServer)
			m.sameMethod = havePrev && string(method) == string(prevMethod)
			prevServer, prevMethod, havePrev = server, method, true
		}
		if d != nil {
			s.digs = digestLine(d, s.digs, line, s.msgs[m0:])
		}
		array := len(s.msgs) > int(m0) && isArray(line, s.msgs[m0:])
		s.lines = append(s.lines, segLine{line: line, off: off, next: lr.off, nl: nl, m0: m0, m1: int32(len(s.msgs)), array: array})
	}
}

// indexWorkers is how many goroutines classify a window: the cores Go may
// use, up to 4; 1 means the serial loop.
func indexWorkers() int {
	return min(runtime.GOMAXPROCS(0), 4)
}

// consumeParallel indexes the whole lines of data (a window of the file from
// offset pos, ending at a newline or at the end of the file) as consume
// would, with the classifying done by workers. It reports whether it
// stopped early, at an unfinished last line. segs holds the segments it
// classifies into, made on the first call, reused by the next (all are
// done with when it returns).
func (x *Index) consumeParallel(data []byte, pos int64, workers int, final func() bool, progress []func(int64), segs *[]*segment) (stopped bool, err error) {
	const batchBytes = 8 << 20
	x.mu.Lock()
	defer func() { x.mu.Unlock() }()
	first := x.line == 0

	free := make(chan *segment, segmentsOut)
	if len(*segs) == 0 {
		for range segmentsOut {
			*segs = append(*segs, &segment{done: make(chan struct{}, 1)})
		}
	}
	for _, s := range *segs {
		free <- s
	}
	work := make(chan *segment, segmentsOut)
	order := make(chan *segment, segmentsOut)
	quit := make(chan struct{})
	var cutErr error // the cutting met a fault: read after order is closed
	go func() {      // cut data into segments, in order
		defer close(order)
		defer close(work)
		cutErr = mmap.Guard(func() error { return cutSegments(data, pos, first, free, work, order, quit) })
	}()
	for range workers {
		go func() {
			var c classifier
			var d Digester
			if x.cfg.digester != nil {
				d = x.cfg.digester()
			}
			for s := range work {
				s.err = mmap.Guard(func() error { s.classify(&c, x.pairs.seed, d); return nil })
				s.done <- struct{}{}
			}
		}()
	}
	stop := func() {
		close(quit)
		for s := range order { // the workers are done with the window before it is unmapped
			<-s.done
		}
	}
	chunk := int64(0)
	drained := false
	err = mmap.Guard(func() error {
		for s := range order {
			<-s.done
			if s.err != nil {
				return s.err
			}
			for i := range s.lines {
				l := &s.lines[i]
				if !l.nl && final != nil && !final() {
					stopped = true // an unfinished line: wait for the rest
					return nil
				}
				lineNo := x.line + 1
				if s.digs != nil {
					x.addDigests(s.digs[l.m0:l.m1])
				}
				torn, err := x.addClassified(l.line, s.msgs[l.m0:l.m1], l.array, l.off, lineNo, l.nl)
				if err != nil {
					return err
				}
				x.size, x.line, x.torn = l.next, lineNo, torn
				if chunk += int64(len(l.line)) + 1; chunk > batchBytes {
					chunk = 0
					x.mu.Unlock()
					for _, p := range progress {
						p(l.next)
					}
					x.mu.Lock()
				}
			}
			free <- s
		}
		drained = true
		return cutErr
	})
	if !drained {
		stop()
	}
	return stopped, err
}

// cutSegments cuts data (from file offset pos) into segments of whole
// lines, in order, each taken from free and sent to work and order, until
// the end or quit.
func cutSegments(data []byte, pos int64, first bool, free <-chan *segment, work, order chan<- *segment, quit <-chan struct{}) error {
	for at := 0; at < len(data); {
		var s *segment
		select {
		case s = <-free:
		case <-quit:
			return nil
		}
		end := min(at+segmentBytes, len(data))
		if end < len(data) {
			if k := bytes.IndexByte(data[end:], '\n'); k >= 0 {
				end += k + 1
			} else {
				end = len(data)
			}
		}
		s.data, s.off, s.first = data[at:end], pos+int64(at), first && at == 0
		work <- s
		order <- s
		at = end
	}
	return nil
}
