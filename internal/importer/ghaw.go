package importer

// GitHub Agentic Workflows (github.com/github/gh-aw): its MCP gateway
// writes every JSON-RPC message it relays to mcp-logs/rpc-messages.jsonl,
// one envelope a line, as gh-aw's own reader (pkg/cli, RPCMessageEntry)
// takes them:
//
//	{"timestamp","direction","type","server_id","payload", ...}
//
// timestamp is RFC 3339 (with nanoseconds); direction is OUT (the agent's
// message sent to the server: send) or IN (the server's, received: recv);
// type is REQUEST or RESPONSE for a message (a notification is logged as
// a REQUEST without an id), or an event of the gateway's own
// (DIFC_FILTERED, GUARD_POLICY_BLOCKED, with tool_name, reason, ...), which
// carries no message; server_id names the backend server; payload is the
// whole JSON-RPC message (an object, or a string holding it).
//
// The mapping: the first envelope of each server_id → $transport/start
// {importedFrom, server_id} at its time; REQUEST and RESPONSE → the message
// in payload, send for OUT and recv for IN (without a direction: REQUEST
// send, RESPONSE recv); a payload that is not a JSON-RPC message →
// $transport/invalid with its bytes; the gateway's own events → skipped
// (counted in Result.Skipped). server_id names the server.

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

const formatGHAW = "gh-aw"

// GHAW imports a GitHub Agentic Workflows gateway log (rpc-messages.jsonl).
// Workers read the lines (ghawParse); the ordered stage writes each
// server's first $transport/start and the records.
func GHAW(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	out := newOut(w)
	out.sink = o.sink
	started := map[string]bool{} // server_id → $transport/start written
	enc := newRecEncoder()
	lines, err := eachLineParallel(r, formatGHAW, o,
		func() *ghawWorker { return &ghawWorker{enc: newRecEncoder(), o: o} },
		ghawParse,
		func(x *ghawRec, buf []byte) error {
			switch {
			case x.err != nil:
				return x.err
			case x.skipped:
				out.res.Skipped++ // the gateway's own event: no message
				return nil
			}
			if !started[x.id] {
				started[x.id] = true
				if err := out.put(enc.startRec(formatGHAW, map[string]any{"server_id": x.id}, tape.Meta{Server: x.server, Time: x.ts})); err != nil {
					return err
				}
			}
			return out.put(x.r.bytesIn(buf))
		})
	if err == nil && lines == 0 {
		err = &Error{Format: formatGHAW, Err: errors.New("expected rpc-messages.jsonl envelopes (JSON lines), found an empty input")}
	}
	return out.result(), err
}

// ghawWorker is a worker's state.
type ghawWorker struct {
	st  ghawState
	enc *recEncoder
	o   Options
}

// ghawRec is what a worker made of an envelope.
type ghawRec struct {
	err        error // the envelope's error
	skipped    bool  // the gateway's own event
	id, server string
	ts         time.Time
	r          rec
}

// ghawState is what reading a log carries from line to line.
type ghawState struct {
	peek tape.Peeker
	head msgHead // the payload's, when it is an object
	ts   utcParser
	// the last line's server_id and direction, kept while the next
	// line's bytes are the same
	serverIDs, dirs strMemo
	// an envelope's members, raw (nil when missing)
	typ, timestamp, serverID, direction, payload []byte
}

func (st *ghawState) set(key string, v []byte) {
	switch key {
	case "type":
		st.typ = v
	case "timestamp":
		st.timestamp = v
	case "server_id":
		st.serverID = v
	case "direction":
		st.direction = v
	case "payload":
		st.payload = v
	}
}

func ghawNode(path string, raw []byte) node { return node{format: formatGHAW, path: path, raw: raw} }

// ghawParse reads an envelope into x (zero before) and encodes its
// record (appended to buf).
func ghawParse(wk *ghawWorker, line, buf []byte, x *ghawRec) []byte {
	st, o := &wk.st, wk.o
	fail := func(err error) []byte { *x = ghawRec{err: err}; return buf }
	line = bytes.TrimSpace(line)
	// One pass validates the envelope and hands over its members; a line
	// it refuses is looked at again, to say why.
	st.typ, st.timestamp, st.serverID, st.direction, st.payload = nil, nil, nil, nil, nil
	st.head = msgHead{}
	if len(line) == 0 || line[0] != '{' || jsonscan.ObjectWalk(line, 0, 1, nil, func(k []byte, vs int) int {
		var ve int
		if line[vs] == '{' && string(k) == "payload" {
			ve = messageEnd(line, vs, 2, &st.head) // the message, walked as the Peeker would
		} else {
			ve = jsonscan.ValueEnd(line, vs, 1)
		}
		if ve < 0 {
			return -1
		}
		if hasBackslash(k) {
			st.set(unquoteKey(k), line[vs:ve])
		} else {
			st.set(string(k), line[vs:ve])
		}
		return ve
	}) != len(line) {
		env := root(formatGHAW, line)
		if !json.Valid(line) {
			var v any
			se := syntaxError(formatGHAW, line, json.Unmarshal(line, &v))
			se.Line, se.Column = 0, 0
			return fail(se)
		}
		return fail(env.errorf("expected an rpc-messages.jsonl envelope (an object), found %s", env.found()))
	}
	var typ string
	var err error
	switch string(st.typ) { // the usual words, without making a string of each
	case `"REQUEST"`:
		typ = "REQUEST"
	case `"RESPONSE"`:
		typ = "RESPONSE"
	default:
		if typ, err = ghawNode("$.type", st.typ).str(); err != nil {
			return fail(err)
		}
	}
	if typ != "REQUEST" && typ != "RESPONSE" {
		x.skipped = true
		return buf
	}
	ts, ok := st.ts.parse(st.timestamp)
	if !ok {
		if ts, err = ghawNode("$.timestamp", st.timestamp).time(); err != nil {
			return fail(err)
		}
	}
	id, err := st.serverIDs.str(ghawNode("$.server_id", st.serverID))
	if err != nil {
		return fail(err)
	}
	dirName, err := st.dirs.str(ghawNode("$.direction", st.direction))
	if err != nil {
		return fail(err)
	}
	server := o.Server
	if server == "" {
		server = id
	}
	if server == "" {
		server = "gateway"
	}
	m := tape.Meta{Server: server, Time: ts}
	switch {
	case dirName == "OUT", dirName == "" && typ == "REQUEST":
		m.Dir = tape.DirSend
	case dirName == "IN", dirName == "" && typ == "RESPONSE":
		m.Dir = tape.DirRecv
	default:
		return fail(ghawNode("$.direction", st.direction).errorf(`expected "IN" or "OUT", found %q`, dirName))
	}
	payload := ghawNode("$.payload", st.payload)
	if payload.absent() {
		return fail(payload.errorf("expected the JSON-RPC message of a %s, found nothing", typ))
	}
	msg := bytes.TrimSpace(payload.raw)
	object := msg[0] == '{'
	if msg[0] == '"' {
		s, err := payload.str()
		if err != nil {
			return fail(err)
		}
		msg = bytes.TrimSpace([]byte(s))
	}
	x.id, x.server, x.ts = id, server, ts
	if object {
		// Valid JSON (the envelope was): a message the Peeker reads as one
		// plain JSON-RPC message goes to the Encoder, its line the one
		// out.message would write.
		h, ok := st.head.head()
		if !ok || !st.head.of(msg) {
			h = st.peek.Peek(msg)
		}
		if h.Plain && h.Kind != tape.KindInvalid {
			x.r, buf = wk.enc.plain(buf, msg, m)
			return buf
		}
	}
	if checkMessage(msg) != nil {
		if len(msg) == 0 {
			msg = []byte(`""`)
		}
		x.r, buf = wk.enc.invalid(buf, msg, m)
		return buf
	}
	x.r, buf = wk.enc.message(buf, msg, m)
	return buf
}
