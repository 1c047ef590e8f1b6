package importer

import (
	"bytes"
	"encoding/binary"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Scanning the export's array in one pass: each element is validated and
// its members found (jsonscan's scanners, eight string bytes at a time),
// and the pass notes whether a message has white space between its
// tokens, so that one that has none (a compact export) is kept as a
// reference into the document instead of being walked again to compact
// it.

// inspectorMember names the members of a MessageEntry the import reads.
const (
	memberNone = iota
	memberTimestamp
	memberDirection
	memberOrigin
	memberMessage
	memberResponse
	memberDuration
)

// inspectorScan is the element scanner's state: the members of the
// element being scanned and whether the message and response have white
// space between their tokens.
type inspectorScan struct {
	e             inspectorEntry
	msgWS, respWS bool
}

// object validates the element at t[i] == '{' (an element of the
// document's array, so at depth 1) as jsonscan.ObjectEnd(t, i, 2, ...)
// does, keeping its members; it returns the index after it, or -1.
func (s *inspectorScan) object(t []byte, i int) int {
	s.e, s.msgWS, s.respWS = inspectorEntry{}, false, false
	const depth = 2
	i = jsonscan.SkipSpace(t, i+1)
	if i < len(t) && t[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(t) || t[i] != '"' {
			return -1
		}
		ke := inspectorStringEnd(t, i)
		if ke < 0 {
			return -1
		}
		j := jsonscan.SkipSpace(t, ke)
		if j >= len(t) || t[j] != ':' {
			return -1
		}
		vs := jsonscan.SkipSpace(t, j+1)
		ws := false
		ve := valueEndWS(t, vs, depth, &ws)
		if ve < 0 {
			return -1
		}
		switch s.e.set(t[i+1:ke-1], t[vs:ve]) {
		case memberMessage:
			s.msgWS = ws
		case memberResponse:
			s.respWS = ws
		}
		i = jsonscan.SkipSpace(t, ve)
		if i >= len(t) {
			return -1
		}
		if t[i] == '}' {
			return i + 1
		}
		if t[i] != ',' {
			return -1
		}
		i = jsonscan.SkipSpace(t, i+1)
	}
}

// skipWS is jsonscan.SkipSpace, setting *ws when it skipped any.
func skipWS(b []byte, i int, ws *bool) int {
	j := jsonscan.SkipSpace(b, i)
	if j != i {
		*ws = true
	}
	return j
}

// valueEndWS is jsonscan.ValueEnd (the index after the valid JSON value at
// b[i], nested depth deep, or -1), setting *ws when the value has white
// space between its tokens.
func valueEndWS(b []byte, i, depth int, ws *bool) int {
	var stackBuf [32]byte
	stack := stackBuf[:0]
value:
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '{':
		if stack = append(stack, '{'); depth+len(stack) > jsonscan.MaxDepth {
			return -1
		}
		i = skipWS(b, i+1, ws)
		if i < len(b) && b[i] == '}' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto key
	case '[':
		if stack = append(stack, '['); depth+len(stack) > jsonscan.MaxDepth {
			return -1
		}
		i = skipWS(b, i+1, ws)
		if i < len(b) && b[i] == ']' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto value
	case '"':
		if i = inspectorStringEnd(b, i); i < 0 {
			return -1
		}
	case 't':
		if !bytes.HasPrefix(b[i:], []byte("true")) {
			return -1
		}
		i += 4
	case 'f':
		if !bytes.HasPrefix(b[i:], []byte("false")) {
			return -1
		}
		i += 5
	case 'n':
		if !bytes.HasPrefix(b[i:], []byte("null")) {
			return -1
		}
		i += 4
	default:
		if i = jsonscan.NumberEnd(b, i); i < 0 {
			return -1
		}
	}
after:
	if len(stack) == 0 {
		return i
	}
	i = skipWS(b, i, ws)
	if i >= len(b) {
		return -1
	}
	switch top := stack[len(stack)-1]; {
	case b[i] == ',':
		i = skipWS(b, i+1, ws)
		if top == '{' {
			goto key
		}
		goto value
	case top == '{' && b[i] == '}', top == '[' && b[i] == ']':
		stack = stack[:len(stack)-1]
		i++
		goto after
	}
	return -1
key:
	if i >= len(b) || b[i] != '"' {
		return -1
	}
	if i = inspectorStringEnd(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i, ws)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	i = skipWS(b, i+1, ws)
	goto value
}

// inspectorStringEnd is jsonscan.StringEnd (the index after the valid JSON
// string at b[i] == '"', or -1) for long strings: the closing quote and
// each backslash found by bytes.IndexByte, and the bytes between them
// checked for control characters 32 at a time; escapes do not slow the
// rest of the string down.
func inspectorStringEnd(b []byte, i int) int {
	i++
	q := -1 // the next quote at or after i, once found
	for {
		if q < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return -1
			}
			q = i + k
		}
		seg := b[i:q]
		k := bytes.IndexByte(seg, '\\')
		if k < 0 {
			if hasControl(seg) {
				return -1
			}
			return q + 1
		}
		if hasControl(seg[:k]) {
			return -1
		}
		i += k + 1 // the escaped character
		if i >= len(b) {
			return -1
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i++
		case 'u':
			if i+4 >= len(b) {
				return -1
			}
			for _, h := range b[i+1 : i+5] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return -1
				}
			}
			i += 5
		default:
			return -1
		}
	}
}

// hasControl reports whether s holds a byte below 0x20.
func hasControl(s []byte) bool {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	const k = ones * 0x20
	i := 0
	for ; i+32 <= len(s); i += 32 {
		w0 := binary.LittleEndian.Uint64(s[i:])
		w1 := binary.LittleEndian.Uint64(s[i+8:])
		w2 := binary.LittleEndian.Uint64(s[i+16:])
		w3 := binary.LittleEndian.Uint64(s[i+24:])
		if ((w0-k)&^w0|(w1-k)&^w1|(w2-k)&^w2|(w3-k)&^w3)&highs != 0 {
			return true
		}
	}
	for ; i+8 <= len(s); i += 8 {
		w := binary.LittleEndian.Uint64(s[i:])
		if (w-k)&^w&highs != 0 {
			return true
		}
	}
	for ; i < len(s); i++ {
		if s[i] < 0x20 {
			return true
		}
	}
	return false
}
