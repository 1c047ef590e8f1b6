package importer

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// The export on every core. Its array is cut into segments, one a worker
// (o.lineWorkers()), each starting where a new element most likely
// starts: the export is pretty-printed, and a comma, a newline and the
// first element's indentation before a '{' is, in valid JSON, a comma
// outside any string (no string holds a newline) before an object; in
// the Inspector's export (and any consistently indented one), an element
// of the array. Each worker scans its segment's elements (validating
// them, and reading each into its entry), up to the first element at or
// past the next segment's start. A guess is only taken once the segment
// before has ended exactly where it starts; if not (the comma was a
// nested one), that segment is scanned again from where the one before
// ended, so what is read is what one scan from the start reads. Then the
// records are encoded by the workers, a run of entries at a time, and
// written in the document's order.

const (
	inspectorSegMin   = 4 << 20 // the least bytes a segment of the scan is worth a worker for
	inspectorChunk    = 1 << 20 // message bytes a worker encodes at once
	inspectorInFlight = 8       // encoded runs in the making or waiting to be written
)

// inspectorEstimateAt is how many entries a segment's scan reads before
// it makes room for all of them, as their bytes say.
const inspectorEstimateAt = 256

// errInspectorSyntax: the document is not valid JSON (the caller says
// where, through encoding/json).
var errInspectorSyntax = errors.New("inspector: invalid JSON")

// inspectorSeg is what scanning elements from start (the index of an
// element) found.
type inspectorSeg struct {
	start      int
	next       int  // after the scan: the index of the next element (limit reached), or of the closing ']'
	closed     bool // the scan ended at the array's ']'
	bad        bool // not valid JSON
	entries    []inspectorMsg
	answers    []inspectorMsg // seq: the index in entries of its request
	server     string         // the first server an element names
	allObjects bool           // each element an object or null
	elems      int            // the elements scanned
	errAt      int            // the element of err, counted from start
	err        error          // the first element that is not good: an *Error (its path from the element on), or errNotEntry
	errKind    string         // errNotEntry's element, what it is
}

// inspectorScanSeg scans t's elements from start up to the first one at
// or past limit, or the array's end.
func inspectorScanSeg(t []byte, start, limit int, findServer bool) *inspectorSeg {
	sg := &inspectorSeg{start: start, allObjects: true, errAt: -1}
	var sc inspectorScan
	var peek tape.Peeker
	i, n := start, 0
	defer func() { sg.elems = n }()
	for {
		if i >= len(t) {
			sg.bad = true
			return sg
		}
		var j int
		if t[i] == '{' {
			j = sc.object(t, i)
			if j >= 0 && sg.err == nil {
				e, a, hasAnswer, server, err := inspectorEntryOf(&sc, &peek, findServer && sg.server == "")
				if err != nil {
					sg.err, sg.errAt = err, n
				} else {
					if len(sg.entries) == inspectorEstimateAt {
						// Room for the segment's entries at once, as many
						// as the first ones' bytes say (not grown by
						// doubling, each growth a copy).
						want := int(float64(limit-start) / float64(i-start) * inspectorEstimateAt * 1.1)
						sg.entries = slices.Grow(sg.entries, want-len(sg.entries))
					}
					sg.entries = append(sg.entries, e)
					if hasAnswer {
						a.seq = n
						sg.answers = append(sg.answers, a)
					}
					if sg.server == "" {
						sg.server = server
					}
				}
			}
		} else {
			j = jsonscan.ValueEnd(t, i, 1)
			sg.allObjects = sg.allObjects && t[i] == 'n'
			if j >= 0 && sg.err == nil {
				sg.err, sg.errAt, sg.errKind = errNotEntry, n, kindOf(t[i:j])
			}
		}
		if j < 0 {
			sg.bad = true
			return sg
		}
		n++
		i = jsonscan.SkipSpace(t, j)
		switch {
		case i < len(t) && t[i] == ',':
			if i = jsonscan.SkipSpace(t, i+1); i < len(t) && t[i] == ']' {
				sg.bad = true // a trailing comma
				return sg
			}
			if i >= limit {
				sg.next = i
				return sg
			}
		case i < len(t) && t[i] == ']':
			sg.next, sg.closed = i, true
			return sg
		default:
			sg.bad = true
			return sg
		}
	}
}

// errNotEntry marks an element that is not an object (said once it is
// known whether every element is an object or null).
var errNotEntry = errors.New("not an entry")

// inspectorGuesses returns up to n-1 indices after first in t that most
// likely start elements of the array, increasing, roughly evenly apart.
func inspectorGuesses(t []byte, first, n int) []int {
	ws := t[1:first]
	if n <= 1 || first >= len(t) || t[first] != '{' || bytes.IndexByte(ws, '\n') < 0 {
		return nil
	}
	sep := append(append([]byte{','}, ws...), '{')
	return guessStarts(t, first, n, sep, len(sep)-1)
}

// inspectorRead scans t, the export's array (trimmed), and returns its
// entries, the answers folded into them (seq the entry's index) and the
// server the first element naming one names ("" for none, or when
// o.Server names it). The error is errInspectorSyntax when t is not
// valid JSON, else an *Error naming the first element that is not good.
func inspectorRead(t []byte, o Options) (entries, answers []inspectorMsg, server string, err error) {
	first := jsonscan.SkipSpace(t, 1)
	if first < len(t) && t[first] == ']' {
		if first != len(t)-1 {
			return nil, nil, "", errInspectorSyntax
		}
		return nil, nil, o.Server, nil
	}
	segMin := inspectorSegMin
	if o.chunk > 0 {
		segMin = o.chunk
	}
	workers := o.lineWorkers()
	guesses := inspectorGuesses(t, first, min(workers, max(1, len(t)/segMin)))
	limits := append(guesses, len(t)+1)
	findServer := o.Server == ""
	atStage("scan")
	// The segments after the first, each from its guess, on workers; the
	// first on this goroutine.
	// A mapped document cut shorter meanwhile: each goroutine's fault is
	// ErrShrank in faults, not a crash (this one's too, so that the
	// workers are waited for before the document is unmapped).
	segs := make([]*inspectorSeg, len(limits))
	faults := make([]error, len(limits))
	var wg sync.WaitGroup
	for s := 1; s < len(limits); s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			faults[s] = mmap.Guard(func() error {
				segs[s] = inspectorScanSeg(t, guesses[s-1], limits[s], false)
				return nil
			})
		}()
	}
	faults[0] = mmap.Guard(func() error {
		segs[0] = inspectorScanSeg(t, first, limits[0], findServer)
		return nil
	})
	wg.Wait()
	for _, err := range faults {
		if err != nil {
			return nil, nil, "", err
		}
	}
	// Only the first segment looks for the server's name (the initialize
	// answer is at the start): the others' messages are looked at only if
	// it names none.
	named := len(segs[0].entries)

	// Chain the segments, scanning again one whose guess was wrong.
	pos, base := first, 0 // base: the elements before the segment
	allObjects := true
	var parts [][]inspectorMsg // the segments' entries
	var bad *inspectorSeg      // the segment of the first element that is not good
	badAt := 0
	server = o.Server
	for s := range segs {
		sg := segs[s]
		segs[s] = nil
		if sg.start != pos {
			sg = inspectorScanSeg(t, pos, limits[s], false)
		}
		if sg.bad || sg.closed && sg.next != len(t)-1 {
			return nil, nil, "", errInspectorSyntax
		}
		allObjects = allObjects && sg.allObjects
		if bad == nil && sg.err != nil {
			bad, badAt = sg, base+sg.errAt
		}
		if bad == nil {
			if server == "" {
				server = sg.server
			}
			for _, a := range sg.answers {
				a.seq += base
				answers = append(answers, a)
			}
			parts = append(parts, sg.entries)
		}
		base += sg.elems
		if sg.closed {
			break
		}
		pos = sg.next
	}
	if bad == nil {
		// The segments' entries, in one slice made to their number.
		if len(parts) == 1 {
			entries = parts[0]
		} else {
			n := 0
			for _, p := range parts {
				n += len(p)
			}
			entries = make([]inspectorMsg, 0, n)
			for _, p := range parts {
				entries = append(entries, p...)
			}
		}
		if server == "" && findServer {
			server = inspectorServer(entries, answers, named)
		}
		return entries, answers, server, nil
	}
	if bad.err == errNotEntry {
		found := bad.errKind
		if allObjects {
			found = kindOf(nil) // null, which encoding/json decoded as no entry
		}
		return nil, nil, "", errorf(formatInspector, fmt.Sprintf("$[%d]", badAt), "expected a message entry (an object), found %s", found)
	}
	var ie *Error
	if errors.As(bad.err, &ie) {
		ie.Path = fmt.Sprintf("$[%d]", badAt) + ie.Path
	}
	return nil, nil, "", bad.err
}

// inspectorRun is a run of the records, entries [j0, j1) with the answers
// [k0, k1) placed among them, and its encoding.
type inspectorRun struct {
	j0, j1, k0, k1 int
	buf            []byte
	msgs           int   // records encoded in buf
	err            error // the error encoding the record after them
	done           chan struct{}
}

// inspectorRuns cuts the records into runs of about size message bytes.
func inspectorRuns(entries, answers []inspectorMsg, size int) []*inspectorRun {
	var runs []*inspectorRun
	r := &inspectorRun{}
	bytes, k := 0, 0
	for j, e := range entries {
		for ; k < len(answers) && answers[k].slot == j; k++ {
			bytes += len(answers[k].raw)
		}
		bytes += len(e.raw)
		if bytes >= size {
			r.j1, r.k1 = j+1, k
			runs = append(runs, r)
			r = &inspectorRun{j0: j + 1, k0: k}
			bytes = 0
		}
	}
	r.j1, r.k1 = len(entries), len(answers)
	if r.j0 < r.j1 || r.k0 < r.k1 || len(runs) == 0 {
		runs = append(runs, r)
	}
	return runs
}

// encode encodes r's records (each answer before the entry of its slot,
// the answers placed after the last entry at the end) into r.buf.
func (r *inspectorRun) encode(e *recEncoder, entries, answers []inspectorMsg, server string) {
	r.buf, r.msgs, r.err = r.buf[:0], 0, nil
	put := func(m inspectorMsg) bool {
		meta := tape.Meta{Dir: m.dir, Server: server, Time: m.at}
		var rc rec
		if m.plain {
			rc, r.buf = e.plain(r.buf, m.raw, meta)
		} else {
			rc, r.buf = e.message(r.buf, m.raw, meta)
		}
		if rc.err != nil {
			r.err = rc.err
			return false
		}
		r.msgs++
		return true
	}
	k := r.k0
	for j := r.j0; j < r.j1; j++ {
		for ; k < r.k1 && answers[k].slot == j; k++ {
			if !put(answers[k]) {
				return
			}
		}
		if !put(entries[j]) {
			return
		}
	}
	for ; k < r.k1; k++ {
		if !put(answers[k]) {
			return
		}
	}
}

// inspectorWrite encodes the records on the workers and writes them in
// order through out.
func inspectorWrite(out *out, entries, answers []inspectorMsg, server string, o Options) error {
	size := inspectorChunk
	if o.chunk > 0 {
		size = o.chunk
	}
	runs := inspectorRuns(entries, answers, size)
	write := func(r *inspectorRun) error {
		if len(r.buf) > 0 {
			if err := out.w.WriteLines(r.buf); err != nil {
				return err
			}
		}
		out.res.Messages += r.msgs
		return r.err
	}
	out.servers[server] = true
	workers := o.lineWorkers()
	if workers <= 1 || len(runs) == 1 {
		e := newRecEncoder()
		buf := runBufs.get()
		for _, r := range runs {
			r.buf = buf
			r.encode(e, entries, answers, server)
			if err := write(r); err != nil {
				return err
			}
			buf, r.buf = r.buf[:0], nil
		}
		runBufs.put(buf)
		return nil
	}
	bufs := make(chan []byte, inspectorInFlight)
	for range inspectorInFlight {
		bufs <- runBufs.get()
	}
	defer func() {
		// The buffers back in bufs (every one, once every run was
		// written) serve the next import.
		for {
			select {
			case b := <-bufs:
				runBufs.put(b)
			default:
				return
			}
		}
	}()
	for _, r := range runs {
		r.done = make(chan struct{})
	}
	work := make(chan *inspectorRun, inspectorInFlight)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait()
	defer close(quit)
	wg.Add(1)
	go func() { // hands out runs, each with a buffer: at most inspectorInFlight at a time
		defer wg.Done()
		defer close(work)
		for _, r := range runs {
			select {
			case r.buf = <-bufs:
				if r.buf == nil {
					r.buf = make([]byte, 0, size+size/4)
				}
			case <-quit:
				return
			}
			work <- r
		}
	}()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			e := newRecEncoder()
			for r := range work {
				// A mapped document cut shorter meanwhile: the run's
				// error, not a crash.
				if err := mmap.Guard(func() error { r.encode(e, entries, answers, server); return nil }); err != nil {
					r.err = err
				}
				close(r.done)
			}
		}()
	}
	for _, r := range runs {
		<-r.done // handed out once the runs before it free a buffer
		if err := write(r); err != nil {
			return err
		}
		bufs <- r.buf[:0]
		r.buf = nil
	}
	return nil
}

// runBufs keeps the encoded runs' buffers between imports (fresh memory
// is zeroed and faulted in).
var runBufs bufPool

// bufPool is a free list of up to inspectorInFlight buffers.
type bufPool struct {
	mu   sync.Mutex
	free [][]byte
}

func (p *bufPool) get() []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.free)
	if n == 0 {
		return nil
	}
	b := p.free[n-1]
	p.free = p.free[:n-1]
	return b[:0]
}

func (p *bufPool) put(b []byte) {
	if b == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.free) < inspectorInFlight {
		p.free = append(p.free, b[:0])
	}
}

// inspectorServer is the server the first of entries from the one at
// from (and the answers folded into them, each after its request's
// entry, answers in the order of seq) names, "" for none.
func inspectorServer(entries, answers []inspectorMsg, from int) string {
	k := 0
	for j := from; j < len(entries); j++ {
		if name := serverInfoName(entries[j].raw); name != "" {
			return name
		}
		for ; k < len(answers) && answers[k].seq <= j; k++ {
			if answers[k].seq < j {
				continue
			}
			if name := serverInfoName(answers[k].raw); name != "" {
				return name
			}
		}
	}
	return ""
}
