package tape

// Calls read from a mapped tape: the exporters' path (export json, otlp).
// ReadCalls streams the file and copies each message without its _meta;
// ReadCallsMapped reads the index's messages in place from a mapping of the
// file, checks each one's JSON in the same pass that finds its members,
// and can leave the bytes where they are (CallOptions.Alias) and skip the
// answers a caller does not read (CallOptions.Lean).

import (
	"bytes"
	"errors"
	"os"
	"runtime"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/mmap"

	"github.com/tidwall/gjson"
)

// Mapping is a tape file mapped read-only whole: ReadCallsMapped reads
// its messages in place, and calls read with CallOptions.Alias point into
// it until Close.
type Mapping struct {
	data  []byte
	unmap func() error
	file  *os.File
}

// MapTape maps the file f read-only; an error when it cannot be mapped
// (empty, not a regular file, or a system without mappings): read it
// with ReadCalls then.
func MapTape(f *os.File) (*Mapping, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() == 0 {
		return nil, errors.New("map the tape: expected a non-empty regular file")
	}
	data, unmap, err := mmap.Map(f, 0, fi.Size(), mmap.Sequential)
	if err != nil {
		return nil, err
	}
	if afterMap != nil {
		afterMap()
	}
	return &Mapping{data: data, unmap: unmap, file: f}, nil
}

// Guard runs fn, which reads the mapping's bytes on this goroutine (the
// calls' bytes read with Alias or Lean), under mmap.Guard: the file cut
// shorter meanwhile is an error naming it and wrapping mmap.ErrShrank,
// not a crash.
func (m *Mapping) Guard(fn func() error) error {
	return shrank(m.file, mmap.Guard(fn))
}

// Bytes is the mapped file, valid until Close (read it under Guard or
// mmap.Guard: a page the file no longer has faults).
func (m *Mapping) Bytes() []byte { return m.data }

// Close unmaps the tape: the bytes of calls read with Alias are gone.
func (m *Mapping) Close() error {
	if m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.data = nil, nil
	return err
}

// CallOptions say what ReadCallsMapped gives of each call's bytes.
type CallOptions struct {
	// Alias leaves a message that is valid JSON where it is in the
	// mapping: RequestRaw (ResponseRaw) is its bytes up to its _meta
	// member and RequestTail (ResponseTail) those after it, StripMeta's
	// result being the two joined (Call.RequestBytes). A message that is
	// not valid JSON is copied as ReadCalls copies it, its tail nil.
	Alias bool
	// Lean is for a caller that reads no message's body: an answer's
	// bytes are read only where a call needs them without its body: an
	// initialize's (its protocol version), a JSON-RPC error's or a
	// rejected probe's (ErrorCode, ErrorMessage), and those of servers the
	// index does not tell apart (their name). Another call's ResponseRaw
	// is nil though it has a Response; its End comes from the index (the
	// same instant, in UTC). The messages are left in the mapping as with
	// Alias, but not checked: a tail says nothing of their JSON.
	Lean bool
}

// RequestBytes returns the request without the tape's _meta: RequestRaw,
// or RequestRaw and RequestTail joined when the call was read with Alias.
func (c *Call) RequestBytes() []byte { return joinTail(c.RequestRaw, c.RequestTail) }

// ResponseBytes is RequestBytes for the response (nil without one).
func (c *Call) ResponseBytes() []byte { return joinTail(c.ResponseRaw, c.ResponseTail) }

func joinTail(head, tail []byte) []byte {
	if tail == nil {
		return head
	}
	return append(append(make([]byte, 0, len(head)+len(tail)), head...), tail...)
}

// ReadCallsMapped is ReadCalls (the same calls in the same order, with the
// same fields, but for what o changes) reading the messages from m, a
// mapping of the tape x indexes. The messages are read by ranges on up to
// GOMAXPROCS goroutines, and paired and given to fn in order on the
// caller's.
func ReadCallsMapped(m *Mapping, x *Index, server string, o CallOptions, fn func(Call) error) error {
	return m.Guard(func() error { return readCallsMapped(m, x, server, o, fn) })
}

// readCallsMapped is ReadCallsMapped on the caller's goroutine, under its
// Guard; a worker's fault comes back in its chunk.
func readCallsMapped(m *Mapping, x *Index, server string, o CallOptions, fn func(Call) error) error {
	a := newCallAssembler(x, fn)
	give := func(c *readChunk) (bool, error) {
		if c.err != nil {
			return false, c.err
		}
		for i := range c.items {
			it := &c.items[i]
			var err error
			if it.request {
				err = a.requestKnown(it.seq, it.call, it.partner, it.cancelled, it.challenged)
			} else {
				err = a.responseKnown(it.seq, it.ans, it.partner)
			}
			if err != nil {
				return false, err
			}
		}
		return !c.cut, nil
	}
	n := x.Len()
	workers := min(runtime.GOMAXPROCS(0), 4)
	if workers < 2 || n < 2*readChunkLen {
		r := rangeReader{m: m, x: x, server: server, o: o}
		var c readChunk
		for lo := 0; lo < n; lo += readChunkLen {
			r.read(lo, min(lo+readChunkLen, n), &c)
			more, err := give(&c)
			if err != nil {
				return err
			}
			if !more {
				break
			}
		}
		return a.flush()
	}
	type job struct {
		lo, hi int
		out    chan *readChunk
	}
	jobs := make(chan job)
	futures := make(chan chan *readChunk, 2*workers)
	free := make(chan *readChunk, 3*workers)
	quit := make(chan struct{})
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rangeReader{m: m, x: x, server: server, o: o}
			for j := range jobs {
				var c *readChunk
				select {
				case c = <-free:
				default:
					c = new(readChunk)
				}
				c.err = mmap.Guard(func() error { r.read(j.lo, j.hi, c); return nil })
				j.out <- c // buffered: never blocks
			}
		}()
	}
	go func() {
		defer close(futures)
		defer close(jobs)
		for lo := 0; lo < n; lo += readChunkLen {
			out := make(chan *readChunk, 1)
			select {
			case futures <- out:
			case <-quit:
				return
			}
			select {
			case jobs <- job{lo, min(lo+readChunkLen, n), out}:
			case <-quit:
				return
			}
		}
	}()
	defer func() {
		close(quit)
		for range futures { // let the dispatcher end
		}
		wg.Wait()
	}()
	for out := range futures {
		c := <-out
		more, err := give(c)
		if err != nil {
			return err
		}
		if !more {
			break
		}
		if !o.Alias && !o.Lean {
			clear(c.items) // let the calls' copied bytes go (in place, they are the mapping's)
		}
		select {
		case free <- c:
		default:
		}
	}
	return a.flush()
}

// readChunkLen is how many messages a goroutine of ReadCallsMapped reads
// at once.
const readChunkLen = 1024

// readChunk is what a range of messages gives: its requests' calls and
// its answers, in order; cut says the tape ended within the range.
type readChunk struct {
	items []readItem
	cut   bool
	err   error // reading the range met a fault (mmap.ErrShrank)
}

type readItem struct {
	seq     int
	request bool
	call    Call   // a request's
	ans     answer // a response's, with its index facts
	// The index's pairing: the partner (Pair.Partner), and for a request
	// whether it was cancelled (Pair.Cancelled) and its partner is a
	// lifecycle record (an authorization challenge).
	partner               int
	cancelled, challenged bool
}

// rangeReader reads ranges of a mapped tape's messages for ReadCallsMapped.
type rangeReader struct {
	m      *Mapping
	x      *Index
	server string
	o      CallOptions
	cls    classifier
	f      fastMsg
	facts  []msgFacts // of the range being read
}

// read fills c with the requests and responses among messages [lo, hi).
func (r *rangeReader) read(lo, hi int, c *readChunk) {
	c.items, c.cut = c.items[:0], false
	x, o, server, f := r.x, r.o, r.server, &r.f
	data := r.m.data
	valid := o.Alias && !o.Lean  // a tail then says the message is valid JSON
	inPlace := o.Alias || o.Lean // the bytes left in the mapping
	r.facts = x.callFacts(lo, hi, r.facts[:0])
	for seq := lo; seq < hi; seq++ {
		mf := &r.facts[seq-lo]
		e, size := mf.e, mf.size
		if e.Kind != KindRequest && e.Kind != KindResponse {
			continue
		}
		if server != "" && e.Server != server && e.Server != moreServers {
			continue
		}
		if e.Offset+int64(size) > int64(len(data)) {
			c.cut = true // the tape is shorter than its index: it was cut since
			return
		}
		if o.Lean && e.Kind == KindResponse && e.Server != moreServers && !mf.needsAnswer() {
			c.items = append(c.items, readItem{seq: seq, ans: mf.answer(answer{end: e.Time}), partner: mf.pair.Partner})
			continue
		}
		raw := data[e.Offset : e.Offset+int64(size)]
		fast := f.scan(&r.cls, raw, e.Kind == KindRequest, valid)
		var ci callInfo
		if fast {
			ci = f.ci
			r.cls.meta(raw, &ci.msgInfo, ci.meta)
		} else {
			ci = r.cls.callMessage(raw)
		}
		if server != "" || e.Kind == KindRequest { // an answer gives its call no server or direction
			if e.Server = knownValue(raw, ci.server, e.Server); server != "" && e.Server != server {
				continue
			}
			e.Dir = Dir(knownValue(raw, ci.dir, string(e.Dir)))
		}
		e.Time = ci.when
		if e.Kind == KindRequest {
			c.items = append(c.items, readItem{seq: seq, request: true, call: newCall(seq, e, raw, &ci),
				partner: mf.pair.Partner, cancelled: mf.pair.Cancelled, challenged: mf.pair.Partner >= 0 && mf.partnerKind == KindLifecycle})
			call := &c.items[len(c.items)-1].call
			switch {
			case fast && inPlace:
				call.RequestRaw, call.RequestTail = ci.parts(raw)
			default:
				call.RequestRaw = ci.stripped(raw)
			}
			if fast {
				call.Target, call.TraceParent = f.target(e.Method, raw), f.traceParent(raw)
			} else {
				call.Target, call.TraceParent = Target(e.Method, call.RequestRaw), traceParent(call.RequestRaw)
			}
			continue
		}
		ans := answer{end: e.Time}
		switch {
		case fast && inPlace:
			ans.raw, ans.tail = ci.parts(raw)
			ans.full = raw // gjson finds its "error" as in the stripped message
		default:
			ans.raw = ci.stripped(raw)
			ans.full = ans.raw
		}
		c.items = append(c.items, readItem{seq: seq, ans: mf.answer(ans), partner: mf.pair.Partner})
	}
}

// knownValue is stringValue(b, s), and known itself rather than a copy
// when that is what b holds there (the index's name of a message's server
// or direction, which its _meta nearly always repeats).
func knownValue(b []byte, s span, known string) string {
	if s.ok() && b[s.start] == '"' {
		if raw := b[s.start+1 : s.end-1]; string(raw) == known && bytes.IndexByte(raw, '\\') < 0 && utf8.Valid(raw) {
			return known
		}
	}
	return stringValue(b, s)
}

// parts is StripMeta(raw) as two slices of raw: the bytes before the cut
// and those after it (an empty tail when there is no _meta). Their
// capacity ends with them: appending to either copies.
func (ci *callInfo) parts(raw []byte) (head, tail []byte) {
	if !ci.hasCut {
		return raw[:len(raw):len(raw)], raw[len(raw):]
	}
	rest := raw[ci.cut.end:]
	if ci.first {
		if j := skipWS(rest, 0); j < len(rest) && rest[j] == ',' {
			rest = rest[j+1:]
		}
	}
	return raw[:ci.cut.start:ci.cut.start], rest[:len(rest):len(rest)]
}

// traceParent is a request's params._meta.traceparent, read from its
// stripped bytes b as ReadCalls reads it.
func traceParent(b []byte) string {
	if containsTraceparent(b) {
		if tp := gjson.GetBytes(b, "params._meta.traceparent"); tp.Type == gjson.String {
			return tp.String()
		}
	}
	return ""
}

// fastMsg is what one pass over a message that is valid JSON finds: the
// members callMessage finds (its _meta not yet read), and for a request
// the first "params" member's first "name", "uri", "ref" and "_meta"
// (Target's and the traceparent's). A request whose member names (at the
// top, or in params) hold an escape, or with two params or two
// params._meta, is left to callMessage and gjson, whose choices scan
// cannot be sure to make.
type fastMsg struct {
	ci                            callInfo
	params, name, uri, ref, pmeta span
}

// scan reads raw's members in one pass; false when raw is not an object
// it reads as callMessage does, or holds what only callMessage and gjson
// read. With valid (jsonscan), it also checks that raw is valid JSON (as
// jsonscan.Valid), false when it is not; without, its structure is
// checked as the index checked it (c's skipValue and members), its
// strings and literals not.
func (f *fastMsg) scan(c *classifier, raw []byte, request, valid bool) bool {
	*f = fastMsg{}
	c.oddLiteral = false
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return false
	}
	prevEnd, isFirst := i+1, true
	var meta, alt, metaCut, altCut span
	var metaFirst, altFirst bool
	i = skipWS(raw, i+1)
	end := -1
	if i < len(raw) && raw[i] == '}' {
		end = i + 1
	}
	paramsOK := true
	inParams := func(k []byte, s span) {
		if bytes.IndexByte(k, '\\') >= 0 {
			paramsOK = false
		}
		switch string(k) {
		case "name":
			f.name = first(f.name, s)
		case "uri":
			f.uri = first(f.uri, s)
		case "ref":
			f.ref = first(f.ref, s)
		case "_meta":
			if f.pmeta.ok() {
				paramsOK = false // gjson reads on past a _meta without it: its reading, not ours
			}
			f.pmeta = s
		}
	}
	for end < 0 {
		var key []byte
		var vs, ve int
		if valid {
			if i >= len(raw) || raw[i] != '"' {
				return false
			}
			ke := jsonscan.StringEnd(raw, i)
			if ke < 0 {
				return false
			}
			key = raw[i+1 : ke-1]
			j := skipWS(raw, ke)
			if j >= len(raw) || raw[j] != ':' {
				return false
			}
			vs = skipWS(raw, j+1)
		} else {
			var err error
			if key, vs, err = memberName(raw, i); err != nil {
				return false
			}
		}
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		switch {
		case request && !f.params.ok() && string(key) == "params" && vs < len(raw) && raw[vs] == '{':
			if valid {
				ve = jsonscan.ObjectEnd(raw, vs, 2, func(k, v []byte) {
					at := cap(raw) - cap(v)
					inParams(k, span{at, at + len(v)})
				})
			} else {
				var err error
				if ve, err = c.members(raw, vs, inParams); err != nil {
					ve = -1
				}
			}
			if !paramsOK {
				return false
			}
		case valid:
			ve = jsonscan.ValueEnd(raw, vs, 1)
		default:
			var err error
			if ve, err = c.skipValue(raw, vs); err != nil {
				ve = -1
			}
		}
		if ve < 0 {
			return false
		}
		v := span{vs, ve}
		switch string(key) {
		case "id":
			f.ci.id = v
		case "_meta":
			meta, metaCut, metaFirst = v, span{prevEnd, v.end}, isFirst
		case AltMetaKey:
			alt, altCut, altFirst = v, span{prevEnd, v.end}, isFirst
		case "params":
			if request && f.params.ok() {
				return false // gjson reads on past a params without the traceparent
			}
			f.params = v
		}
		isFirst = false
		prevEnd = ve
		i = skipWS(raw, ve)
		switch {
		case i >= len(raw):
			return false
		case raw[i] == '}':
			end = i + 1
		case raw[i] == ',':
			i = skipWS(raw, i+1)
		default:
			return false
		}
	}
	if valid && skipWS(raw, end) != len(raw) || c.oddLiteral {
		// not one JSON value; or a literal that members and skipValue
		// (which callMessage would have used on params) read apart
		return false
	}
	if f.pmeta.ok() && bytes.IndexByte(f.pmeta.in(raw), '\\') >= 0 {
		return false // an escaped name in params._meta: gjson's reading, not ours
	}
	switch {
	case alt.ok():
		f.ci.cut, f.ci.first, f.ci.hasCut = altCut, altFirst, true
		meta = alt
	case meta.ok():
		f.ci.cut, f.ci.first, f.ci.hasCut = metaCut, metaFirst, true
	}
	if meta.ok() {
		f.ci.meta = meta
	}
	return true
}

func first(old, s span) span {
	if old.ok() {
		return old
	}
	return s
}

// target is Target(method, StripMeta(raw)) from what scan found.
func (f *fastMsg) target(method string, raw []byte) string {
	if !f.params.ok() {
		return Target(method, raw) // the members are the params: the _meta is not a target's
	}
	var c classifier
	switch TargetKind(method) {
	case TargetTool, TargetPrompt:
		return stringValue(raw, f.name)
	case TargetResource:
		return stringValue(raw, f.uri)
	case TargetRef:
		for _, k := range []string{"name", "uri"} {
			if v := member(&c, raw, f.ref, k); v.ok() {
				return stringValue(raw, v)
			}
		}
	}
	return ""
}

// traceParent is traceParent(StripMeta(raw)): the first params' first
// _meta holds the traceparent if the message has one.
func (f *fastMsg) traceParent(raw []byte) string {
	if !f.pmeta.ok() || !containsTraceparent(f.pmeta.in(raw)) {
		return ""
	}
	if tp := gjson.GetBytes(raw, "params._meta.traceparent"); tp.Type == gjson.String {
		return tp.String()
	}
	return ""
}

// answer is a response's part of a call: its bytes as the call gives
// them, the bytes its error is read from, and its time; and what the
// index says of it (completeAnswer's Failure, Negotiation, Pair.Late).
type answer struct {
	raw, tail, full []byte
	end             time.Time
	failure         Failure
	negotiation     bool
	late            bool
}

// answer is a with response f's index facts.
func (f *msgFacts) answer(a answer) answer {
	a.failure, a.negotiation, a.late = f.failure, f.e.Negotiation, f.pair.Late
	return a
}

// needsAnswer reports whether response f's bytes make a field of its call
// (see CallOptions.Lean).
func (f *msgFacts) needsAnswer() bool {
	p := &f.pair
	return p.Partner >= 0 && (p.Method == "initialize" || f.failure == RPCError || f.e.Negotiation)
}

// callAssembler pairs requests with their answers in ReadCalls' order: a
// call goes to fn when its answer is read, the unanswered ones at the end.
type callAssembler struct {
	x     *Index
	fn    func(Call) error
	open  map[int]int32  // request seq → its call awaiting its response, in calls
	calls []Call         // the calls awaiting their responses, and free slots
	free  []int32        // slots of calls free for the next request
	early map[int]answer // response seq → an answer recorded before its request
	order []int          // requests in recorded order, to flush the unanswered ones
}

func newCallAssembler(x *Index, fn func(Call) error) *callAssembler {
	return &callAssembler{x: x, fn: fn, open: map[int]int32{}, early: map[int]answer{}}
}

// newCall is request seq's call before its bytes: e is its entry with
// Server, Dir and Time read from its _meta.
func newCall(seq int, e Entry, raw []byte, m *callInfo) Call {
	c := Call{Request: seq, Response: -1, Server: e.Server, Dir: e.Dir, Method: e.Method, Start: e.Time, Line: e.Line}
	if m.id.ok() {
		c.ID = ID(m.id.in(raw))
	}
	if meta := m.meta.in(raw); bytes.Contains(meta, []byte(`"http"`)) { // the HTTP dialect's _meta, else no need to parse it
		if hm := httpMetaOf(meta); hm.HTTP {
			c.Session, c.HTTP = hm.Session, true
		}
	}
	return c
}

// kindAt is message i's kind (Entry(i).Kind without the rest of the entry).
func (x *Index) kindAt(i int) Kind {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.recs.at(i).kind
}

// request takes request seq's call c, reading its pairing from the index.
func (a *callAssembler) request(seq int, c Call) error {
	p := a.x.Pair(seq)
	return a.requestKnown(seq, c, p.Partner, p.Cancelled, p.Partner >= 0 && a.x.kindAt(p.Partner) == KindLifecycle)
}

// requestKnown is request with the index's pairing of seq given: its
// partner, whether it was cancelled, and whether its partner is a
// lifecycle record.
func (a *callAssembler) requestKnown(seq int, c Call, partner int, cancelled, challenged bool) error {
	switch {
	case partner < 0 && cancelled:
		c.Status = "cancelled"
	case partner < 0:
		c.Status = "pending"
	case challenged:
		c.Status = "challenged"
	}
	if partner >= 0 && partner < seq {
		// Answered before it was recorded (Reordered): the answer came
		// first and waits in early.
		if r, ok := a.early[partner]; ok {
			delete(a.early, partner)
			return a.fn(completeAnswer(c, r, partner))
		}
	}
	var slot int32
	if n := len(a.free); n > 0 {
		slot, a.free = a.free[n-1], a.free[:n-1]
		a.calls[slot] = c
	} else {
		slot = int32(len(a.calls))
		a.calls = append(a.calls, c)
	}
	a.open[seq] = slot
	a.order = append(a.order, seq)
	return nil
}

// response takes response seq's answer r, reading its facts and pairing
// from the index.
func (a *callAssembler) response(seq int, r answer) error {
	x := a.x
	r.failure, r.negotiation, r.late = x.Failure(seq), x.Negotiation(seq), x.Pair(seq).Late
	return a.responseKnown(seq, r, x.Pair(seq).Partner)
}

// responseKnown is response with r's facts and seq's partner given.
func (a *callAssembler) responseKnown(seq int, r answer, partner int) error {
	if partner < 0 {
		return nil // an orphan: no call to complete
	}
	slot, ok := a.open[partner]
	if !ok {
		a.early[seq] = r // its request comes later on the tape (Reordered)
		return nil
	}
	delete(a.open, partner)
	c := &a.calls[slot]
	err := a.fn(completeAnswer(*c, r, seq))
	*c = Call{} // let its bytes go
	a.free = append(a.free, slot)
	return err
}

// flush gives fn the calls never answered, in recorded order.
func (a *callAssembler) flush() error {
	for _, seq := range a.order {
		if slot, ok := a.open[seq]; ok {
			if err := a.fn(a.calls[slot]); err != nil {
				return err
			}
		}
	}
	return nil
}
