package importer

// The MCP Inspector v2 (github.com/modelcontextprotocol/inspector): its
// Protocol screen exports the message log as a JSON array (the web
// client's onExportProtocol/onExportProtocolSection, JSON.stringify of
// MessageLogState's entries, pretty-printed), one MessageEntry
// (core/mcp/types.ts) an element:
//
//	{"id","timestamp","direction","origin","message","response","duration","clientError"}
//
// id is the Inspector's own (a UUID, not the JSON-RPC id); timestamp is
// when the Inspector tracked the message (a JavaScript Date, so ISO 8601
// in UTC with milliseconds); direction is request, response or
// notification; origin is who sent message: client (the Inspector, sent
// to the server: send) or server (received: recv); older exports have no
// origin. message is the JSON-RPC message. A request's answer is folded
// into its entry by JSON-RPC id (core/mcp/state/messageLogState.ts):
// response is the answer and duration the milliseconds between the two
// timestamps; an answer that matched no pending request stays an entry of
// its own (direction response).
//
// The mapping: a $transport/start {importedFrom} at the first entry's
// time; each entry's message at its timestamp, send for origin client and
// recv for origin server; a request's response at timestamp + duration
// (timestamp when duration is missing), in the other direction. Without
// origin, a request or notification is sent unless its method is one only
// a server sends (sampling/createMessage, elicitation/create, roots/list,
// server notifications such as notifications/progress), and a response
// entry is received. The entries are in the order the Inspector saw them;
// a folded answer goes after the entries before its time and after those
// of its own time from its sender's side (a server's progress
// notifications before the answer to the call), before those of its time
// from the other side (the client's next request after it). The server is
// named by the initialize answer's serverInfo.name, else "inspector".

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

const formatInspector = "inspector"

// inspectorEntry is a MessageEntry of the export, its members raw (nil
// when missing).
type inspectorEntry struct {
	Timestamp, Direction, Origin, Message, Response, Duration []byte
}

// set keeps member key's value, the key matched as encoding/json matches
// a struct's fields (exactly, else without regard to case), and returns
// which member it is (memberNone for one the import does not read).
func (e *inspectorEntry) set(key []byte, v []byte) int {
	m := inspectorMemberOf(key)
	e.setMember(m, v)
	return m
}

// inspectorMemberOf is which member key names, matched as encoding/json
// matches a struct's fields (exactly, else without regard to case).
func inspectorMemberOf(key []byte) int {
	switch string(key) { // the export's own spelling, at once
	case "timestamp":
		return memberTimestamp
	case "direction":
		return memberDirection
	case "origin":
		return memberOrigin
	case "message":
		return memberMessage
	case "response":
		return memberResponse
	case "duration":
		return memberDuration
	case "id":
		return memberNone
	}
	if bytes.IndexByte(key, '\\') >= 0 {
		key = []byte(unquoteKey(key))
	}
	for _, f := range [...]struct {
		name   string
		member int
	}{{"timestamp", memberTimestamp}, {"direction", memberDirection}, {"origin", memberOrigin}, {"message", memberMessage}, {"response", memberResponse}, {"duration", memberDuration}} {
		if string(key) == f.name || bytes.EqualFold(key, []byte(f.name)) {
			return f.member
		}
	}
	return memberNone
}

// setMember keeps v as member m's value.
func (e *inspectorEntry) setMember(m int, v []byte) {
	switch m {
	case memberTimestamp:
		e.Timestamp = v
	case memberDirection:
		e.Direction = v
	case memberOrigin:
		e.Origin = v
	case memberMessage:
		e.Message = v
	case memberResponse:
		e.Response = v
	case memberDuration:
		e.Duration = v
	}
}

// inspectorMsg is one message of the export, placed.
type inspectorMsg struct {
	raw   []byte
	plain bool // a message the Encoder writes as it is (tape.Head.Plain)
	dir   tape.Dir
	at    time.Time
	slot  int // folded answers: the entry it goes before (len for the end)
	seq   int // folded answers: the entry of its request
}

// Inspector imports an MCP Inspector v2 history (Protocol) export.
//
// The document is mapped (a file) or read whole, and its array scanned once, on every core
// (inspector_par.go): each element validated, checked and read into its
// message(s), direction and time. Only once the whole document is known
// to be valid, and every entry good, are the records encoded, again on
// every core, and written in order: a refused export writes nothing, and
// its error is the one the first fault in the document makes.
func Inspector(r io.Reader, w *tape.Writer, o Options) (_ Result, err error) {
	out := newOut(w)
	doc, unmap, mapped, err := inspectorMap(r, o.maxDocument())
	if err != nil {
		return out.result(), err
	}
	if mapped {
		defer func() { err = shrankIn(r, err) }()
		defer unmap()            // after the records, which alias doc, are written
		defer mmap.Catch(&err)() // the file cut shorter: ErrShrank, not a crash
	} else if doc, err = readDocument(r, o.maxDocument()); err != nil {
		return out.result(), err
	}
	if max := o.maxDocument(); int64(len(doc)) > max {
		return out.result(), &Error{Format: formatInspector, Err: fmt.Errorf("expected a JSON document of at most %d bytes, found a longer one", max)}
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return out.result(), &Error{Format: formatInspector, Err: errors.New("expected a JSON document, found an empty input")}
	}
	t := bytes.TrimSpace(doc)
	if t[0] != '[' {
		if !jsonscan.Valid(t) {
			var v any
			return out.result(), syntaxError(formatInspector, doc, json.Unmarshal(doc, &v))
		}
		return out.result(), errorf(formatInspector, "$", "expected the Inspector's history export (a JSON array of message entries), found %s", kindOf(doc))
	}
	entries, answers, server, err := inspectorRead(t, o)
	if err != nil {
		if errors.Is(err, errInspectorSyntax) {
			var v any
			return out.result(), syntaxError(formatInspector, doc, json.Unmarshal(doc, &v))
		}
		return out.result(), err
	}
	if len(entries) == 0 {
		return out.result(), errorf(formatInspector, "$", "expected the Inspector's history export (a JSON array of message entries), found an empty array")
	}
	if server == "" {
		server = "inspector"
	}
	inspectorPlace(entries, answers)
	if err := out.lifecycle(tape.MethodStart, startParams(formatInspector, nil), tape.Meta{Server: server, Time: entries[0].at}); err != nil {
		return out.result(), err
	}
	if mapped {
		atStage("write")
	}
	err = inspectorWrite(out, entries, answers, server, o)
	return out.result(), err
}

// inspectorPlace sets each answer's slot and sorts the answers by it:
// each goes before the first later entry of a later time, or of its own
// time from the side that asked.
func inspectorPlace(entries, answers []inspectorMsg) {
	if len(answers) == 0 {
		return
	}
	times := make([]time.Time, len(entries)) // the running latest entry time
	for i, e := range entries {
		times[i] = e.at
		if i > 0 && times[i-1].After(e.at) {
			times[i] = times[i-1]
		}
	}
	for k := range answers {
		a := &answers[k]
		j := a.seq + 1 + sort.Search(len(times)-a.seq-1, func(x int) bool { return !times[a.seq+1+x].Before(a.at) })
		for j < len(entries) && entries[j].at.Equal(a.at) && entries[j].dir == a.dir {
			j++
		}
		a.slot = j
	}
	sort.SliceStable(answers, func(x, y int) bool {
		if answers[x].slot != answers[y].slot {
			return answers[x].slot < answers[y].slot
		}
		return answers[x].at.Before(answers[y].at)
	})
}

// inspectorEntryOf reads one element's members (e; msgWS and respWS say
// whether its message and response have white space between tokens) into
// its entry and, for a request with its answer folded in, the answer (ok
// false when none), and the server the element names (""). An error's
// Path is the member's (".timestamp"), to follow the element's.
func inspectorEntryOf(s *inspectorScan, peek *tape.Peeker, findServer bool) (entry, answer inspectorMsg, hasAnswer bool, server string, err error) {
	e := &s.e
	n := func(path string, raw []byte) node { // path: ".key", constant (not made for each element)
		return node{format: formatInspector, path: path, raw: raw}
	}
	ts, ok := s.ts.parse(e.Timestamp) // the usual UTC time, read from its bytes
	if !ok {
		if ts, err = n(".timestamp", e.Timestamp).time(); err != nil {
			return entry, answer, false, "", err
		}
	}
	direction, err := inspectorWord(n(".direction", e.Direction))
	if err != nil {
		return entry, answer, false, "", err
	}
	if direction != "request" && direction != "response" && direction != "notification" {
		return entry, answer, false, "", n(".direction", e.Direction).errorf(`expected "request", "response" or "notification", found %q`, direction)
	}
	var origin string
	if o := n(".origin", e.Origin); !o.absent() {
		if origin, err = inspectorWord(o); err != nil {
			return entry, answer, false, "", err
		}
	}
	msg, plain, err := inspectorMessage(n(".message", e.Message), s.msgWS, &s.msgHead, peek)
	if err != nil {
		return entry, answer, false, "", err
	}
	var dir tape.Dir
	switch origin {
	case "client":
		dir = tape.DirSend
	case "server":
		dir = tape.DirRecv
	case "":
		dir = inspectorGuessDir(direction, msg)
	default:
		return entry, answer, false, "", n(".origin", e.Origin).errorf(`expected "client" or "server", found %q`, origin)
	}
	if findServer {
		server = serverInfoName(msg)
	}
	entry = inspectorMsg{raw: msg, plain: plain, dir: dir, at: ts}
	resp := n(".response", e.Response)
	if resp.absent() {
		return entry, answer, false, server, nil
	}
	if direction != "request" {
		return entry, answer, false, "", resp.errorf("expected a response only on a request entry, found one on a %s entry", direction)
	}
	a, plain, err := inspectorMessage(resp, s.respWS, &s.respHead, peek)
	if err != nil {
		return entry, answer, false, "", err
	}
	d, err := ms(n(".duration", e.Duration), 0)
	if err != nil {
		return entry, answer, false, "", err
	}
	if findServer && server == "" {
		server = serverInfoName(a)
	}
	back := tape.DirRecv
	if dir == tape.DirRecv {
		back = tape.DirSend
	}
	return entry, inspectorMsg{raw: a, plain: plain, dir: back, at: ts.Add(d)}, true, server, nil
}

// inspectorWord is n.str() for a direction or origin, the words the
// export uses given without making a string of each.
func inspectorWord(n node) (string, error) {
	switch string(n.raw) {
	case `"request"`:
		return "request", nil
	case `"response"`:
		return "response", nil
	case `"notification"`:
		return "notification", nil
	case `"client"`:
		return "client", nil
	case `"server"`:
		return "server", nil
	}
	return n.str()
}

// inspectorMessage returns the JSON-RPC message (an object) at n, and
// whether the Encoder takes it as it is; ws says whether it has white
// space between its tokens to remove, head what the scan found of it.
func inspectorMessage(n node, ws bool, head *msgHead, peek *tape.Peeker) ([]byte, bool, error) {
	t := bytes.TrimSpace(n.raw)
	if len(t) == 0 || t[0] != '{' {
		return nil, false, n.errorf("expected a JSON-RPC message (an object), found %s", n.found())
	}
	// The document is valid JSON: what is left to check is the message. A
	// message the Peeker reads as one plain JSON-RPC message is one as
	// Classify finds it (tape.FuzzEncoderAgreesWithClassify).
	c := t
	if ws {
		c = compact(t)
	}
	h, ok := head.head()
	if ws || !ok || !head.of(c) {
		h = peek.Peek(c) // what the scan found is not enough (or is of other bytes)
	}
	if h.Plain && h.Kind != tape.KindInvalid {
		return c, true, nil
	}
	for _, e := range tape.Classify(t) {
		if e.Kind == tape.KindInvalid {
			return nil, false, n.errorf("expected a JSON-RPC message (jsonrpc and a method, result or error), found %s", quoteStart(t))
		}
	}
	return c, false, nil
}

// compact removes the whitespace between the tokens of valid JSON (the
// export is pretty-printed), faster than json.Compact, which validates
// again: strings are skipped whole, and b is returned as it is when it
// has no whitespace outside them.
func compact(b []byte) []byte {
	var out []byte
	start := 0
	for i := 0; i < len(b); {
		switch c := b[i]; c {
		case '"':
			i = jsonscan.StringEnd(b, i)
			if i < 0 {
				return b // not valid JSON: left as it is
			}
		case ' ', '\n', '\r', '\t':
			if out == nil {
				out = make([]byte, 0, len(b))
			}
			out = append(out, b[start:i]...)
			i++
			start = i
		default:
			i++
		}
	}
	if out == nil {
		return b
	}
	return append(out, b[start:]...)
}

// inspectorGuessDir is the direction of a message of an export without
// origin: what only a server sends is received, a response entry (an
// answer that matched no request of the Inspector's) too, the rest sent.
func inspectorGuessDir(direction string, msg []byte) tape.Dir {
	if direction == "response" {
		return tape.DirRecv
	}
	var m struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(msg, &m)
	switch m.Method {
	case "sampling/createMessage", "elicitation/create", "roots/list":
		return tape.DirRecv
	case "notifications/initialized", "notifications/cancelled", "notifications/roots/list_changed":
		return tape.DirSend
	}
	if direction == "notification" && strings.HasPrefix(m.Method, "notifications/") {
		return tape.DirRecv
	}
	return tape.DirSend
}

// serverInfoName is result.serverInfo.name of an initialize answer, "" if
// msg is none.
func serverInfoName(msg []byte) string {
	if !bytes.Contains(msg, []byte(`"serverInfo"`)) {
		return ""
	}
	var m struct {
		Result struct {
			ServerInfo struct {
				Name string `json:"name"`
			} `json:"serverInfo"`
		} `json:"result"`
	}
	_ = json.Unmarshal(msg, &m)
	return m.Result.ServerInfo.Name
}

// inspectorHead reports whether head starts an array whose first element
// is an object with direction and message members and no jsonrpc (a batch
// on a tape's line starts with a JSON-RPC message).
func inspectorHead(head []byte) bool {
	t := bytes.TrimSpace(head)
	if len(t) == 0 || t[0] != '[' {
		return false
	}
	keys := topKeys(bytes.TrimSpace(t[1:]))
	return keys["direction"] && keys["message"] && !keys["jsonrpc"]
}
