package importer

// mcpsnoop (github.com/kerlenton/mcpsnoop) session logs: JSONL, one
// envelope a line, as its shim (`mcpsnoop --trace-file F -- SERVER...`)
// and its HTTP proxy (`mcpsnoop http`, under $MCPSNOOP_HOME/sessions/)
// write them:
//
//	{"session_id","server_label","seq","ts","direction","transport",
//	 "raw","text","mcp_method","mcp_name","mcp_protocol_version",
//	 "batch","conn_id","truncated","redacted","status","auth_challenge"}
//
// direction is c2s (client to server: send), s2c (server to client: recv),
// stderr (a line the server wrote to stderr, in text) or meta (the
// session's first envelope, raw {"command":[...],"cwd"}). raw is the
// JSON-RPC message as it crossed the wire; a frame that was not JSON (or
// was cut at mcpsnoop's frame cap, truncated) is in text instead. Over
// HTTP a response that held no message (a 202) is an s2c envelope with
// only a status.
//
// The mapping: meta → $transport/start {importedFrom, transport, command,
// args, cwd, session}, or a $transport/start of the session's first
// envelope's time when the log has no meta (HTTP logs); c2s/s2c raw → the
// message, send/recv; a raw that is JSON but no JSON-RPC message, or a
// text frame → $transport/invalid with the frame (truncated, redacted kept
// in _meta); stderr → $transport/stderr {text}; a status-only s2c →
// $http/exchange {status} (method POST for a 202). HTTP envelopes carry
// _meta transport "http", status (s2c), protocolVersion, mcpMethod and
// mcpName (c2s, from mcpsnoop's header fields), http "POST" (c2s: a
// client message over Streamable HTTP is always POSTed). ts keeps its
// microseconds (the tape's _meta.ts then has six fractional digits);
// server_label names the server. An answer logged before
// its request (mcpsnoop writes the two directions from two goroutines, so
// its seq is not causal) is put after the request when the timestamps
// show the request came first (reorder.go), counted in Result.Reordered.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

const formatMCPSnoop = "mcpsnoop"

// MCPSnoop imports an mcpsnoop session log. What was read before an error
// is on the tape, the records the reorder repair still held among it.
//
// Workers read the lines (snoopParse: the envelope validated, the record
// encoded); the ordered stage (snoopApply) writes each session's first
// $transport/start and passes the records through the reorder repair.
func MCPSnoop(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	out := newOut(w)
	out.sink = o.sink
	a := &snoopApplier{ro: newReorder(out), enc: newRecEncoder(), started: map[string]bool{}}
	lines, err := eachLineParallel(r, formatMCPSnoop, o,
		func() *snoopWorker {
			return &snoopWorker{enc: newRecEncoder(), o: o}
		},
		snoopParse, a.apply)
	if ferr := a.ro.flush(true); err == nil {
		err = ferr
	}
	if err == nil && lines == 0 {
		err = &Error{Format: formatMCPSnoop, Err: errors.New("expected mcpsnoop envelopes (JSON lines), found an empty input")}
	}
	return out.result(), err
}

// snoopWorker is a worker's state: the strings and Peeker it reuses and
// its encoder.
type snoopWorker struct {
	st  snoopState
	enc *recEncoder
	o   Options
}

// snoopRec is what a worker made of an envelope, for snoopApply.
type snoopRec struct {
	err       error // the envelope's error, before anything of it is written
	post      error // the envelope's error after its session's start (or a meta's params)
	session   string
	transport string
	server    string         // the server its records (and its session's start) name
	start     map[string]any // a meta's start params, else nil (transport and session)
	ts        time.Time      // the envelope's time
	id        []byte         // recPair: the message's id (its JSON text, aliasing the line), kind and direction
	idHead    uint64         // idHead(id), read while the line is at hand
	kind      tape.Kind
	dir       tape.Dir
	how       uint8 // what r is: recNone, recAdd or recPair
	meta      bool  // a session header: start holds its $transport/start's params
	r         rec
}

const (
	recNone = iota
	recAdd  // passed through the reorder in its place
	recPair // a message with an id, paired by the reorder
)

// snoopApplier is the ordered stage's state.
type snoopApplier struct {
	ro      *reorder
	enc     *recEncoder
	started map[string]bool // session_id → $transport/start written
	last    string          // a session started (the last line's, most often: no map lookup)
	anyLast bool            // last is set
}

// apply applies x in the log's order: the session's first
// $transport/start, then x's record through the reorder.
func (a *snoopApplier) apply(x *snoopRec, buf []byte) error {
	if x.err != nil {
		return x.err
	}
	if !a.anyLast || x.session != a.last {
		if err := a.start(x); err != nil || x.meta {
			return err
		}
	} else if x.meta {
		return nil // a repeated session header says nothing new
	}
	if x.post != nil {
		return x.post
	}
	switch x.how {
	case recAdd:
		return a.ro.add(held{r: x.r.bytesIn(buf)})
	case recPair:
		return a.ro.pair(x.kind, x.id, x.idHead, x.dir, x.ts, x.r.server, x.session, x.r.bytesIn(buf))
	}
	return nil
}

// start writes x's session's first $transport/start, unless written:
// the meta's params for a meta, else the session's transport and id at
// x's time. Errors of a meta's params are its.
func (a *snoopApplier) start(x *snoopRec) error {
	started := a.started[x.session]
	if !started {
		a.started[x.session] = true
	}
	a.last, a.anyLast = x.session, true
	if started {
		return nil
	}
	m := tape.Meta{Server: x.server, Time: x.ts}
	if x.meta {
		if x.post != nil {
			return x.post
		}
		return a.ro.add(held{r: a.enc.startRec(formatMCPSnoop, x.start, m)})
	}
	if x.transport == "http" {
		m.Extra = map[string]any{tape.MetaTransport: "http"}
	}
	p := map[string]any{"transport": x.transport, "session": x.session}
	return a.ro.add(held{r: a.enc.startRec(formatMCPSnoop, p, m)})
}

// snoopState is what reading a log carries from line to line.
type snoopState struct {
	env  snoopFields
	head msgHead // the raw message's, when it is an object
	ts   utcParser
	peek tape.Peeker
	// the last line's strings, kept while the next line's bytes are the
	// same (a log's envelopes repeat them)
	strs [snoopStrs]strMemo
}

// snoopFields is an envelope's members, raw (nil when missing).
type snoopFields struct {
	direction, ts, serverLabel, sessionID, transport, text, status []byte
	mcpMethod, mcpName, mcpProtocol, truncated, redacted, raw      []byte
}

func (e *snoopFields) set(key []byte, v []byte) {
	switch string(key) { // no string made

	case "direction":
		e.direction = v
	case "ts":
		e.ts = v
	case "server_label":
		e.serverLabel = v
	case "session_id":
		e.sessionID = v
	case "transport":
		e.transport = v
	case "text":
		e.text = v
	case "status":
		e.status = v
	case "mcp_method":
		e.mcpMethod = v
	case "mcp_name":
		e.mcpName = v
	case "mcp_protocol_version":
		e.mcpProtocol = v
	case "truncated":
		e.truncated = v
	case "redacted":
		e.redacted = v
	case "raw":
		e.raw = v
	}
}

// The strings snoopState keeps from line to line.
const (
	strDirection = iota
	strLabel
	strSession
	strTransport
	snoopStrs
)

// str is the member at path's optStr, the same string as the last
// line's when its bytes are.
func (st *snoopState) str(k int, path string, raw []byte) (string, error) {
	if c := &st.strs[k]; raw != nil && c.raw != nil && string(raw) == string(c.raw) {
		return c.s, nil
	}
	return st.strs[k].str(snoopNode(path, raw))
}

// strMemo keeps the string a member's bytes last read as, for the next
// line's same bytes (a log's envelopes repeat them): no string made again.
type strMemo struct {
	raw []byte
	s   string
}

// str is n.optStr, the same string as the last one's when its bytes are.
func (c *strMemo) str(n node) (string, error) {
	if n.raw != nil && c.raw != nil && bytes.Equal(n.raw, c.raw) {
		return c.s, nil
	}
	s, err := n.optStr()
	if err != nil {
		return "", err
	}
	c.raw, c.s = append(c.raw[:0], n.raw...), s
	return s, nil
}

// snoopNode is the envelope's member at path ("$.key").
func snoopNode(path string, raw []byte) node {
	return node{format: formatMCPSnoop, path: path, raw: raw}
}

// snoopParse reads an envelope into x (zero before) and encodes its
// record (appended to buf), without what depends on the lines before it
// (snoopApply's part).
func snoopParse(wk *snoopWorker, line, buf []byte, x *snoopRec) []byte {
	st, o := &wk.st, wk.o
	line = bytes.TrimSpace(line)
	// The line's one pass (scanObject): it validates the envelope and
	// hands over its members, the message's bytes taken as they are. Only
	// a line it refuses is looked at again, to say why.
	env := &st.env
	*env, st.head = snoopFields{}, msgHead{}
	loaded := len(line) > 0 && line[0] == '{' && jsonscan.ObjectWalk(line, 0, 1, nil, func(k []byte, vs int) int {
		var ve int
		if line[vs] == '{' && string(k) == "raw" {
			ve = messageEnd(line, vs, 2, &st.head) // the message, walked as the Peeker would
		} else {
			ve = jsonscan.ValueEnd(line, vs, 1)
		}
		if ve < 0 {
			return -1
		}
		if hasBackslash(k) {
			env.set([]byte(unquoteKey(k)), line[vs:ve])
		} else {
			env.set(k, line[vs:ve])
		}
		return ve
	}) == len(line)
	fail := func(err error) []byte {
		*x = snoopRec{err: err}
		return buf
	}
	if !loaded {
		*env = snoopFields{}
		n := root(formatMCPSnoop, line)
		if err := n.load(); err != nil {
			if !json.Valid(line) {
				var v any
				se := syntaxError(formatMCPSnoop, line, json.Unmarshal(line, &v))
				se.Line, se.Column = 0, 0
				return fail(se)
			}
			return fail(n.errorf("expected an mcpsnoop envelope (an object), found %s", n.found()))
		}
		for k, v := range n.obj {
			env.set([]byte(k), v)
		}
	}
	var dir string
	var err error
	switch string(env.direction) { // the usual words, without making a string of each
	case `"c2s"`:
		dir = "c2s"
	case `"s2c"`:
		dir = "s2c"
	default:
		if dirNode := snoopNode("$.direction", env.direction); dirNode.absent() {
			_, err := dirNode.str()
			return fail(err)
		}
		if dir, err = st.str(strDirection, "$.direction", env.direction); err != nil {
			return fail(err)
		}
	}
	ts, ok := st.ts.parse(env.ts)
	if !ok {
		if ts, err = snoopNode("$.ts", env.ts).time(); err != nil {
			return fail(err)
		}
	}
	label, err := st.str(strLabel, "$.server_label", env.serverLabel)
	if err != nil {
		return fail(err)
	}
	session, err := st.str(strSession, "$.session_id", env.sessionID)
	if err != nil {
		return fail(err)
	}
	transport, err := st.str(strTransport, "$.transport", env.transport)
	if err != nil {
		return fail(err)
	}
	// The members a usual envelope lacks, read only when there (nil: as
	// a missing member reads, "", 0 or false).
	var text, mcpMethod, mcpName, mcpProtocol string
	var status float64
	var truncated, redacted bool
	if env.text != nil {
		if text, err = snoopNode("$.text", env.text).optStr(); err != nil {
			return fail(err)
		}
	}
	if env.status != nil {
		statusNode := snoopNode("$.status", env.status)
		if status, err = statusNode.optNum(0); err != nil {
			return fail(err)
		}
		if status != 0 && (status < 100 || status > 999 || status != float64(int(status))) {
			return fail(statusNode.errorf("expected an HTTP status (100 to 999), found %v", status))
		}
	}
	if env.mcpMethod != nil || env.mcpName != nil || env.mcpProtocol != nil || env.truncated != nil || env.redacted != nil {
		// Each member read in turn (a table of pointers to these locals
		// would move them to the heap, three allocations a line).
		if mcpMethod, err = snoopNode("$.mcp_method", env.mcpMethod).optStr(); err != nil {
			return fail(err)
		}
		if mcpName, err = snoopNode("$.mcp_name", env.mcpName).optStr(); err != nil {
			return fail(err)
		}
		if mcpProtocol, err = snoopNode("$.mcp_protocol_version", env.mcpProtocol).optStr(); err != nil {
			return fail(err)
		}
		if truncated, err = snoopBool("$.truncated", env.truncated); err != nil {
			return fail(err)
		}
		if redacted, err = snoopBool("$.redacted", env.redacted); err != nil {
			return fail(err)
		}
	}
	server := o.Server
	if server == "" {
		server = label
	}
	if server == "" {
		server = "server"
	}
	x.session, x.transport, x.server, x.ts = session, transport, server, ts

	if dir == "meta" {
		x.meta = true
		raw := snoopNode("$.raw", env.raw)
		if raw.absent() {
			x.start = map[string]any{"transport": transport, "session": session}
			return buf
		}
		p, err := snoopMeta(raw)
		if err != nil {
			x.post = err
			return buf
		}
		p["transport"], p["session"] = transport, session
		x.start = p
		return buf
	}
	switch dir {
	case "c2s", "s2c", "stderr":
	default:
		return fail(snoopNode("$.direction", env.direction).errorf(`expected "c2s", "s2c", "stderr" or "meta", found %q`, dir))
	}
	m := tape.Meta{Server: server, Time: ts}
	if dir == "stderr" {
		if raw := snoopNode("$.raw", env.raw); !raw.absent() {
			x.post = raw.errorf("expected no raw message on a stderr envelope (its line is in text), found %s", raw.found())
			return buf
		}
		x.how = recAdd
		x.r, buf = wk.enc.lifecycle(buf, tape.MethodStderr, map[string]string{"text": text}, m)
		return buf
	}

	m.Dir = tape.DirSend
	if dir == "s2c" {
		m.Dir = tape.DirRecv
	}
	x.dir = m.Dir
	if transport == "http" || truncated || redacted {
		extra := map[string]any{}
		if transport == "http" {
			extra[tape.MetaTransport] = "http"
			if dir == "c2s" {
				extra[tape.MetaHTTP] = "POST"
			}
			if status != 0 {
				extra[tape.MetaStatus] = int(status)
			}
			if mcpMethod != "" {
				extra[tape.MetaMCPMethod] = mcpMethod
			}
			if mcpName != "" {
				extra[tape.MetaMCPName] = mcpName
			}
			if mcpProtocol != "" {
				extra[tape.MetaProtocol] = mcpProtocol
			}
		}
		if truncated {
			extra["truncated"] = true
		}
		if redacted {
			extra["redacted"] = true
		}
		m.Extra = extra
	}
	switch {
	case env.raw != nil && !isNull(env.raw):
		msg := bytes.TrimSpace(env.raw)
		if loaded && msg[0] == '{' {
			// The envelope was valid JSON: a message the Peeker reads as
			// one plain JSON-RPC message is one as checkMessage would
			// find it (tape.FuzzEncoderAgreesWithClassify), and goes to
			// the Encoder (or, with extras, the Writer).
			h, ok := st.head.head()
			if !ok || !st.head.of(msg) {
				h = st.peek.Peek(msg)
			}
			if h.Plain && h.Kind != tape.KindInvalid {
				if m.Extra == nil {
					x.r, buf = wk.enc.plain(buf, msg, m)
				} else {
					x.r, buf = wk.enc.message(buf, msg, m)
				}
				x.how = recAdd
				if len(h.ID) > 0 {
					x.how, x.kind, x.id, x.idHead = recPair, h.Kind, h.ID, idHead(h.ID)
				}
				return buf
			}
		}
		if checkMessage(msg) != nil {
			// JSON, but no JSON-RPC message: what crossed the wire, kept as
			// an invalid frame.
			x.how = recAdd
			x.r, buf = wk.enc.invalid(buf, msg, m)
			return buf
		}
		// Only single messages (no batches) are repaired.
		x.how = recAdd
		if es := tape.Classify(msg); len(es) == 1 && es[0].ID != "" {
			x.how, x.kind, x.id = recPair, es[0].Kind, []byte(es[0].ID)
			x.idHead = idHead(x.id)
		}
		x.r, buf = wk.enc.message(buf, msg, m)
		return buf
	case text != "":
		x.how = recAdd
		x.r, buf = wk.enc.invalid(buf, []byte(text), m)
		return buf
	case status != 0:
		p := map[string]any{"status": int(status)}
		if status == 202 {
			p["method"] = "POST"
		}
		lm := m
		lm.Extra = map[string]any{tape.MetaTransport: transport, "from": string(m.Dir)}
		if transport == "" {
			delete(lm.Extra, tape.MetaTransport)
		}
		x.how = recAdd
		x.r, buf = wk.enc.lifecycle(buf, tape.MethodHTTPExchange, p, lm)
		return buf
	}
	x.post = root(formatMCPSnoop, line).errorf("expected a %s envelope with raw (a JSON-RPC message), text (a frame that is not JSON) or status (an HTTP answer without a message), found none of them", dir)
	return buf
}

// isNull reports raw, a member's value, is null.
func isNull(raw []byte) bool { return string(bytes.TrimSpace(raw)) == "null" }

// snoopBool is the envelope's member at path, true or false (false
// when missing).
func snoopBool(path string, raw []byte) (bool, error) {
	v := snoopNode(path, raw)
	if v.absent() {
		return false, nil
	}
	b := string(bytes.TrimSpace(v.raw))
	if b != "true" && b != "false" {
		return false, v.errorf("expected true or false, found %s", v.found())
	}
	return b == "true", nil
}

// snoopMeta reads a meta envelope's raw: {"command":[...],"cwd":"..."}.
func snoopMeta(raw node) (map[string]any, error) {
	if err := raw.load(); err != nil {
		return nil, raw.errorf(`expected the session's meta {"command":[...],"cwd":...}, found %s`, raw.found())
	}
	p := map[string]any{}
	if c := raw.get("command"); !c.absent() {
		elems, err := c.array()
		if err != nil {
			return nil, err
		}
		var argv []string
		for _, e := range elems {
			s, err := e.str()
			if err != nil {
				return nil, err
			}
			argv = append(argv, s)
		}
		if len(argv) > 0 {
			p["command"] = argv[0]
			if len(argv) > 1 {
				p["args"] = argv[1:]
			}
		}
	}
	cwd, err := raw.get("cwd").optStr()
	if err != nil {
		return nil, err
	}
	p["cwd"] = cwd
	return p, nil
}

var errLineTooLong = errors.New("line too long")
