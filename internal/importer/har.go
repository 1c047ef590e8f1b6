package importer

// HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) of MCP
// traffic: Streamable HTTP as a browser, a proxy or `tapedeck export
// --format har` saw it, or tapedeck's stdio mapping.
//
// Streamable HTTP entries (http:// and https:// URLs):
//   - a POST whose postData is a JSON-RPC message or batch (an object with
//     "jsonrpc") is the client's message, send, at startedDateTime; its
//     answer, recv at startedDateTime + time: a JSON body's message(s), or
//     each SSE event's data of a text/event-stream body, in order; an
//     answer without a message (a 202, a plain-text error) is an
//     $http/exchange {method, status, body} record;
//   - a GET answered with text/event-stream is the standalone stream: an
//     $http/exchange {method GET, status, stream} record at its start,
//     then its events. HAR keeps no time per event, so each is placed by
//     what the traffic says: a server request just before the client's
//     POSTed answer to it (same id), the events after it just after that
//     answer, the events before any such request at the stream's start;
//   - a DELETE with an Mcp-Session-Id is an $http/exchange record;
//   - anything else (a page, an image, a POST of other JSON) is not MCP
//     traffic and is skipped (Result.Skipped).
//
// The records carry the HTTP dialect of tape.HTTPMeta: transport, http,
// session, protocolVersion, mcpMethod, mcpName (the request's headers),
// status, stream and event (SSE), newSession (the answer's Mcp-Session-Id
// header; when the HAR kept no response headers, as tapedeck's export,
// the session the client sent next), inReplyTo (an answer with id null to
// a single request) and exchange (a POST without a session). The server is
// the URL's host name, as `tapedeck record --upstream` names it.
//
// stdio://SERVER/ entries are tapedeck's mapping of a stdio tape (see
// internal/export/har.go): a POST to stdio://SERVER/ is the client's
// message (send) and its response content the server's answer (recv); a
// POST to stdio://SERVER/client is the server's message (recv) and its
// response content the client's answer (send).
//
// Records are written in time order (ties in the HAR's order, a request
// before its answer).

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

const formatHAR = "har"

// harRec is a record waiting to be written in time order.
type harRec struct {
	t     time.Time
	order float64
	msg   []byte // a wire message, or nil for a lifecycle record (or ref)
	// ref: the message is the string whose escaped text is at refOff
	// (refLen bytes) in the input file (harImport.src), trimmed
	ref    bool
	refLen int
	refOff int64
	plain  bool   // msg is one the Encoder writes as it is (harImport.check)
	method string // lifecycle
	params map[string]any
	m      tape.Meta
	// for the placement of GET-stream events
	stream    int
	requestID string // a server request's id (its JSON form)
	// serverStart marks a server's message at its entry's start (stdio
	// /client), answer a record at its entry's end
	serverStart, answer bool
	answerID            string // a client's answer's id (its JSON form)
	entry               int
}

type harImport struct {
	o                 Options
	recs              []*harRec
	n                 float64 // generation order
	streams           int
	skipped           int
	mcpScheme         int // mcp:// entries (mcpsnoop's HAR export)
	upstream, creator string
	transport         string
	peek              tape.Peeker
	arena             []byte    // the texts of messages (harImport.text)
	scratch           [2][]byte // the texts of a stdio entry being read
	// src is the input when it is a regular file: a stdio entry's records
	// keep where their messages are in it, read again when written, so
	// that the import holds the records, not the messages (srcBase is
	// where the input's reading started)
	src     io.ReaderAt
	srcBase int64
	srcInfo fs.FileInfo  // src's size and modification time when the import began
	esc     []byte       // a message's escaped text read again from src
	line    []byte       // its text
	failed  atomic.Bool  // apply met an error: stop cutting entries
	applied atomic.Int64 // the batches apply is done with
}

// HAR imports a HAR 1.2 log of MCP traffic. The document is streamed: its
// entries are read one at a time (each at most Options.MaxDocument bytes),
// so a HAR of a million entries needs the memory of the records it makes,
// not of the document and its copies.
func HAR(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	h := &harImport{o: o}
	h.src, h.srcBase, _ = harSource(r)
	if st, ok := h.src.(interface{ Stat() (fs.FileInfo, error) }); ok {
		h.srcInfo, _ = st.Stat()
	}
	entries, err := h.read(r)
	if err != nil {
		return Result{}, err
	}
	atStage("har-read")
	if err := h.srcChanged(); err != nil {
		return Result{}, err
	}
	lg := node{format: formatHAR, path: "$.log"}
	if len(h.recs) == 0 {
		if h.mcpScheme > 0 {
			return Result{}, lg.get("entries").errorf("expected MCP traffic (POSTs of JSON-RPC messages, or stdio:// entries), found %d mcp:// entries: mcpsnoop's HAR keeps each call's params and result without the JSON-RPC messages or their ids, which a tape cannot be made of; import its session log (--from mcpsnoop) instead", h.mcpScheme)
		}
		return Result{}, lg.get("entries").errorf("expected MCP traffic (POSTs of JSON-RPC messages, or stdio:// entries), found none in %d entries", entries)
	}
	h.placeStreamEvents()
	h.inferSessions()
	sort.SliceStable(h.recs, func(i, j int) bool {
		a, b := h.recs[i], h.recs[j]
		if !a.t.Equal(b.t) {
			return a.t.Before(b.t)
		}
		return a.order < b.order
	})
	// At one time (HAR times are often whole milliseconds), a server's own
	// message goes before the answers that end earlier entries: a server
	// sends its progress before the result it ends a call with.
	for i := range h.recs {
		for j := i; j > 0 && h.recs[j].serverStart && h.recs[j-1].answer && h.recs[j-1].t.Equal(h.recs[j].t); j-- {
			h.recs[j], h.recs[j-1] = h.recs[j-1], h.recs[j]
		}
	}
	out := newOut(w)
	first := h.recs[0]
	sm := tape.Meta{Server: first.m.Server, Time: first.t}
	if h.transport == "http" {
		sm.Extra = map[string]any{tape.MetaTransport: "http"}
	}
	if err := out.lifecycle(tape.MethodStart, startParams(formatHAR, map[string]any{"transport": h.transport, "upstream": h.upstream, "creator": h.creator}), sm); err != nil {
		return out.result(), err
	}
	for _, rec := range h.recs {
		rec.m.Time = rec.t
		msg := rec.msg
		if rec.ref {
			var err error
			if msg, err = h.reread(rec); err != nil {
				return out.result(), err
			}
		}
		var err error
		switch {
		case rec.plain && rec.m.Extra == nil:
			err = out.plain(msg, rec.m)
		case msg != nil:
			err = out.message(msg, rec.m)
		default:
			err = out.lifecycle(rec.method, rec.params, rec.m)
		}
		if err != nil {
			return out.result(), err
		}
	}
	if err := h.srcChanged(); err != nil {
		return out.result(), err
	}
	out.res.Skipped = h.skipped
	return out.result(), nil
}

// srcChanged is an error when the input file is no longer as it was when
// the import began (its size or modification time): the messages read
// again from it (reread) would not be the ones its scan checked, and the
// tape could hold anything.
func (h *harImport) srcChanged() error {
	if h.srcInfo == nil {
		return nil
	}
	st, err := h.src.(interface{ Stat() (fs.FileInfo, error) }).Stat()
	if err != nil {
		return &Error{Format: formatHAR, Err: fmt.Errorf("checking the input again: %w", err)}
	}
	if st.Size() != h.srcInfo.Size() || !st.ModTime().Equal(h.srcInfo.ModTime()) {
		return &Error{Format: formatHAR, Err: fmt.Errorf("the file changed while it was imported (%d bytes, modified %s; now %d bytes, modified %s): import it once it is written whole",
			h.srcInfo.Size(), h.srcInfo.ModTime().Format(time.RFC3339Nano), st.Size(), st.ModTime().Format(time.RFC3339Nano))}
	}
	return nil
}

// reread reads the message of rec (a ref) again from the input file: the
// same bytes the entry's scan validated, unescaped as then.
func (h *harImport) reread(rec *harRec) ([]byte, error) {
	if cap(h.esc) < rec.refLen {
		h.esc = make([]byte, rec.refLen)
	}
	esc := h.esc[:rec.refLen]
	if _, err := h.src.ReadAt(esc, h.srcBase+rec.refOff); err != nil {
		return nil, &Error{Format: formatHAR, Err: fmt.Errorf("reading a message again from the input at offset %d: %w", h.srcBase+rec.refOff, err)}
	}
	h.line = harUnescape(h.line[:0], esc)
	return bytes.TrimSpace(h.line), nil
}

// harHead is how much of a HAR's start is kept to say the line and column
// of a syntax error (past it, the error names the JSON path instead).
const harHead = 1 << 20

func (h *harImport) add(rec *harRec) *harRec {
	h.n++
	rec.order = h.n
	h.recs = append(h.recs, rec)
	return rec
}

// harHeaders reads a HAR headers array into a lower-cased map.
func harHeaders(n node) (map[string]string, error) {
	out := map[string]string{}
	if n.absent() || string(n.raw) == "[]" {
		return out, nil
	}
	hs, err := n.array()
	if err != nil {
		return nil, err
	}
	for _, h := range hs {
		if err := h.loadFast(); err != nil {
			return nil, err
		}
		name, err := h.get("name").str()
		if err != nil {
			return nil, err
		}
		value, err := h.get("value").optStr()
		if err != nil {
			return nil, err
		}
		if _, dup := out[strings.ToLower(name)]; !dup {
			out[strings.ToLower(name)] = value
		}
	}
	return out, nil
}

// jsonRPCish reports whether b is meant as JSON-RPC: an object with a
// "jsonrpc" member, or an array whose first element is one.
func jsonRPCish(b []byte) bool {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '[' {
		var elems []json.RawMessage
		if json.Unmarshal(b, &elems) != nil || len(elems) == 0 {
			return false
		}
		b = elems[0]
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return false
	}
	_, ok := m["jsonrpc"]
	return ok
}

// loadFast is load by the scanner: the object's members are found, not
// decoded.
func (n *node) loadFast() error {
	t := bytes.TrimSpace(n.raw)
	m := make(map[string]json.RawMessage, 8)
	if len(t) == 0 || t[0] != '{' || !members(t, func(k string, v []byte) { m[k] = v }) {
		return n.errorf("expected an object, found %s", n.found())
	}
	n.obj = m
	return nil
}

// entry reads entry i, raw at path, whose members f's scan found.
func (h *harImport) entry(i int, path string, raw []byte, off int64, f *harFields) error {
	e := node{format: formatHAR, path: path, raw: raw}
	if raw[0] != '{' {
		return e.errorf("expected an object, found %s", e.found())
	}
	at := func(n node, key string, raw []byte) node {
		return node{format: formatHAR, path: n.path + "." + key, raw: raw}
	}
	start, err := at(e, "startedDateTime", f.started).time()
	if err != nil {
		return err
	}
	total, err := at(e, "time", f.time).optNum(0)
	if err != nil {
		return err
	}
	if total < 0 {
		total = 0 // -1: not known
	}
	if total > float64(365*24*time.Hour/time.Millisecond) {
		return at(e, "time", f.time).errorf("expected the entry's time in milliseconds (under a year), found %v", total)
	}
	end := start.Add(time.Duration(total * float64(time.Millisecond)))
	req := at(e, "request", f.request)
	if err := harObjectNode(req); err != nil {
		return err
	}
	method, err := at(req, "method", f.method).str()
	if err != nil {
		return err
	}
	rawURL, err := at(req, "url", f.url).str()
	if err != nil {
		return err
	}
	u, err := url.Parse(rawURL)
	if err != nil {
		return at(req, "url", f.url).errorf("expected a URL, found %q", rawURL)
	}
	reqHeaders, err := harHeaders(at(req, "headers", f.reqHeaders))
	if err != nil {
		return err
	}
	// A stdio entry of a file keeps where its texts are (harRef), read
	// into scratch buffers now; the others' texts are kept in the arena.
	inFile := h.src != nil && u.Scheme == "stdio"
	scratch := func(k int) int {
		if inFile {
			return k
		}
		return -1
	}
	var body []byte
	pd := at(req, "postData", f.postData)
	pdText := at(pd, "text", f.text)
	if !pd.absent() {
		if err := harObjectNode(pd); err != nil {
			return err
		}
		if body, err = h.text(pdText, scratch(0)); err != nil {
			return err
		}
	}
	resp := at(e, "response", f.response)
	if err := harObjectNode(resp); err != nil {
		return err
	}
	st, err := at(resp, "status", f.status).num()
	if err != nil {
		return err
	}
	if st != float64(int(st)) || st < 0 || st > 999 {
		return at(resp, "status", f.status).errorf("expected an HTTP status, found %v", st)
	}
	status := int(st)
	respHeaders, err := harHeaders(at(resp, "headers", f.respHeaders))
	if err != nil {
		return err
	}
	content := at(resp, "content", f.content)
	ctextNode := at(content, "text", f.ctext)
	var ctext []byte
	var mime string
	ctextIn := inFile // ctext is the string's text (not base64 decoded)
	if !content.absent() {
		if err := harObjectNode(content); err != nil {
			return err
		}
		if ctext, err = h.text(ctextNode, scratch(1)); err != nil {
			return err
		}
		if mime, err = at(content, "mimeType", f.mime).optStr(); err != nil {
			return err
		}
		enc, err := at(content, "encoding", f.enc).optStr()
		if err != nil {
			return err
		}
		if enc == "base64" {
			ctextIn = false
			text := ctext
			ctext, err = base64.StdEncoding.DecodeString(string(text))
			if err != nil {
				return ctextNode.errorf("expected base64 (content.encoding says so), found %s", quoteStart(text))
			}
		} else if enc != "" {
			return at(content, "encoding", f.enc).errorf(`expected "base64" or no encoding, found %q`, enc)
		}
	}
	if mime == "" {
		mime = respHeaders["content-type"]
	}
	mime = strings.ToLower(mime)

	if u.Scheme == "stdio" {
		var refs *harRefs
		if inFile {
			refs = &harRefs{entry: raw, off: off, ctext: ctextIn}
		}
		return h.stdioEntry(i, pdText, ctextNode, u, start, end, body, ctext, refs)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		if u.Scheme == "mcp" {
			h.mcpScheme++
		}
		h.skipped++
		return nil
	}
	server := h.o.Server
	if server == "" {
		server = u.Hostname()
	}
	if server == "" {
		server = "server"
	}
	base := map[string]any{tape.MetaTransport: "http", tape.MetaHTTP: strings.ToUpper(method)}
	for k, hk := range map[string]string{tape.MetaSession: "mcp-session-id", tape.MetaProtocol: "mcp-protocol-version", tape.MetaMCPMethod: "mcp-method", tape.MetaMCPName: "mcp-name"} {
		if v := reqHeaders[hk]; v != "" {
			base[k] = v
		}
	}
	if reqHeaders["mcp-session-id"] == "" && strings.EqualFold(method, "POST") {
		base[tape.MetaExchange] = i + 1
	}
	meta := func(dir tape.Dir, more map[string]any) tape.Meta {
		x := make(map[string]any, len(base)+len(more))
		for k, v := range base {
			x[k] = v
		}
		for k, v := range more {
			x[k] = v
		}
		if dir != tape.DirSend {
			delete(x, tape.MetaMCPMethod) // request headers: on the request only
			delete(x, tape.MetaMCPName)
		}
		return tape.Meta{Dir: dir, Server: server, Extra: x}
	}
	answer := map[string]any{tape.MetaStatus: status}
	if s := respHeaders["mcp-session-id"]; s != "" && s != reqHeaders["mcp-session-id"] {
		answer[tape.MetaNewSession] = s
	}
	sse := strings.HasPrefix(mime, "text/event-stream")

	switch strings.ToUpper(method) {
	case "POST":
		if len(bytes.TrimSpace(body)) == 0 || !json.Valid(body) || !jsonRPCish(body) {
			if len(bytes.TrimSpace(body)) > 0 && strings.Contains(strings.ToLower(reqHeaders["content-type"]), "json") && !json.Valid(body) && bytes.Contains(body, []byte(`"jsonrpc"`)) {
				return pdText.errorf("expected a JSON-RPC message, found invalid JSON %s", quoteStart(body))
			}
			h.skipped++
			return nil
		}
		if err := checkMessage(body); err != nil {
			return pdText.errorf("%v", err)
		}
		h.note(rawURL)
		sent := h.add(&harRec{t: start, msg: bytes.TrimSpace(body), m: meta(tape.DirSend, nil), entry: i})
		sent.answerID = answerID(body)
		inReplyTo := singleRequestID(body)
		return h.answer(i, ctextNode, end, ctext, sse, status, inReplyTo, "POST", func(more map[string]any) tape.Meta {
			for k, v := range answer {
				more[k] = v
			}
			return meta(tape.DirRecv, more)
		})
	case "GET":
		if !sse && reqHeaders["mcp-session-id"] == "" {
			h.skipped++
			return nil
		}
		h.note(rawURL)
		p := map[string]any{"method": "GET", "status": status}
		if sse {
			h.streams++
			p["stream"] = h.streams
		}
		lm := meta(tape.DirLifecycle, map[string]any{tape.MetaStatus: status})
		h.add(&harRec{t: start, method: tape.MethodHTTPExchange, params: p, m: lm, entry: i})
		if !sse {
			return nil
		}
		return h.events(ctextNode, ctext, start, h.streams, i, func(more map[string]any) tape.Meta {
			more[tape.MetaStatus] = status
			return meta(tape.DirRecv, more)
		})
	case "DELETE":
		if reqHeaders["mcp-session-id"] == "" {
			h.skipped++
			return nil
		}
		h.note(rawURL)
		h.add(&harRec{t: end, method: tape.MethodHTTPExchange, params: map[string]any{"method": "DELETE", "status": status}, m: meta(tape.DirLifecycle, map[string]any{tape.MetaStatus: status}), entry: i})
		return nil
	}
	h.skipped++
	return nil
}

func (h *harImport) note(u string) {
	if h.upstream == "" {
		h.upstream = u
		h.transport = "http"
	}
}

// answer records the answer to a POST: a JSON body, SSE events, or an
// $http/exchange when it holds no message.
func (h *harImport) answer(i int, at node, end time.Time, text []byte, sse bool, status int, inReplyTo any, method string, meta func(map[string]any) tape.Meta) error {
	trimmed := bytes.TrimSpace(text)
	switch {
	case sse && len(trimmed) > 0:
		h.streams++
		return h.events(at, text, end, h.streams, i, meta)
	case len(trimmed) > 0 && json.Valid(trimmed) && jsonRPCish(trimmed):
		if err := checkMessage(trimmed); err != nil {
			return at.errorf("%v", err)
		}
		more := map[string]any{}
		if inReplyTo != nil && bytes.Contains(trimmed, []byte(`"id":null`)) {
			more[tape.MetaInReplyTo] = inReplyTo
		}
		h.add(&harRec{t: end, msg: trimmed, m: meta(more), entry: i, answer: true})
		return nil
	case len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') && !json.Valid(trimmed):
		return at.errorf("expected the answer's JSON-RPC message, found invalid JSON %s", quoteStart(trimmed))
	}
	p := map[string]any{"method": method, "status": status}
	if len(trimmed) > 0 {
		p["body"] = string(text)
	}
	m := meta(map[string]any{})
	m.Dir = tape.DirLifecycle
	h.add(&harRec{t: end, method: tape.MethodHTTPExchange, params: p, m: m, entry: i})
	return nil
}

// events records the events of an SSE body, each data a message.
func (h *harImport) events(at node, text []byte, t time.Time, stream, entry int, meta func(map[string]any) tape.Meta) error {
	for k, ev := range sse.Events(text) {
		if len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // a priming event, no message
		}
		if err := checkMessage(ev.Data); err != nil {
			return at.errorf("SSE event %d (data %s): %v", k+1, quoteStart(ev.Data), err)
		}
		more := map[string]any{tape.MetaStream: stream}
		if ev.HasID {
			more[tape.MetaEvent] = ev.ID
		}
		rec := h.add(&harRec{t: t, msg: bytes.TrimSpace(ev.Data), m: meta(more), stream: stream, entry: entry, answer: true})
		rec.requestID = requestID(ev.Data)
	}
	return nil
}

// harRefs says where a stdio entry's texts are in the input file: the
// entry's bytes, at off; ctext false when the answer's text is not there
// (base64 decoded).
type harRefs struct {
	entry []byte
	off   int64
	ctext bool
}

// stdioEntry reads an entry of tapedeck's stdio mapping. With refs, body
// and ctext are in scratch buffers and the records keep where they are in
// the input file instead (ctext's only when refs.ctext, else a copy).
func (h *harImport) stdioEntry(i int, pd, ct node, u *url.URL, start, end time.Time, body, ctext []byte, refs *harRefs) error {
	server := h.o.Server
	if server == "" {
		server = u.Host
	}
	if server == "" {
		server = "server"
	}
	if h.transport == "" {
		h.transport = "stdio"
	}
	out, back := tape.DirSend, tape.DirRecv
	if strings.TrimSuffix(u.Path, "/") == "/client" {
		out, back = tape.DirRecv, tape.DirSend
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return pd.errorf("expected the JSON-RPC message of a stdio:// entry, found nothing")
	}
	body = bytes.TrimSpace(body)
	plain, err := h.check(body)
	if err != nil {
		return pd.errorf("%v", err)
	}
	sent := &harRec{t: start, msg: body, plain: plain, m: tape.Meta{Dir: out, Server: server}, entry: i, serverStart: out == tape.DirRecv}
	if refs != nil {
		sent.msg, sent.ref = nil, true
		sent.refOff, sent.refLen = harRef(refs.entry, refs.off, pd)
	}
	h.add(sent)
	ctext = bytes.TrimSpace(ctext)
	if len(ctext) == 0 {
		return nil // a notification, answered 202
	}
	if plain, err = h.check(ctext); err != nil {
		return ct.errorf("%v", err)
	}
	ans := &harRec{t: end, msg: ctext, plain: plain, m: tape.Meta{Dir: back, Server: server}, entry: i, answer: true}
	if refs != nil && refs.ctext { // else base64 decoded, a copy of its own
		ans.msg, ans.ref = nil, true
		ans.refOff, ans.refLen = harRef(refs.entry, refs.off, ct)
	}
	h.add(ans)
	return nil
}

// check is checkMessage of msg (trimmed), which it also reports plain: one
// JSON-RPC object the Encoder's fast path writes as it is (out.plain).
func (h *harImport) check(msg []byte) (bool, error) {
	if len(msg) > 0 && msg[0] == '{' && jsonscan.Valid(msg) {
		if hd := h.peek.Peek(msg); hd.Plain && hd.Kind != tape.KindInvalid {
			return true, nil
		}
	}
	return false, checkMessage(msg)
}

// harObjectNode is loadFast's error for a member that is not an object
// (the scan validated its members).
func harObjectNode(n node) error {
	if t := bytes.TrimSpace(n.raw); len(t) == 0 || t[0] != '{' {
		return n.errorf("expected an object, found %s", n.found())
	}
	return nil
}

// placeStreamEvents places the events of GET streams, which HAR gives no
// time of their own (see the top of the file).
func (h *harImport) placeStreamEvents() {
	get := map[int][]*harRec{}
	for _, r := range h.recs {
		if r.msg != nil && r.stream != 0 && r.m.Extra[tape.MetaHTTP] == "GET" {
			get[r.stream] = append(get[r.stream], r)
		}
	}
	keys := make([]int, 0, len(get))
	for k := range get {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	used := map[*harRec]bool{}
	for _, k := range keys {
		evs := get[k]
		anchorT, anchorO := evs[0].t, evs[0].order
		step := 0.0
		for _, ev := range evs {
			if ev.requestID != "" {
				if ans := h.answerTo(ev, used); ans != nil {
					used[ans] = true
					ev.t, ev.order = ans.t, ans.order-0.5
					anchorT, anchorO, step = ans.t, ans.order, 0
					continue
				}
			}
			step += 0.001
			ev.t, ev.order = anchorT, anchorO+step
		}
	}
}

// answerTo finds the client's POSTed answer to a server request: the
// first send with the request's id that follows the stream's start.
func (h *harImport) answerTo(ev *harRec, used map[*harRec]bool) *harRec {
	var best *harRec
	for _, r := range h.recs {
		if r.m.Dir != tape.DirSend || r.answerID != ev.requestID || used[r] || r.t.Before(ev.t) {
			continue
		}
		if best == nil || r.t.Before(best.t) || r.t.Equal(best.t) && r.order < best.order {
			best = r
		}
	}
	return best
}

// inferSessions gives the answer to an initialize the session the client
// sent next, when the HAR kept no response headers to say it.
func (h *harImport) inferSessions() {
	for _, r := range h.recs {
		if r.msg == nil || r.m.Dir != tape.DirRecv || r.m.Extra == nil || r.m.Extra[tape.MetaSession] != nil || r.m.Extra[tape.MetaNewSession] != nil {
			continue
		}
		if !bytes.Contains(r.msg, []byte(`"protocolVersion"`)) || !bytes.Contains(r.msg, []byte(`"serverInfo"`)) {
			continue
		}
		for _, n := range h.recs {
			if n.entry > r.entry && n.m.Extra != nil {
				if s, ok := n.m.Extra[tape.MetaSession].(string); ok && s != "" {
					r.m.Extra[tape.MetaNewSession] = s
					break
				}
			}
		}
	}
}

// requestID returns the id of a request (method and id), in its JSON form.
func requestID(msg []byte) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method == nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return ""
	}
	return string(m.ID)
}

// answerID returns the id of a response (result or error), in its JSON form.
func answerID(msg []byte) string {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method *string         `json:"method"`
	}
	if json.Unmarshal(msg, &m) != nil || m.Method != nil || len(m.ID) == 0 || string(m.ID) == "null" {
		return ""
	}
	return string(m.ID)
}

// singleRequestID returns the id of a single request, for inReplyTo.
func singleRequestID(msg []byte) any {
	id := requestID(bytes.TrimSpace(msg))
	if id == "" {
		return nil
	}
	var v any
	if json.Unmarshal([]byte(id), &v) != nil {
		return nil
	}
	return v
}
