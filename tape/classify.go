package tape

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// msgInfo is what the classifier learns of one message without decoding it:
// spans into the line and a few flags. It allocates nothing.
type msgInfo struct {
	start, end int // the message's bytes within the line
	kind       Kind
	isError    bool
	badUTF8    bool
	noVersion  bool     // no "jsonrpc" member, or not "2.0"
	version    span     // the "jsonrpc" value
	notes      []string // what is odd but kept: a float id, a _meta without dir
	dir        span
	server     span
	ts         span
	session    span
	replyTo    span      // _meta.inReplyTo: the request an id-null answer replies to (set by the HTTP recorder)
	batch      span      // _meta.batch: the batch a message travelled in, when the writer split one into lines
	exchange   span      // _meta.exchange: the session-less HTTP POST it belongs to (set by the HTTP recorder)
	when       time.Time // ts parsed; zero when absent or unreadable
	method     span
	id         span
	params     span // the value of its params member, when it has exactly one
	cancels    span // params.requestId of notifications/cancelled
	inputReq   bool // result.resultType == "input_required"
	toolError  bool // result.isError == true
	injected   bool // _meta.injected: an interception rule acted on it
	dropped    bool // and the message went no further (it never reached its peer)
	inputResp  bool // params.inputResponses present (a retry of an input_required call)
	altMeta    bool // the record metadata is the AltMetaKey member
	problem    string
	pid        uint64 // the hash of the id it pairs by (prehash), when hashed
	hashed     bool
	null       bool // and that id is null
	// What a classifying worker noted for the index's one goroutine, so
	// that it reads the line no more (pre: noted): dirc is the direction's
	// code (dirCode), sameServer and sameMethod say the server's and the
	// method's raw text are the message's before in the same segment.
	pre                    bool
	dirc                   uint8
	sameServer, sameMethod bool
}

// batchNumbers numbers the batches of a tape from 1, in order: a line
// holding a JSON array is one batch, and so are consecutive lines whose
// _meta.batch is the same (the Writer records a batch a message a line).
type batchNumbers struct {
	n    int
	last []byte // the previous line's _meta.batch value, when it had one
}

// of returns the batch number of a line's messages msgs, or 0.
func (b *batchNumbers) of(line []byte, msgs []msgInfo) int {
	return b.ofArray(isArray(line, msgs), line, msgs)
}

// isArray reports whether line, holding msgs (at least one), is a JSON
// array: a batch whole.
func isArray(line []byte, msgs []msgInfo) bool {
	return len(msgs) > 1 || line[skipWS(line, 0)] == '['
}

// ofArray is of, told whether the line is an array (isArray): a
// classifying worker found it, and the line is not read for it again.
func (b *batchNumbers) ofArray(array bool, line []byte, msgs []msgInfo) int {
	if array {
		b.n++
		b.last = b.last[:0]
		return b.n
	}
	v := msgs[0].batch
	if !v.ok() {
		b.last = b.last[:0]
		return 0
	}
	if len(b.last) == 0 || !bytes.Equal(b.last, v.in(line)) {
		b.n++
		b.last = append(b.last[:0], v.in(line)...)
	}
	return b.n
}

// span is a byte range of a line; for strings it includes the quotes.
type span struct{ start, end int }

func (s span) ok() bool { return s.end > s.start }

func (s span) in(b []byte) []byte { return b[s.start:s.end] }

// classifier parses lines of a tape. Its stack is reused between lines, so
// deep nesting costs no recursion and no allocation after the first time.
type classifier struct {
	stack []byte
	msgs  []msgInfo
	wire  bool // messages off the wire, with no tape _meta to read (Peeker)
	// oddLiteral: skipValue met a literal holding '"', '{' or '[', which
	// members and a bracket scan of the same object read apart.
	oddLiteral bool
	ts         tsCache
}

// Classify parses one tape line (without its line ending) into its messages:
// one for an object, several for a batch (a JSON array of messages). A line
// that is not a JSON-RPC message gives one entry of KindInvalid whose Problem
// says what was expected and what was found. A blank line gives no entries.
// The entries' Raw fields share the line's bytes.
func Classify(line []byte) []Entry {
	var c classifier
	msgs := c.classify(line)
	out := make([]Entry, 0, len(msgs))
	for i := range msgs {
		out = append(out, msgs[i].entry(line))
	}
	if len(out) > 1 {
		for i := range out {
			out[i].Batch = 1
		}
	}
	return out
}

func (m *msgInfo) entry(line []byte) Entry {
	e := Entry{
		Raw:       line[m.start:m.end],
		Kind:      m.kind,
		Dir:       Dir(stringValue(line, m.dir)),
		Server:    stringValue(line, m.server),
		Method:    stringValue(line, m.method),
		Error:     m.isError,
		ToolError: m.toolError,
		Injected:  m.injected,
		Dropped:   m.dropped,
		Problem:   m.problem,
	}
	if m.id.ok() {
		e.ID = ID(m.id.in(line))
	}
	e.Time = m.when
	return e
}

// classify returns the messages of one line; the slice is reused by the next call.
func (c *classifier) classify(b []byte) []msgInfo {
	c.msgs = c.appendLine(c.msgs[:0], b, false)
	return c.msgs
}

// appendLine appends the messages of one line b to dst, as classify finds
// them, and returns it: each is scanned in place, in dst, not copied there
// (a msgInfo is a few hundred bytes, and a tape has millions). ascii says
// the caller knows b holds no byte above 0x7f, so it is not checked again.
func (c *classifier) appendLine(dst []msgInfo, b []byte, ascii bool) []msgInfo {
	n0 := len(dst)
	i := skipWS(b, 0)
	if i == len(b) {
		return dst
	}
	invalid := func(problem string) []msgInfo {
		return append(dst[:n0], msgInfo{start: 0, end: len(b), kind: KindInvalid, problem: problem})
	}
	bad := !ascii && !asciiOrValidUTF8(b)
	switch b[i] {
	case '{':
		dst = append(dst, msgInfo{})
		m := &dst[n0]
		end, err := c.object(b, i, m)
		if err != nil {
			dir, server, ts, when := m.dir, m.server, m.ts, m.when // known when only the meaning was wrong
			out := invalid(err.Error())
			out[n0].dir, out[n0].server, out[n0].ts, out[n0].when = dir, server, ts, when
			return out
		}
		if j := skipWS(b, end); j != len(b) {
			return invalid(fmt.Sprintf("expected end of line after the message at column %d, found %s", j+1, found(b, j)))
		}
		m.badUTF8 = bad
	case '[':
		i = skipWS(b, i+1)
		if i < len(b) && b[i] == ']' {
			return invalid("expected messages in the batch, found an empty array")
		}
		for {
			if i >= len(b) || b[i] != '{' {
				return invalid(fmt.Sprintf("expected a JSON-RPC object in the batch at column %d, found %s", i+1, found(b, i)))
			}
			dst = append(dst, msgInfo{})
			m := &dst[len(dst)-1]
			end, err := c.object(b, i, m)
			if err != nil {
				return invalid(err.Error())
			}
			m.badUTF8 = bad
			i = skipWS(b, end)
			if i < len(b) && b[i] == ',' {
				i = skipWS(b, i+1)
				continue
			}
			if i < len(b) && b[i] == ']' {
				if j := skipWS(b, i+1); j != len(b) {
					return invalid(fmt.Sprintf("expected end of line after the batch at column %d, found %s", j+1, found(b, j)))
				}
				break
			}
			return invalid(fmt.Sprintf("expected ',' or ']' in the batch at column %d, found %s", i+1, found(b, i)))
		}
	default:
		return invalid(fmt.Sprintf("expected a JSON-RPC object or batch at column %d, found %s", i+1, found(b, i)))
	}
	return dst
}

// object scans the JSON-RPC object starting at b[i] == '{'. Its members are
// walked once (topMembers): params and result, the objects that hold a
// message's bulk, are read in the same walk instead of skipped, then walked
// again.
//
// m is zero on entry; it is filled in place. On an error, what m holds of
// _meta is what was read of it before the fault.
func (c *classifier) object(b []byte, i int, m *msgInfo) (int, error) {
	m.start = i
	var t topMembers
	end, err := c.topMembers(b, i, &t, m)
	if err != nil {
		return 0, err
	}
	meta, params, result := t.meta, t.params, t.result
	hasResult, hasError := t.hasResult, t.hasError
	pre := &t.metaRead
	if t.alt.ok() { // the message has a _meta of its own (see AltMetaKey)
		meta, pre = t.alt, &t.altRead
		m.altMeta = true
	}
	m.end = end
	if t.nParams == 1 {
		m.params = params
	}
	m.noVersion = string(m.version.in(b)) != `"2.0"`
	if !c.wire {
		c.metaFrom(b, m, meta, pre)
	}
	if m.method.ok() && b[m.method.start] != '"' {
		return 0, fmt.Errorf("expected \"method\" to be a string, found %s", found(b, m.method.start))
	}
	if m.id.ok() {
		if err := idProblem(b, m.id, m.method.ok()); err != nil {
			return 0, err
		}
		if id := m.id.in(b); id[0] != '"' && notInteger(id) {
			m.notes = append(m.notes, fmt.Sprintf("id %s is not an integer: MCP ids are strings or integers", id))
		}
	}
	method := []byte(nil)
	if m.method.ok() {
		method = m.method.in(b)
	}
	switch {
	case m.method.ok() && (len(method) > 1 && method[1] == '$' || bytes.Equal(m.dir.in(b), []byte(`"lifecycle"`))):
		m.kind = KindLifecycle
	case m.method.ok() && m.id.ok():
		m.kind = KindRequest
	case m.method.ok():
		m.kind = KindNotification
	case m.id.ok() && (hasResult || hasError):
		m.kind = KindResponse
		m.isError = hasError
		if hasResult && hasError {
			m.notes = append(m.notes, `expected "result" or "error" in a response, found both; read as an error`)
		}
	case hasResult || hasError:
		return 0, fmt.Errorf("expected \"id\" in a response, found none")
	default:
		return 0, fmt.Errorf("expected a JSON-RPC message (\"method\", or \"id\" with \"result\" or \"error\"), found neither")
	}
	if params.ok() && b[params.start] == '{' {
		if string(method) == `"notifications/cancelled"` {
			m.cancels = t.requestID
		}
		m.inputResp = t.inputResponses
	}
	if m.kind == KindResponse && result.ok() && b[result.start] == '{' {
		m.inputReq = string(t.resultType.in(b)) == `"input_required"`
		m.toolError = string(t.isError.in(b)) == "true"
	}
	return end, nil
}

// topMembers is what object's walk of a message's members found beyond
// msgInfo's own spans: the spans of params, result, _meta and its
// alternative, and the few members of params and result the index reads
// (those of the last params and result, as a second walk of them would
// find them).
type topMembers struct {
	params, result, meta, alt span
	hasResult, hasError       bool
	nParams                   int      // params members met
	requestID                 span     // params.requestId
	inputResponses            bool     // params.inputResponses present
	resultType, isError       span     // result.resultType, result.isError (the last of each)
	metaRead, altRead         metaRead // what walking _meta and AltMetaKey found (the last of each)
}

// metaRead is what a walk of a _meta object's members finds, as meta reads
// them: topMembers walks the message's _meta this way instead of skipping
// it, so that meta does not walk it a second time.
type metaRead struct {
	ok                       bool // walked, and it ended where skipValue ends
	dir, server, ts, session span
	replyTo, batch, exchange span
	injected, dropped        bool
	notes                    []string
}

// member notes one member of _meta, key and its value v.
func (r *metaRead) member(b, key []byte, v span) {
	switch string(key) {
	case "inReplyTo":
		r.replyTo = v
	case "batch":
		r.batch = v
	case "exchange":
		r.exchange = v
	case MetaInjected:
		r.injected = true
		r.dropped = bytes.Contains(v.in(b), []byte(`"dropped":true`))
	}
	if b[v.start] != '"' {
		switch k := string(key); k {
		case "dir", "server", "ts", "session":
			r.notes = append(r.notes, fmt.Sprintf("expected _meta.%s to be a string, found %s", k, found(b, v.start)))
		}
		return
	}
	switch string(key) {
	case "dir":
		r.dir = v
	case "server":
		r.server = v
	case "ts":
		r.ts = v
	case "session":
		r.session = v
	}
}

// walkMeta walks the _meta object (or AltMetaKey's) at b[i] into r, and
// returns its end; r.ok false and end 0 when the walk and skipValue could
// end apart (a malformed member, an odd literal), for skipValue to decide.
func (c *classifier) walkMeta(b []byte, i int, r *metaRead) int {
	*r = metaRead{}
	if i >= len(b) || b[i] != '{' {
		return 0
	}
	c.oddLiteral = false
	end, err := c.members(b, i, func(key []byte, v span) { r.member(b, key, v) })
	odd := c.oddLiteral
	c.oddLiteral = false
	if err != nil || odd {
		*r = metaRead{}
		return 0
	}
	r.ok = true
	return end
}

// topMembers walks the members of the message object at b[i] == '{' as
// members does, noting them in t and m. The value of params or result, when
// an object, is walked as members walks it, instead of skipped then walked
// again; where that walk and skipValue could end apart (a malformed
// member, a literal holding a quote or an opening bracket), the value is
// skipped as skipValue skips it and walked again, as before.
func (c *classifier) topMembers(b []byte, i int, t *topMembers, m *msgInfo) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		var key []byte
		var err error
		if i < len(b) && b[i] == '"' { // "key":value, as in members
			if e := shortString(b, i); e > 0 && e+1 < len(b) && b[e] == ':' && b[e+1] > ' ' {
				key, i = b[i+1:e-1], e+1
			}
		}
		if key == nil {
			if key, i, err = memberName(b, i); err != nil {
				return 0, err
			}
		}
		var vend int
		switch string(key) {
		case "params":
			t.requestID, t.inputResponses = span{}, false
			vend, err = c.inner(b, i, key, t)
			t.params = span{i, vend}
			t.nParams++
		case "result":
			t.resultType, t.isError = span{}, span{}
			vend, err = c.inner(b, i, key, t)
			t.hasResult, t.result = true, span{i, vend}
		case "_meta", AltMetaKey:
			r := &t.metaRead
			if string(key) == AltMetaKey {
				r = &t.altRead
			}
			if !c.wire {
				vend = c.walkMeta(b, i, r)
			}
			if vend == 0 {
				if vend, err = c.skipValue(b, i); err != nil {
					return 0, fmt.Errorf("member %q: %w", key, err)
				}
			}
			if r == &t.metaRead {
				t.meta = span{i, vend}
			} else {
				t.alt = span{i, vend}
			}
		default:
			if i < len(b) && b[i] == '"' { // the commonest value, a short string, with no call
				vend = shortString(b, i)
			}
			if vend == 0 {
				if vend, err = c.skipValue(b, i); err != nil {
					return 0, fmt.Errorf("member %q: %w", key, err)
				}
			}
			v := span{i, vend}
			switch string(key) {
			case "jsonrpc":
				m.version = v
			case "id":
				m.id = v
			case "method":
				m.method = v
			case "error":
				t.hasError = true
			}
		}
		if err != nil {
			return 0, err
		}
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, fmt.Errorf("expected ',' or '}' after member %q at column %d, found %s", key, i+1, found(b, i))
	}
}

// inner returns the end of the value of params or result (key) at b[i],
// noting the members of it the index reads in t.
func (c *classifier) inner(b []byte, i int, key []byte, t *topMembers) (int, error) {
	note := func(k []byte, v span) {
		if key[0] == 'p' {
			switch string(k) {
			case "requestId":
				t.requestID = v
			case "inputResponses":
				t.inputResponses = true
			}
			return
		}
		switch string(k) {
		case "resultType":
			t.resultType = v
		case "isError":
			t.isError = v
		}
	}
	if i < len(b) && b[i] == '{' {
		c.oddLiteral = false
		if end, err := c.members(b, i, note); err == nil && !c.oddLiteral {
			return end, nil
		}
		c.oddLiteral = false
		if key[0] == 'p' {
			t.requestID, t.inputResponses = span{}, false
		} else {
			t.resultType, t.isError = span{}, span{}
		}
	}
	end, err := c.skipValue(b, i)
	if err != nil {
		return 0, fmt.Errorf("member %q: %w", key, err)
	}
	if b[i] == '{' { // walked again, as before: what it finds up to a malformed member counts
		_, _ = c.members(b, i, note)
		c.oddLiteral = false
	}
	return end, nil
}

// meta reads the _meta object's dir, server, ts and session, noting what is
// missing or odd.
func (c *classifier) meta(b []byte, m *msgInfo, meta span) { c.metaFrom(b, m, meta, nil) }

// metaFrom is meta, with what a walk of the object at meta found when pre
// says it was walked already (pre.ok).
func (c *classifier) metaFrom(b []byte, m *msgInfo, meta span, pre *metaRead) {
	if !meta.ok() {
		m.notes = append(m.notes, "no _meta: direction, server and time unknown")
		return
	}
	if b[meta.start] != '{' {
		m.notes = append(m.notes, fmt.Sprintf("expected _meta to be an object, found %s", found(b, meta.start)))
		return
	}
	var r metaRead
	if pre != nil && pre.ok {
		r = *pre // walked already, by topMembers
	} else {
		_, _ = c.members(b, meta.start, func(key []byte, v span) { r.member(b, key, v) })
	}
	m.dir, m.server, m.ts, m.session = r.dir, r.server, r.ts, r.session
	m.replyTo, m.batch, m.exchange = r.replyTo, r.batch, r.exchange
	if r.injected {
		m.injected, m.dropped = true, r.dropped
	}
	m.notes = append(m.notes, r.notes...)
	switch string(m.dir.in(b)) { // no allocation for the comparison
	case `"send"`, `"recv"`, `"lifecycle"`:
	case "":
		if !hasNote(m.notes, "_meta.dir") {
			m.notes = append(m.notes, "no _meta.dir: direction unknown")
		}
	default:
		m.notes = append(m.notes, fmt.Sprintf(`expected _meta.dir "send", "recv" or "lifecycle", found %s`, m.dir.in(b)))
	}
	if !m.server.ok() && !hasNote(m.notes, "_meta.server") {
		m.notes = append(m.notes, "no _meta.server")
	}
	if m.ts.ok() {
		var ok bool
		if m.when, ok = c.ts.parse(m.ts.in(b)); !ok {
			m.notes = append(m.notes, fmt.Sprintf("expected _meta.ts in RFC 3339, found %s", m.ts.in(b)))
		} else if u := m.when.Unix(); u < minUnix || u >= maxUnix {
			m.notes = append(m.notes, fmt.Sprintf("_meta.ts %s is outside the years %d to %d: time unknown", m.ts.in(b), minYear, maxYear))
			m.when = time.Time{}
		}
	} else if !hasNote(m.notes, "_meta.ts") {
		m.notes = append(m.notes, "no _meta.ts: time unknown")
	}
}

func hasNote(notes []string, about string) bool {
	for _, n := range notes {
		if strings.Contains(n, about) {
			return true
		}
	}
	return false
}

// stringValue decodes the JSON string at s, or "" if s is empty or not a string.
func stringValue(b []byte, s span) string {
	if !s.ok() || b[s.start] != '"' {
		return ""
	}
	raw := b[s.start+1 : s.end-1]
	if bytes.IndexByte(raw, '\\') < 0 {
		if !utf8.Valid(raw) { // as encoding/json reads it
			return validUTF8(raw)
		}
		return string(raw)
	}
	var out string
	if json.Unmarshal(s.in(b), &out) != nil {
		return string(raw)
	}
	return out
}

// jsonString reports whether b, a quoted string the classifier skipped,
// is valid JSON: no raw control characters, valid escapes. An id echoed
// back must be. The common id (plain characters) is decided in one scan.
func jsonString(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '\\' {
			return json.Valid(b)
		}
	}
	return true
}

// notInteger reports whether the number literal b holds a point or an
// exponent (bytes.ContainsAny(b, ".eE"), without its call and set).
func notInteger(b []byte) bool {
	for _, c := range b {
		if c == '.' || c == 'e' || c == 'E' {
			return true
		}
	}
	return false
}

// jsonNumber reports whether b is a number as JSON writes one: no leading
// zeros, no leading +, digits after a point and in an exponent. An id
// echoed back must be valid JSON ("id":000 is not).
func jsonNumber(b []byte) bool {
	i := 0
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || b[i] < '0' || b[i] > '9' {
			return false
		}
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
	}
	return i == len(b)
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func validUTF8(b []byte) string {
	out := make([]rune, 0, len(b))
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		out = append(out, r) // RuneError for an invalid byte
		b = b[n:]
	}
	return string(out)
}

// idProblem says what is wrong with a message's id: a JSON-RPC id is a
// string, a number, or null in a response. The classifier and the Peeker
// (the recorders' fast path) both read ids through it, so they agree.
func idProblem(b []byte, idSpan span, request bool) error {
	id := idSpan.in(b)
	switch {
	case id[0] == '{' || id[0] == '[' || id[0] == 't' || id[0] == 'f':
		return fmt.Errorf("expected \"id\" to be a string or a number, found %s", found(b, idSpan.start))
	case id[0] == 'n' && request:
		return fmt.Errorf("expected \"id\" of a request to be a string or a number, found null")
	case id[0] != '"' && string(id) != "null" && !jsonNumber(id):
		return fmt.Errorf("expected \"id\" to be a string or a number, found %s", found(b, idSpan.start))
	case id[0] == '"' && !jsonString(id):
		return fmt.Errorf("expected \"id\" to be a JSON string, found %s (a raw control character or a bad escape)", found(b, idSpan.start))
	}
	return nil
}

// Peeker reads the kind, id and method of single JSON-RPC messages, one
// at a time, in one walk of their top-level members (as the Encoder's fast
// path checks them) and without allocating once its scratch space has
// grown: for code that decides per message on the hot path (the
// interception rules). A Peeker is not safe for concurrent use.
type Peeker struct{ c classifier }

// Head is what a Peeker found in a message.
type Head struct {
	Kind   Kind   // KindInvalid: not one JSON-RPC request, response or notification
	ID     []byte // the id's JSON text, aliasing the message
	Method []byte // the method's name, aliasing the message unless it held escapes
	// Plain says the message is one the Encoder's fast path takes as it
	// is (AppendLinePlain): an object on one line, no _meta of its own.
	Plain bool
}

// Peek walks msg, one JSON-RPC object (not a batch), without its line
// ending.
func (p *Peeker) Peek(msg []byte) Head { return p.peek(msg, true) }

// PeekLine is Peek for a line known to hold no newline (a relay's line,
// cut at its newline): Plain is found without scanning it for one.
func (p *Peeker) PeekLine(line []byte) Head { return p.peek(line, false) }

func (p *Peeker) peek(msg []byte, mayHoldNewline bool) Head {
	msg = bytes.TrimSpace(msg)
	n := len(msg)
	if n < 2 || msg[0] != '{' || msg[n-1] != '}' {
		return Head{}
	}
	var id, method span
	var hasResult, hasError, hasMeta bool
	end, err := p.c.members(msg, 0, func(key []byte, v span) {
		switch string(key) {
		case "id":
			id = v
		case "method":
			method = v
		case "result":
			hasResult = true
		case "error":
			hasError = true
		case "_meta", AltMetaKey:
			hasMeta = true
		}
	})
	if err != nil || skipWS(msg, end) != len(msg) {
		return Head{}
	}
	var h Head
	if method.ok() {
		m := method.in(msg)
		if m[0] != '"' || len(m) > 1 && m[1] == '$' {
			return Head{}
		}
		h.Method = m[1 : len(m)-1]
		if bytes.IndexByte(h.Method, '\\') >= 0 {
			h.Method = []byte(stringValue(msg, method))
		}
	}
	if id.ok() {
		if idProblem(msg, id, method.ok()) != nil {
			return Head{}
		}
		h.ID = id.in(msg)
	}
	switch {
	case method.ok() && id.ok():
		h.Kind = KindRequest
	case method.ok():
		h.Kind = KindNotification
	case id.ok() && (hasResult || hasError):
		h.Kind = KindResponse
	default:
		return Head{}
	}
	h.Plain = !hasMeta && (!mayHoldNewline || bytes.IndexByte(msg, '\n') < 0) && bytes.IndexByte(msg, '\r') < 0
	return h
}
