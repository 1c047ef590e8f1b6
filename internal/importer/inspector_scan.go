package importer

import (
	"bytes"

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
		ke := stringEnd(t, i)
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
		if i = stringEnd(b, i); i < 0 {
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
	if i = stringEnd(b, i); i < 0 {
		return -1
	}
	i = skipWS(b, i, ws)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	i = skipWS(b, i+1, ws)
	goto value
}
