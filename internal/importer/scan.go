package importer

import (
	"bytes"
	"unicode/utf8"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// The importers' hot paths validate a document by encoding/json's grammar
// and read its members in one pass (jsonscan: ObjectEnd, Members), each
// value's bytes taken as they are, without decoding it. A document
// refused is looked at again with encoding/json, only to say why.

// members validates doc, a whole JSON document, and when it is an object
// calls f with each of its members' key (unescaped) and value in order (a
// later duplicate after an earlier one: keeping the last one is
// encoding/json's "last wins"). It reports whether doc is a valid object.
func members(doc []byte, f func(key string, val []byte)) bool {
	return jsonscan.Members(doc, func(k, v []byte) { f(unquoteKey(k), v) })
}

// hasBackslash reports whether k, a member's key (short), holds a
// backslash.
func hasBackslash(k []byte) bool {
	for _, c := range k {
		if c == '\\' {
			return true
		}
	}
	return false
}

// unquoteKey is the text of a member's key (its bytes between the quotes,
// which jsonscan checked).
func unquoteKey(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k)
	}
	return string(jsonscan.Unescape(nil, k))
}

func isDigit(c byte) bool { return c-'0' < 10 }

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// plainString returns the text of raw, a JSON string that holds no escape
// and only valid UTF-8, whose text is then its bytes; ok false otherwise
// (decode it with encoding/json).
func plainString(raw []byte) (string, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || raw[n-1] != '"' {
		return "", false
	}
	in := raw[1 : n-1]
	for _, c := range in {
		if c == '\\' || c == '"' || c < 0x20 {
			return "", false
		}
	}
	if !utf8.Valid(in) {
		return "", false
	}
	return string(in), true
}

// The line importers' one pass over a message (mcpsnoop's raw, gh-aw's
// payload): the envelope is validated by encoding/json's grammar as
// jsonscan validates it, and the message object inside it is walked in
// the same pass for what tape.Peeker reads of it (its top-level id,
// method, result, error and _meta), so that its bytes are crossed once
// before they are copied to the tape. Strings, most of a message's
// bytes, are crossed by bytes.IndexByte for their closing quote and a
// backslash, and a word-at-a-time check for control characters
// (jsonscan.StringEnd).

// msgHead is what one walk of a message object found of its top-level
// members, as tape.Peeker reads them: the last id's and method's bytes
// (nil when missing), and whether it has a result, an error, a _meta of
// its own.
type msgHead struct {
	msg                 []byte // the object walked
	id, method          []byte
	result, error, meta bool
	space               jsonscan.Space // the space between its tokens
}

// messageEnd validates the object at b[i] == '{' at nesting depth as
// jsonscan.ObjectEnd does and fills h with its top-level members.
func messageEnd(b []byte, i, depth int, h *msgHead) int {
	*h = msgHead{}
	end := jsonscan.ObjectWalk(b, i, depth, &h.space, func(key []byte, vs int) int {
		ve := jsonscan.ValueEndSpace(b, vs, depth, &h.space)
		if ve < 0 {
			return -1
		}
		switch string(key) {
		case "id":
			h.id = b[vs:ve]
		case "method":
			h.method = b[vs:ve]
		case "result":
			h.result = true
		case "error":
			h.error = true
		case "_meta", tape.AltMetaKey:
			h.meta = true
		}
		return ve
	})
	if end >= 0 {
		h.msg = b[i:end]
	}
	return end
}

// of reports whether h was made of msg (the same bytes in memory).
func (h *msgHead) of(msg []byte) bool {
	return len(h.msg) > 0 && len(h.msg) == len(msg) && &h.msg[0] == &msg[0]
}

// head is what tape.Peeker.Peek says of the valid object h was made of,
// when it is a request or notification with a string method not starting
// with '$' and a string or number id, or a response with such an id and a
// result or an error; ok false otherwise (ask the Peeker).
func (h *msgHead) head() (_ tape.Head, ok bool) {
	var k tape.Kind
	if h.id != nil && h.id[0] != '"' && h.id[0] != '-' && !isDigit(h.id[0]) {
		return tape.Head{}, false // null, or no id at all
	}
	switch {
	case h.method != nil:
		if h.method[0] != '"' || len(h.method) > 1 && h.method[1] == '$' || bytes.IndexByte(h.method, '\\') >= 0 {
			return tape.Head{}, false
		}
		k = tape.KindNotification
		if h.id != nil {
			k = tape.KindRequest
		}
	case h.id != nil && (h.result || h.error):
		k = tape.KindResponse
	default:
		return tape.Head{}, false
	}
	hd := tape.Head{Kind: k, ID: h.id}
	if h.method != nil {
		hd.Method = h.method[1 : len(h.method)-1]
	}
	// A valid object holds a line break only between its tokens (a
	// string holds none raw), where the walk saw it.
	hd.Plain = !h.meta && h.space&jsonscan.SpaceBreak == 0
	return hd, true
}
