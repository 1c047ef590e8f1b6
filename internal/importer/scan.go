package importer

import (
	"bytes"
	"unicode/utf8"

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
