// Package importer turns session logs written by other MCP tools into
// tapes: mcpsnoop session logs (JSONL envelopes), mcp-recorder cassettes,
// agent-vcr .vcr recordings and HAR files of Streamable HTTP traffic (or
// of tapedeck's own stdio mapping). Each message keeps its bytes, its
// direction and, where the input has one, its time; a tape made this way
// replays like a recorded one.
//
// Every importer refuses malformed input with an *Error that names the
// line (line-based inputs, and JSON syntax errors) or the JSON path (the
// documents) of what is wrong, saying what was expected and what was
// found; none panics (each is fuzzed).
//
// Only what the input says is written. Where an input has no time for a
// message (mcp-recorder keeps one time for the whole cassette and each
// interaction's latency; agent-vcr keeps each interaction's start and
// latency), the times are derived from those and the derivation is
// documented with the importer. Every tape starts with a $transport/start
// record whose params.importedFrom names the format.
package importer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Options tune an import.
type Options struct {
	// Server names the server on the tape, instead of the name the input
	// gives (mcpsnoop's server_label, a cassette's server_info.name, the
	// HAR's host or stdio://NAME/).
	Server string
	// MaxLine bounds a line of a format read by lines (mcpsnoop), and
	// MaxDocument a whole JSON document (cassettes, HAR); zero means
	// DefaultMaxLine and DefaultMaxDocument. Past them the import fails
	// with an error naming the line, instead of reading without end.
	MaxLine, MaxDocument int64

	// workers and chunk set the line-oriented importers' workers and
	// chunk size (lines.go) in tests; zero means the defaults.
	workers, chunk int
	// sink is what the Writer an import is given writes to, when Import
	// made it (nil when an importer is called with a Writer of its own):
	// a chunk's records are lent to it rather than copied (sink.go).
	sink *tapeSink
}

// Default bounds of an import's input.
const (
	DefaultMaxLine     = 64 << 20
	DefaultMaxDocument = 512 << 20
)

func (o Options) maxLine() int64 {
	if o.MaxLine > 0 {
		return o.MaxLine
	}
	return DefaultMaxLine
}

func (o Options) maxDocument() int64 {
	if o.MaxDocument > 0 {
		return o.MaxDocument
	}
	return DefaultMaxDocument
}

// Result says what an import wrote.
type Result struct {
	Messages  int      // wire messages (requests, responses, notifications)
	Lifecycle int      // lifecycle records ($transport/start, stderr, invalid frames, ...)
	Skipped   int      // input records that hold no MCP traffic (a HAR's other requests)
	Reordered int      // answers the source recorded before their requests, put after them (mcpsnoop)
	Servers   []string // the servers named on the tape, sorted
}

// Func imports one format from r, writing the tape to w.
type Func func(r io.Reader, w *tape.Writer, o Options) (Result, error)

// formats are the importers by name.
var formats = map[string]Func{
	"mcpsnoop":     MCPSnoop,
	"mcp-recorder": MCPRecorder,
	"agent-vcr":    AgentVCR,
	"har":          HAR,
	"otlp":         OTLP,
	"gh-aw":        GHAW,
	"inspector":    Inspector,
}

// Formats returns the names Import accepts, sorted.
func Formats() []string {
	names := make([]string, 0, len(formats))
	for n := range formats {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Import reads format from r and writes the tape to w.
func Import(format string, r io.Reader, w io.Writer, o Options) (Result, error) {
	return ImportContext(context.Background(), format, r, w, o)
}

// ImportContext is Import stopped with ctx's error when ctx is done: each
// read of r (between lines, and within a document or a HAR's entries)
// checks it first, so SIGTERM ends an import of a long or slow input.
func ImportContext(ctx context.Context, format string, r io.Reader, w io.Writer, o Options) (Result, error) {
	f, ok := formats[format]
	if !ok {
		return Result{}, fmt.Errorf("unknown format %q: expected one of %s", format, strings.Join(Formats(), ", "))
	}
	return writeTape(ctx, format, w, tapeSizeHint(format, r), func(tw *tape.Writer, s *tapeSink) (Result, error) {
		o.sink = s
		return f(ctxReader{ctx, r}, tw, o)
	})
}

// tapeSizeHint is about how many bytes the tape imported from r will be,
// for preallocate: the rest of r when it is a regular file (a tape is a
// little shorter than the logs and exports made of it; an OTLP export,
// which carries each message again in attributes, about a third), else 0.
func tapeSizeHint(format string, r io.Reader) int64 {
	f, ok := r.(*os.File)
	if !ok {
		return 0
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return 0
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off >= st.Size() {
		return 0
	}
	n := st.Size() - off
	if format == "otlp" {
		n /= 3
	}
	return n
}

// writeTape runs an import writing to w through the tape writer every
// import uses: microseconds kept (a source's times below the millisecond
// survive), and one buffered writer under it (a record is a write to it,
// not a system call; a line importer's records are written from the
// chunk they were encoded into), flushed at the end. An error once ctx is
// done says the import was stopped.
func writeTape(ctx context.Context, format string, w io.Writer, sizeHint int64, run func(*tape.Writer, *tapeSink) (Result, error)) (Result, error) {
	if f, ok := w.(*os.File); ok && sizeHint > 0 {
		defer preallocate(f, sizeHint)()
	}
	s := newTapeSink(w)
	defer s.close()
	res, err := run(tape.NewWriter(s).KeepMicroseconds(), s)
	if ferr := s.Flush(); err == nil {
		err = ferr
	}
	if cerr := ctx.Err(); cerr != nil && err != nil {
		return res, fmt.Errorf("%s: stopped while reading: %w", format, cerr)
	}
	return res, err
}

// ctxReader fails its reads once ctx is done.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// Error is a malformed input: where, and what was expected and found.
type Error struct {
	Format string
	Line   int    // 1-based line, 0 when the input is not read by lines
	Column int    // 1-based column with Line, 0 if unknown
	Path   string // JSON path of the offending value ($.log.entries[3].request), "" if none
	Err    error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Format)
	if e.Line > 0 {
		fmt.Fprintf(&b, ": line %d", e.Line)
		if e.Column > 0 {
			fmt.Fprintf(&b, ", column %d", e.Column)
		}
	}
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// errorf makes the error of a problem found at path.
func errorf(format, path, msg string, args ...any) *Error {
	return &Error{Format: format, Path: path, Err: fmt.Errorf(msg, args...)}
}

// out writes records and counts them.
type out struct {
	w          *tape.Writer
	sink       *tapeSink // w's, when records may be lent to it (Options.sink)
	res        Result
	servers    map[string]bool
	lastServer string // the server put counted last (in servers)

	// The fast path of plain messages without _meta extras (tape.Encoder,
	// as the recorders write): an Encoder a direction and server, and the
	// line it formats, reused.
	encs map[encKey]*tape.Encoder
	line []byte
	peek tape.Peeker
}

type encKey struct {
	dir    tape.Dir
	server string
}

func newOut(w *tape.Writer) *out { return &out{w: w, servers: map[string]bool{}} }

// plain writes msg, a single JSON-RPC message a tape.Peeker found Plain
// (and part of input already checked to be valid JSON), through an
// Encoder; m has no Extra. The line is byte for byte the one message
// would write.
func (o *out) plain(msg []byte, m tape.Meta) error {
	k := encKey{m.Dir, m.Server}
	e := o.encs[k]
	if e == nil {
		if o.encs == nil {
			o.encs = map[encKey]*tape.Encoder{}
		}
		e = tape.NewEncoder(m.Dir, m.Server).KeepMicroseconds()
		o.encs[k] = e
		o.servers[m.Server] = true
	}
	o.line = e.AppendLinePlain(o.line[:0], msg, m.Time, nil)
	if err := o.w.WriteLines(o.line); err != nil {
		return err
	}
	o.res.Messages++
	return nil
}

func (o *out) result() Result {
	o.res.Servers = o.res.Servers[:0]
	for s := range o.servers {
		o.res.Servers = append(o.res.Servers, s)
	}
	sort.Strings(o.res.Servers)
	return o.res
}

// message writes a wire message (a JSON object, or a batch array).
func (o *out) message(msg []byte, m tape.Meta) error {
	if err := o.w.Write(msg, m); err != nil {
		return err
	}
	o.servers[m.Server] = true
	if bytes.HasPrefix(bytes.TrimSpace(msg), []byte("[")) {
		o.res.Messages += len(tape.Classify(msg))
	} else {
		o.res.Messages++
	}
	return nil
}

func (o *out) lifecycle(method string, params any, m tape.Meta) error {
	if err := o.w.WriteLifecycle(method, params, m); err != nil {
		return err
	}
	o.servers[m.Server] = true
	o.res.Lifecycle++
	return nil
}

func (o *out) invalid(frame []byte, m tape.Meta) error {
	if err := o.w.WriteInvalid(frame, m); err != nil {
		return err
	}
	o.servers[m.Server] = true
	o.res.Lifecycle++
	return nil
}

// checkMessage says why raw is not a JSON-RPC message (a JSON object with
// "jsonrpc", and a method, a result or an error), or a batch of them.
func checkMessage(raw []byte) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return errors.New("expected a JSON-RPC message, found nothing")
	}
	if !jsonscan.Valid(raw) {
		return fmt.Errorf("expected a JSON-RPC message, found invalid JSON %s", quoteStart(raw))
	}
	switch raw[0] {
	case '{':
		for _, e := range tape.Classify(raw) {
			if e.Kind == tape.KindInvalid {
				return fmt.Errorf("expected a JSON-RPC message (jsonrpc and a method, result or error), found %s", quoteStart(raw))
			}
		}
		return nil
	case '[':
		var elems []json.RawMessage
		if err := json.Unmarshal(raw, &elems); err != nil || len(elems) == 0 {
			return errors.New("expected a batch of JSON-RPC messages, found an empty array")
		}
		for i, e := range elems {
			if len(bytes.TrimSpace(e)) == 0 || bytes.TrimSpace(e)[0] != '{' {
				return fmt.Errorf("[%d]: expected a JSON-RPC message, found %s", i, kindOf(e))
			}
			if err := checkMessage(e); err != nil {
				return fmt.Errorf("[%d]: %w", i, err)
			}
		}
		return nil
	}
	return fmt.Errorf("expected a JSON-RPC message (an object), found %s", kindOf(raw))
}

// kindOf names the JSON value raw holds, for "found ..." in errors.
func kindOf(raw []byte) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string " + quoteStart(raw)
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number " + quoteStart(raw)
}

// quoteStart quotes the start of b, cut at 40 bytes.
func quoteStart(b []byte) string {
	const n = 40
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}

// syntaxError turns a JSON decoding error of a whole document into an
// *Error with the line and column (or the path) of the problem.
func syntaxError(format string, doc []byte, err error) *Error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line, col := lineCol(doc, se.Offset)
		return &Error{Format: format, Line: line, Column: col, Err: fmt.Errorf("invalid JSON: %v", se)}
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		line, col := lineCol(doc, int64(len(doc)))
		return &Error{Format: format, Line: line, Column: col, Err: errors.New("invalid JSON: the document ends too early")}
	}
	return &Error{Format: format, Err: err}
}

func lineCol(doc []byte, off int64) (int, int) {
	if off < 0 {
		off = 0
	}
	if off > int64(len(doc)) {
		off = int64(len(doc))
	}
	before := doc[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := len(before) - bytes.LastIndexByte(before, '\n')
	return line, col
}

// node is a JSON value and its path in the document, for reading a
// document with errors that say where.
type node struct {
	format string
	path   string
	raw    json.RawMessage // nil when the member is missing
	// obj holds an object's members once load decoded them, so that each
	// get does not decode the object again.
	obj map[string]json.RawMessage
}

func root(format string, raw []byte) node { return node{format: format, path: "$", raw: raw} }

func (n node) missing() bool { return n.raw == nil }

func (n node) isNull() bool { return string(bytes.TrimSpace(n.raw)) == "null" }

// absent reports a member that is missing or null.
func (n node) absent() bool { return n.missing() || n.isNull() }

func (n node) errorf(msg string, args ...any) *Error { return errorf(n.format, n.path, msg, args...) }

func (n node) found() string {
	if n.missing() {
		return "nothing (the member is missing)"
	}
	return kindOf(n.raw)
}

// object returns the members of an object.
func (n node) object() (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if t := bytes.TrimSpace(n.raw); len(t) == 0 || t[0] != '{' || json.Unmarshal(t, &m) != nil {
		return nil, n.errorf("expected an object, found %s", n.found())
	}
	return m, nil
}

// load is object, keeping the members for get.
func (n *node) load() error {
	m, err := n.object()
	n.obj = m
	return err
}

// get returns member key of an object (missing if n is not an object or
// has no such member: check with load first, which decodes the object
// once for every get).
func (n node) get(key string) node {
	m := n.obj
	if m == nil {
		_ = json.Unmarshal(n.raw, &m)
	}
	return node{format: n.format, path: n.path + "." + key, raw: m[key]}
}

// array returns the elements of an array.
func (n node) array() ([]node, error) {
	var elems []json.RawMessage
	if t := bytes.TrimSpace(n.raw); len(t) == 0 || t[0] != '[' || json.Unmarshal(t, &elems) != nil {
		return nil, n.errorf("expected an array, found %s", n.found())
	}
	out := make([]node, len(elems))
	for i, e := range elems {
		out[i] = node{format: n.format, path: fmt.Sprintf("%s[%d]", n.path, i), raw: e}
	}
	return out, nil
}

// str returns a string.
func (n node) str() (string, error) {
	if s, ok := plainString(bytes.TrimSpace(n.raw)); ok {
		return s, nil
	}
	var s string
	if t := bytes.TrimSpace(n.raw); len(t) == 0 || t[0] != '"' || json.Unmarshal(t, &s) != nil {
		return "", n.errorf("expected a string, found %s", n.found())
	}
	return s, nil
}

// optStr returns a string, or "" when the member is missing or null.
func (n node) optStr() (string, error) {
	if n.absent() {
		return "", nil
	}
	return n.str()
}

// smallInt is the value of t when it is a JSON number of at most 15
// digits without a sign, fraction or exponent (exact in a float64); ok
// false otherwise.
func smallInt(t []byte) (float64, bool) {
	if len(t) == 0 || len(t) > 15 || t[0] == '0' && len(t) > 1 {
		return 0, false
	}
	var v int64
	for _, c := range t {
		if !isDigit(c) {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return float64(v), true
}

// num returns a number.
func (n node) num() (float64, error) {
	if f, ok := smallInt(bytes.TrimSpace(n.raw)); ok {
		return f, nil // what encoding/json reads of it, without its allocations
	}
	var f float64
	if t := bytes.TrimSpace(n.raw); len(t) == 0 || !(t[0] == '-' || t[0] >= '0' && t[0] <= '9') || json.Unmarshal(t, &f) != nil {
		return 0, n.errorf("expected a number, found %s", n.found())
	}
	return f, nil
}

// optNum returns a number, or def when the member is missing or null.
func (n node) optNum(def float64) (float64, error) {
	if n.absent() {
		return def, nil
	}
	return n.num()
}

// message returns a JSON-RPC message (an object).
func (n node) message() ([]byte, error) {
	if err := n.load(); err != nil {
		return nil, n.errorf("expected a JSON-RPC message (an object), found %s", n.found())
	}
	if err := checkMessage(n.raw); err != nil {
		return nil, n.errorf("%v", err)
	}
	return bytes.TrimSpace(n.raw), nil
}

// time returns a timestamp (see parseTime).
func (n node) time() (time.Time, error) {
	s, err := n.str()
	if err != nil {
		return time.Time{}, n.errorf("expected a timestamp (RFC 3339), found %s", n.found())
	}
	t, err := parseTime(s)
	if err != nil {
		return time.Time{}, n.errorf("%v", err)
	}
	return t, nil
}

// parseTime reads an RFC 3339 time, or an ISO 8601 time without a zone
// (Python's naive datetime.isoformat()), taken as UTC.
func parseTime(s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("expected a timestamp (RFC 3339), found %s", strconv.Quote(s))
}

// ms converts milliseconds to a duration, refusing what is not a time.
func ms(n node, def float64) (time.Duration, error) {
	f, err := n.optNum(def)
	if err != nil {
		return 0, err
	}
	if f < 0 || f > float64(365*24*time.Hour/time.Millisecond) {
		return 0, n.errorf("expected a latency in milliseconds (0 or more, under a year), found %v", f)
	}
	return time.Duration(f * float64(time.Millisecond)), nil
}

// readAll reads a whole document of at most max bytes, refusing an empty
// one.
func readAll(format string, r io.Reader, max int64) ([]byte, error) {
	doc, err := readDocument(r, max)
	if err != nil {
		return nil, err
	}
	if int64(len(doc)) > max {
		return nil, &Error{Format: format, Err: fmt.Errorf("expected a JSON document of at most %d bytes, found a longer one", max)}
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return nil, &Error{Format: format, Err: errors.New("expected a JSON document, found an empty input")}
	}
	if !jsonscan.Valid(doc) {
		var v any
		return nil, syntaxError(format, doc, json.Unmarshal(doc, &v))
	}
	return doc, nil
}

// startParams are the params of the $transport/start an import writes.
func startParams(format string, more map[string]any) map[string]any {
	p := map[string]any{"importedFrom": format}
	for k, v := range more {
		if v != nil && v != "" {
			p[k] = v
		}
	}
	return p
}

// readDocument reads r to its end, at most max+1 bytes: into one buffer
// of the file's size when r is a file (no growing and copying a document
// of hundreds of megabytes), else as io.ReadAll does.
func readDocument(r io.Reader, max int64) ([]byte, error) {
	inner := r
	if c, ok := r.(ctxReader); ok {
		inner = c.r
	}
	f, ok := inner.(interface{ Stat() (fs.FileInfo, error) })
	if !ok {
		return io.ReadAll(io.LimitReader(r, max+1))
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return io.ReadAll(io.LimitReader(r, max+1))
	}
	lr := io.LimitReader(r, max+1)
	b := make([]byte, 0, min(st.Size(), max)+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if errors.Is(err, io.EOF) {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}
