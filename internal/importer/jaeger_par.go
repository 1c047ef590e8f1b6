package importer

// A trace's spans on every core. Jaeger answers one trace of a session
// with all its spans in one array, most of the answer: once the scan
// meets a spans array with at least two segments' worth of answer after
// its first element, the rest of the answer is cut at guessed span
// starts (seg_guess.go: "}," and the first span's opening up to its first
// key's colon, `},{"traceID":` in Jaeger's own answers), and workers scan
// the spans from each guess up to the first span at or past the next
// one, or the end of their array. The scan itself stays one pass in
// order: at each span's start it takes the segment guessed there (waiting
// for it, or scanning it itself when no worker has begun it), else scans
// the span; a guess it never stands on (not a span of a spans array) is
// never taken. So what it reads is what one scan from the start reads.

import (
	"bytes"
	"sync"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

const jaegerSegMin = 4 << 20 // the least bytes a segment is worth a worker for

// jaegerSeg is a run of spans scanned from start.
type jaegerSeg struct {
	start, limit int
	claimed      atomic.Bool
	done         chan struct{}
	spans        []jaegerRawSpan
	next         int  // the next span's start, or past the array's ']' when closed
	closed, bad  bool // the array ended; a span did not scan
}

// jaegerPar is the segments of an answer and their workers.
type jaegerPar struct {
	b       []byte
	workers int
	segMin  int
	started bool
	segs    []*jaegerSeg
	cur     int // segs before it are behind the scan
	taken   int // segments the scan took
	quit    atomic.Bool
	wg      sync.WaitGroup
}

func newJaegerPar(b []byte, o Options) *jaegerPar {
	segMin := jaegerSegMin
	if o.chunk > 0 {
		segMin = o.chunk
	}
	return &jaegerPar{b: b, workers: o.lineWorkers(), segMin: segMin}
}

// start cuts the answer after first, a spans array's first span, into
// segments and starts the workers on them, the first time it is worth it.
func (jp *jaegerPar) start(first int) {
	if jp == nil || jp.started || jp.workers <= 1 || len(jp.b)-first < 2*jp.segMin {
		return
	}
	jp.started = true
	b := jp.b
	if first >= len(b) || b[first] != '{' {
		return
	}
	k := jsonscan.SkipSpace(b, first+1)
	if k >= len(b) || b[k] != '"' {
		return
	}
	e := jsonscan.StringEnd(b, k)
	if e < 0 || e-first > 64 || e >= len(b) || b[e] != ':' {
		return
	}
	sep := append([]byte("},"), b[first:e+1]...)
	rest := b[first:]
	guesses := guessStarts(rest, 0, len(rest)/jp.segMin, sep, 2)
	for s, g := range guesses {
		limit := len(b) + 1
		if s+1 < len(guesses) {
			limit = first + guesses[s+1]
		}
		jp.segs = append(jp.segs, &jaegerSeg{start: first + g, limit: limit, done: make(chan struct{})})
	}
	var next atomic.Int64
	// As many workers as cores: the scan's own goroutine mostly waits
	// for them (it scans a segment itself only when none has begun it).
	for range jp.workers {
		jp.wg.Go(func() {
			for !jp.quit.Load() {
				s := next.Add(1) - 1
				if s >= int64(len(jp.segs)) {
					return
				}
				if sg := jp.segs[s]; !jaegerTraceAt(b, sg.start) && sg.claimed.CompareAndSwap(false, true) {
					sg.scan(b)
				}
			}
		})
	}
}

// jaegerTraceAt reports whether the object at i is most likely a trace,
// not a span: its first member a string and the next "spans" (Jaeger's
// traces and spans both begin with their traceID). A worker leaves such a
// guess alone (scanned as a span, the trace's whole spans array would be
// one unknown member to skip); the scan still scans it should it stand
// there.
func jaegerTraceAt(b []byte, i int) bool {
	if i+1 >= len(b) || b[i] != '{' || b[i+1] != '"' {
		return false
	}
	k := jsonscan.StringEnd(b, i+1)
	if k < 0 || k >= len(b) || b[k] != ':' || k+1 >= len(b) || b[k+1] != '"' {
		return false
	}
	v := jsonscan.StringEnd(b, k+1)
	return v >= 0 && bytes.HasPrefix(b[v:], []byte(`,"spans":`))
}

// stop ends the workers (each after the segment it is on).
func (jp *jaegerPar) stop() {
	if jp != nil {
		jp.quit.Store(true)
		jp.wg.Wait()
	}
}

// take returns the segment guessed at i, a span's start, scanned; nil
// when none is.
func (jp *jaegerPar) take(i int) *jaegerSeg {
	if jp == nil {
		return nil
	}
	for jp.cur < len(jp.segs) && jp.segs[jp.cur].start < i {
		jp.cur++
	}
	if jp.cur == len(jp.segs) || jp.segs[jp.cur].start != i {
		return nil
	}
	sg := jp.segs[jp.cur]
	jp.cur++
	jp.taken++
	if sg.claimed.CompareAndSwap(false, true) {
		sg.scan(jp.b)
	} else {
		<-sg.done
	}
	return sg
}

// scan reads the spans from sg.start up to the first at or past
// sg.limit, or the end of their array.
func (sg *jaegerSeg) scan(b []byte) {
	defer close(sg.done)
	p := otlpScan{b: b, i: sg.start}
	for {
		s, ok := p.jaegerSpan()
		if !ok {
			sg.bad = true
			return
		}
		sg.spans = append(sg.spans, s)
		if p.lit(',') {
			if j := jsonscan.SkipSpace(b, p.i); j >= sg.limit {
				sg.next = j
				return
			}
			continue
		}
		sg.closed = p.lit(']')
		sg.bad = !sg.closed
		sg.next = p.i
		return
	}
}

// jaegerSpanArray reads a trace's spans array into spans, taking the
// segments jp scanned where they start.
func (p *otlpScan) jaegerSpanArray(jp *jaegerPar, spans *[]jaegerRawSpan) bool {
	if !p.lit('[') {
		return false
	}
	if p.lit(']') {
		return true
	}
	jp.start(jsonscan.SkipSpace(p.b, p.i))
	for {
		p.i = jsonscan.SkipSpace(p.b, p.i)
		if sg := jp.take(p.i); sg != nil {
			if sg.bad {
				return false
			}
			*spans = append(*spans, sg.spans...)
			sg.spans = nil // done with: the scan's now
			p.i = sg.next
			if sg.closed {
				return true
			}
			continue
		}
		s, ok := p.jaegerSpan()
		*spans = append(*spans, s)
		if !ok {
			return false
		}
		if p.lit(',') {
			continue
		}
		return p.lit(']')
	}
}
