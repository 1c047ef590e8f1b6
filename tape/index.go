package tape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// rec is the index's record of one message: 48 bytes, no pointers.
type rec struct {
	off     int64 // byte offset of the message in the file
	ts      int64 // unix nanoseconds; noTime when unknown
	n       uint32
	line    uint32
	method  uint32 // into Index.methods; 0 is ""
	partner int32  // the paired message, or -1
	batch   uint32
	conn    uint32 // into Index.conns
	server  uint16 // into Index.servers
	kind    Kind
	dir     uint8
	flags   uint16
}

// noTime marks a message without a readable _meta.ts (0 is a real time:
// the Unix epoch).
const noTime = math.MinInt64

const (
	flagError     = 1 << iota // a response with "error"
	flagCancelled             // a request cancelled by notifications/cancelled
	flagLate                  // a response that came after its request was cancelled
	flagOrphan                // a response that matched no request
	flagBadUTF8
	flagTorn        // the last line, cut off
	flagReordered   // a response recorded before its request
	flagDuplicate   // a request whose id was already pending
	flagToolError   // a response whose result says isError: a tool's failure
	flagInjected    // an interception rule acted on it (_meta.injected)
	flagDropped     // and stopped it: it never reached its peer
	flagEarly       // a server/discover request sent before initialize on its connection
	flagNegotiation // a probe (flagEarly) and its answer that rejected it: not a failure
	flagAltMeta     // its record metadata is its AltMetaKey member
)

var dirCodes = [...]Dir{DirUnknown, DirSend, DirRecv, DirLifecycle}

func dirCode(d []byte) uint8 {
	// By length and one letter first: this runs for every message.
	switch {
	case len(d) == 6 && d[1] == 's' && string(d) == `"send"`:
		return 1
	case len(d) == 6 && d[1] == 'r' && string(d) == `"recv"`:
		return 2
	case len(d) == 11 && string(d) == `"lifecycle"`:
		return 3
	}
	return 0
}

// connKey names a connection: one server's session between two
// $transport/start records, or one HTTP session id.
type connKey struct {
	server  uint16
	starts  int
	session string
}

// Index is a compact view of a whole tape: a few dozen bytes a message, with
// bodies read from the file on demand. Requests are paired with their
// responses by (server, direction, connection, id), so the client's and the
// server's id spaces never collide. An Index grows as its file does (Extend)
// and is safe for concurrent use: one goroutine may extend it while others read.
type Index struct {
	mu       sync.RWMutex
	src      io.ReaderAt
	cfg      readerConfig
	size     int64 // bytes indexed so far
	line     int   // lines indexed so far
	recs     recTable
	warnings warningList
	torn     bool // the last line was indexed without its newline

	methods  interner[uint32] // 0 is ""
	servers  interner[uint16]
	connIdx  map[connKey]uint32
	lastConn lastConn
	// the server's and the method's numbers of the message added last
	prevServer uint16
	prevMethod uint32
	starts     []int           // $transport/start records seen per server (by its number)
	inited     map[uint32]bool // connections an initialize request was sent on

	// digests of the messages by seq, when cfg.digester is set (see
	// WithDigests); none for those the serial loop indexed.
	digests Digests

	pairs   pairer
	lastTS  int64 // the last known timestamp, for the jump check (0: none yet)
	batches batchNumbers
	cls     classifier

	rpcErrors, toolErrors int // responses that failed, so far
	startFailures         int // $transport/start records that say the server did not start
	injected              int // messages an interception rule acted on
}

// NewIndex returns an empty index of the tape readable through src; call
// Extend to index its bytes.
func NewIndex(src io.ReaderAt, opts ...ReaderOption) *Index {
	x := &Index{
		src:     src,
		methods: newInterner[uint32](1<<31, ""),
		servers: newInterner[uint16](1 << 16),
		connIdx: map[connKey]uint32{},
		inited:  map[uint32]bool{},
		pairs:   newPairer(),
	}
	for _, o := range opts {
		o(&x.cfg)
	}
	return x
}

// OpenIndex indexes the tape file at path. The returned index keeps the file
// open to read bodies; Close it when done.
func OpenIndex(path string, opts ...ReaderOption) (*Index, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	x := NewIndex(f, opts...)
	if err := x.Extend(st.Size(), nil); err != nil {
		f.Close()
		return nil, err
	}
	return x, nil
}

// Close closes the index's source if it is an io.Closer.
func (x *Index) Close() error {
	if c, ok := x.src.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// Size returns how many bytes of the source are indexed.
func (x *Index) Size() int64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.size
}

// Extend indexes the source's bytes from Size() up to size. When the source
// ends without a newline, the last line is indexed (a torn line is a warning)
// only if final is nil or returns true: a tape still being recorded passes a
// func returning false, and its unfinished line waits for the next call.
// progress, if not nil, is called with the bytes indexed so far.
func (x *Index) Extend(size int64, final func() bool, progress ...func(int64)) error {
	x.mu.RLock()
	start, torn := x.size, x.torn
	x.mu.RUnlock()
	if torn {
		return fmt.Errorf("extend tape: its last line was indexed as torn; reopen the tape to read further")
	}
	if size <= start {
		return nil
	}
	if f, ok := x.src.(*os.File); ok && size-start >= mapThreshold {
		if err := x.extendMapped(f, start, size, final, progress); !errors.Is(err, errNoMap) {
			return err
		}
	}
	lr := newLineReader(io.NewSectionReader(x.src, start, size-start), x.cfg.buffer)
	lr.off = start
	_, err := x.consume(lr, final, progress)
	return err
}

const (
	mapThreshold = 4 << 20  // below this, reading beats mapping
	mapWindow    = 64 << 20 // mapped at a time: bounds the resident set
)

var errNoMap = errors.New("cannot map the tape")

// afterMap, when not nil, is called right after the tape package maps a
// file (a test's hook: it cuts the file there, between the mapping and
// the reading).
var afterMap func()

// shrank names the file a reading of a mapping found cut shorter
// (mmap.ErrShrank); another error is returned as it is.
func shrank(f *os.File, err error) error {
	if errors.Is(err, mmap.ErrShrank) {
		return fmt.Errorf("read tape %s: %w", f.Name(), err)
	}
	return err
}

// extendMapped indexes [start, size) of f through read-only mappings of a
// window at a time: no copy through read(2), and no more than a window (or
// the longest line) resident at once. A window of more than two segments
// is classified by workers, one a core (consumeParallel).
func (x *Index) extendMapped(f *os.File, start, size int64, final func() bool, progress []func(int64)) error {
	page := int64(os.Getpagesize())
	pos := start
	var segs []*segment // consumeParallel's, reused window after window: their slices grown already
	for pos < size {
		base := pos &^ (page - 1)
		length := min(size-base, mapWindow)
		for {
			data, unmap, err := mmap.Map(f, base, length, mmap.Sequential)
			if err != nil {
				if pos == start {
					return errNoMap
				}
				return fmt.Errorf("map tape at byte %d: %w", base, err)
			}
			if afterMap != nil {
				afterMap()
			}
			chunk := data[pos-base:]
			last := base+length == size
			cut := len(chunk)
			if !last {
				if err := mmap.Guard(func() error { cut = bytes.LastIndexByte(chunk, '\n') + 1; return nil }); err != nil {
					_ = unmap()
					return shrank(f, err)
				}
				if cut == 0 { // one line longer than the window: map more
					_ = unmap()
					length = min(size-base, 2*length)
					continue
				}
			}
			var done bool
			if w := indexWorkers(); w > 1 && cut > 2*segmentBytes {
				done, err = x.consumeParallel(chunk[:cut], pos, w, final, progress, &segs)
			} else {
				lr := &lineReader{buf: chunk[:cut], end: cut, eof: true, off: pos}
				err = mmap.Guard(func() (err error) { done, err = x.consume(lr, final, progress); return err })
			}
			_ = unmap()
			if err != nil || done {
				return shrank(f, err)
			}
			pos += int64(cut)
			break
		}
	}
	return nil
}

// consume indexes every line lr yields, taking the lock a few megabytes at a
// time so readers keep up. It reports whether it stopped early, at an
// unfinished last line.
func (x *Index) consume(lr *lineReader, final func() bool, progress []func(int64)) (stopped bool, err error) {
	const batchBytes = 8 << 20
	x.mu.Lock()
	defer func() { x.mu.Unlock() }()
	lr.line = x.line
	chunk := int64(0)
	for {
		line, off, nl, err := lr.next()
		if errors.Is(err, io.EOF) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("read tape at byte %d: %w", lr.off, err)
		}
		if !nl && final != nil && !final() {
			return true, nil // an unfinished line: wait for the rest
		}
		torn, err := x.addLine(line, off, lr.line, nl)
		if err != nil {
			return false, err
		}
		x.size, x.line, x.torn = lr.off, lr.line, torn
		if chunk += int64(len(line)) + 1; chunk > batchBytes {
			chunk = 0
			x.mu.Unlock()
			for _, p := range progress {
				p(lr.off)
			}
			x.mu.Lock()
		}
	}
}

// addLine indexes one line's messages and reports whether it was torn.
func (x *Index) addLine(line []byte, off int64, lineNo int, nl bool) (torn bool, err error) {
	msgs := x.cls.classify(line)
	return x.addClassified(line, msgs, len(msgs) > 0 && isArray(line, msgs), off, lineNo, nl)
}

// addClassified indexes one line's messages msgs, as the classifier found
// them (array: the line is a JSON array, isArray), and reports whether the
// line was torn.
func (x *Index) addClassified(line []byte, msgs []msgInfo, array bool, off int64, lineNo int, nl bool) (torn bool, err error) {
	if len(msgs) == 0 {
		return false, nil
	}
	ws, err := lineProblems(msgs, line, lineNo, nl, x.cfg.strict)
	if err != nil {
		return false, err
	}
	x.warnings.add(ws...)
	batch := uint32(x.batches.ofArray(array, line, msgs))
	for i := range msgs {
		x.add(line, &msgs[i], off, lineNo, batch, nl)
	}
	return !nl && msgs[0].kind == KindInvalid, nil
}

func (x *Index) add(line []byte, m *msgInfo, off int64, lineNo int, batch uint32, nl bool) {
	seq := int32(x.recs.len())
	r := rec{
		off:     off + int64(m.start),
		n:       uint32(m.end - m.start),
		line:    uint32(lineNo),
		partner: -1,
		ts:      noTime,
		batch:   batch,
		kind:    m.kind,
	}
	if m.pre {
		r.dir = m.dirc
	} else {
		r.dir = dirCode(m.dir.in(line))
	}
	if !m.when.IsZero() {
		r.ts = m.when.UnixNano()
		x.checkTime(r.ts, lineNo)
	}
	if m.isError {
		r.flags |= flagError
	}
	if m.toolError {
		r.flags |= flagToolError
	}
	if m.injected {
		r.flags |= flagInjected
		x.injected++
	}
	if m.dropped {
		r.flags |= flagDropped
	}
	if m.kind == KindResponse {
		switch {
		case m.isError:
			x.rpcErrors++
		case m.toolError:
			x.toolErrors++
		}
	}
	if m.badUTF8 {
		r.flags |= flagBadUTF8
	}
	if m.altMeta {
		r.flags |= flagAltMeta
	}
	if m.kind == KindInvalid && !nl {
		r.flags |= flagTorn
	}
	utf8OK := m.kind != KindInvalid && !m.badUTF8 // the line was checked whole (an invalid line's flag is never set)
	// The same raw text as the message before decodes the same: its
	// number, without reading the line again (sameServer, sameMethod are
	// only set when the message before was the one added before this).
	if m.sameServer {
		r.server = x.prevServer
	} else {
		r.server = x.servers.of(stringBytes(line, m.server, utf8OK))
	}
	if m.sameMethod {
		r.method = x.prevMethod
	} else {
		r.method = x.methods.of(stringBytes(line, m.method, utf8OK))
	}
	x.prevServer, x.prevMethod = r.server, r.method
	if m.kind == KindLifecycle && string(m.method.in(line)) == `"`+MethodStart+`"` {
		for int(r.server) >= len(x.starts) {
			x.starts = append(x.starts, 0)
		}
		x.starts[r.server]++
		if startFailed(line[m.start:m.end]) {
			x.startFailures++
		}
	}
	r.conn = x.conn(r.server, stringBytes(line, m.session, utf8OK))
	if m.kind == KindRequest {
		x.noteHandshake(&r, m)
	}
	x.recs.push(r)
	x.pairs.add(&x.recs, &x.warnings, seq, m, line, lineNo)
	if rp := x.recs.at(int(seq)); m.kind == KindResponse && rp.partner >= 0 && x.recs.at(int(rp.partner)).flags&flagEarly != 0 {
		x.noteNegotiation(int(rp.partner), int(seq), line[m.start:m.end])
	}
}

// noteHandshake marks request r, just classified as m, when it is a
// server/discover sent before initialize on its connection (flagEarly),
// and notes an initialize. An initialize on a session-less HTTP POST
// (_meta.exchange) opens a session of its own, a connection apart: it
// leaves the session-less connection's later probes early.
func (x *Index) noteHandshake(r *rec, m *msgInfo) {
	switch x.methods.names[r.method] {
	case MethodDiscover:
		if !x.inited[r.conn] {
			r.flags |= flagEarly
		}
	case "initialize":
		if !m.exchange.ok() {
			x.inited[r.conn] = true
		}
	}
}

// noteNegotiation marks early server/discover req and its answer resp
// (raw) as version negotiation when the answer rejected it as a server of
// an earlier era would; such an answer is not counted as a failure.
func (x *Index) noteNegotiation(req, resp int, raw []byte) {
	rr := x.recs.at(resp)
	if rr.flags&flagNegotiation != 0 || !Negotiation(MethodDiscover, true, raw, 0) {
		return
	}
	rr.flags |= flagNegotiation
	x.recs.at(req).flags |= flagNegotiation
	if rr.flags&flagError != 0 {
		x.rpcErrors--
	}
}

// stringBytes returns the text of the JSON string at s in line: its bytes
// when they need no decoding, else decoded. utf8OK says line is known to
// be valid UTF-8 (and so is every string of it): not checked again.
func stringBytes(line []byte, s span, utf8OK bool) []byte {
	if !s.ok() || line[s.start] != '"' {
		return nil
	}
	raw := line[s.start+1 : s.end-1]
	if bytes.IndexByte(raw, '\\') >= 0 || !utf8OK && !utf8.Valid(raw) {
		return []byte(stringValue(line, s))
	}
	return raw
}

// interner numbers strings in order of appearance. Past its limit every new
// string shares the last number, named "(more)": a hostile tape with a
// million server names must not wrap the index's small fields.
type interner[T ~uint16 | ~uint32] struct {
	names   []string
	index   map[string]T
	limit   int
	last    T    // the number of the name looked up last, when hasLast
	hasLast bool // (never the "(more)" a name past the limit shares)
}

func newInterner[T ~uint16 | ~uint32](limit int, first ...string) interner[T] {
	in := interner[T]{index: map[string]T{}, limit: limit}
	for _, s := range first {
		in.of([]byte(s))
	}
	return in
}

func (in *interner[T]) of(b []byte) T {
	if in.hasLast && string(b) == in.names[in.last] { // the name before again: no hashing
		return in.last
	}
	if i, ok := in.index[string(b)]; ok { // no allocation for the lookup
		in.last, in.hasLast = i, in.names[i] == string(b)
		return i
	}
	if len(in.names) == in.limit-1 {
		in.names = append(in.names, "(more)")
	}
	if len(in.names) >= in.limit {
		return T(in.limit - 1)
	}
	s := string(b)
	i := T(len(in.names))
	in.names = append(in.names, s)
	in.index[s] = i
	return i
}

func (x *Index) conn(server uint16, session []byte) uint32 {
	starts := 0 // a slice, not a map: this runs for every message
	if int(server) < len(x.starts) {
		starts = x.starts[server]
	}
	if c := &x.lastConn; c.ok && c.server == server && c.starts == starts && string(c.session) == string(session) {
		return c.conn // the connection of the message before: no hashing
	}
	k := connKey{server, starts, string(session)} // no allocation for the lookup
	i, ok := x.connIdx[k]
	if !ok {
		i = uint32(len(x.connIdx))
		x.connIdx[k] = i
	}
	x.lastConn = lastConn{ok: true, server: server, starts: starts, session: append(x.lastConn.session[:0], session...), conn: i}
	return i
}

// lastConn is the connection of the last message indexed, looked up again
// for the next one without hashing.
type lastConn struct {
	ok      bool
	server  uint16
	starts  int
	session []byte
	conn    uint32
}

// Len returns the number of messages indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.recs.len()
}

// Entry returns message i without its body (Raw and ID are empty; see Message).
func (x *Index) Entry(i int) Entry {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.entry(i)
}

// EntryAt is Entry with what the index knows of where message i's bytes
// are: its size in bytes from e.Offset (the length Message's Raw has), and
// altMeta, whether its record metadata is its AltMetaKey member (else the
// last "_meta", when it has one: see RecordMeta).
func (x *Index) EntryAt(i int) (e Entry, size int, altMeta bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r := x.recs.at(i)
	return x.entry(i), int(r.n), r.flags&flagAltMeta != 0
}

func (x *Index) entry(i int) Entry {
	r := x.recs.at(i)
	e := Entry{
		Seq:         i,
		Line:        int(r.line),
		Offset:      r.off,
		Kind:        r.kind,
		Dir:         dirCodes[r.dir],
		Server:      x.servers.names[r.server],
		Method:      x.methods.names[r.method],
		Error:       r.flags&flagError != 0,
		ToolError:   r.flags&flagToolError != 0,
		Injected:    r.flags&flagInjected != 0,
		Dropped:     r.flags&flagDropped != 0,
		Negotiation: r.flags&flagNegotiation != 0,
		Batch:       int(r.batch),
	}
	if r.kind == KindResponse {
		e.Method = "" // the method is the request's; see Pair
	}
	if r.ts != noTime {
		e.Time = time.Unix(0, r.ts).UTC()
	}
	return e
}

// seqsOf returns the sequence numbers of the messages of kind k, in order,
// read under one lock: cheaper than an Entry a message when few are of k.
func (x *Index) seqsOf(k Kind) []int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	var out []int
	for i := range x.recs.len() {
		if x.recs.at(i).kind == k {
			out = append(out, i)
		}
	}
	return out
}

// Message returns message i whole: its entry with Raw and ID, read from the source.
func (x *Index) Message(i int) (Entry, error) {
	x.mu.RLock()
	e := x.entry(i)
	n := x.recs.at(int(i)).n
	x.mu.RUnlock()
	raw := make([]byte, n)
	if k, err := x.src.ReadAt(raw, e.Offset); err != nil && !(errors.Is(err, io.EOF) && k == int(n)) {
		return e, fmt.Errorf("read message %d (line %d): %w", i, e.Line, err)
	}
	var c classifier
	msgs := c.classify(raw)
	if len(msgs) == 1 {
		full := msgs[0].entry(raw)
		e.Raw, e.ID, e.Problem = raw, full.ID, full.Problem
		if e.Kind == KindInvalid && e.Problem == "" {
			e.Problem = full.Problem
		}
	} else {
		e.Raw = raw
	}
	return e, nil
}

// Warnings returns the problems met while indexing.
func (x *Index) Warnings() []Warning {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.warnings.list()
}

// WarningCount returns how many warnings indexing met, including those
// beyond the first MaxWarnings that are not kept.
func (x *Index) WarningCount() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.warnings.n
}

// Servers returns the servers named on the tape, in order of appearance
// ("" stands for lines without _meta.server).
func (x *Index) Servers() []string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return append([]string(nil), x.servers.names...)
}

// ServersOverflow reports whether the tape names more servers than the
// index tells apart: Servers then ends with "(more)", which stands for
// every name past the first limit ones.
func (x *Index) ServersOverflow() (limit int, over bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, named := x.servers.index["(more)"] // a server of that name
	return x.servers.limit - 1, len(x.servers.names) == x.servers.limit && !named
}

// MemoryPerMessage estimates the index's bytes a message: its record plus
// its share of the tables and maps.
func (x *Index) MemoryPerMessage() float64 {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.recs.len() == 0 {
		return 0
	}
	const recSize = 48
	total := x.recs.capacity() * recSize
	for _, s := range x.methods.names {
		total += len(s) + 16 + 40
	}
	total += (len(x.pairs.pending) + len(x.pairs.cancelled) + len(x.pairs.orphans)) * 64
	total += len(x.pairs.chains) * 16
	return float64(total) / float64(x.recs.len())
}

// recTable stores records in fixed-size chunks: growing it never copies,
// and it never holds more than one chunk of slack.
type recTable struct {
	chunks [][]rec
	n      int
}

const chunkBits = 15

func (t *recTable) len() int { return t.n }

func (t *recTable) at(i int) *rec { return &t.chunks[i>>chunkBits][i&(1<<chunkBits-1)] }

func (t *recTable) push(r rec) {
	if t.n>>chunkBits == len(t.chunks) {
		t.chunks = append(t.chunks, make([]rec, 0, 1<<chunkBits))
	}
	c := &t.chunks[t.n>>chunkBits]
	*c = append(*c, r)
	t.n++
}

func (t *recTable) capacity() int { return len(t.chunks) << chunkBits }

// Clock checks: a tape's timestamps that go back, or leap ahead, say its
// recorder's clock moved (or the tape was edited); replay times from them.
const (
	maxBack = time.Second // more than concurrent writers reorder
	maxLeap = 24 * time.Hour
)

// checkTime warns when timestamp ts (unix nanoseconds, of line lineNo)
// goes back or leaps ahead from the last one.
func (x *Index) checkTime(ts int64, lineNo int) {
	last := x.lastTS
	x.lastTS = ts
	if last == 0 {
		return
	}
	switch d := time.Duration(ts - last); {
	case d < -maxBack:
		x.warnings.add(Warning{lineNo, fmt.Errorf("line %d: _meta.ts goes back %v from the line before: the recorder's clock moved, or lines were reordered", lineNo, -d)})
	case d > maxLeap:
		x.warnings.add(Warning{lineNo, fmt.Errorf("line %d: _meta.ts leaps %v ahead of the line before: a timed replay waits at most --max-wait for it", lineNo, d.Round(time.Second))})
	}
}
