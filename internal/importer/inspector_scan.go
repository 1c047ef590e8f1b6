package importer

import (
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
	// what the scan found of the message's and response's top-level
	// members, when they are objects (what tape.Peeker reads of them,
	// found without a second walk)
	msgHead, respHead msgHead
	ts                utcParser // the timestamps'
}

// object validates the element at t[i] == '{' (an element of the
// document's array, so at depth 1) as jsonscan.ObjectEnd(t, i, 2, ...)
// does, keeping its members; it returns the index after it, or -1.
func (s *inspectorScan) object(t []byte, i int) int {
	s.e, s.msgWS, s.respWS = inspectorEntry{}, false, false
	s.msgHead.msg, s.respHead.msg = nil, nil
	const depth = 2
	i = jsonscan.SkipSpace(t, i+1)
	if i < len(t) && t[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(t) || t[i] != '"' {
			return -1
		}
		ke := jsonscan.StringEnd(t, i)
		if ke < 0 {
			return -1
		}
		j := jsonscan.SkipSpace(t, ke)
		if j >= len(t) || t[j] != ':' {
			return -1
		}
		vs := jsonscan.SkipSpace(t, j+1)
		m := inspectorMemberOf(t[i+1 : ke-1])
		var ve int
		var ws bool
		switch {
		case m == memberMessage && vs < len(t) && t[vs] == '{':
			ve = messageEnd(t, vs, depth+1, &s.msgHead) // the message is an object nested in the element
			ws = s.msgHead.space&jsonscan.SpaceAny != 0
		case m == memberResponse && vs < len(t) && t[vs] == '{':
			ve = messageEnd(t, vs, depth+1, &s.respHead)
			ws = s.respHead.space&jsonscan.SpaceAny != 0
		default:
			var sp jsonscan.Space
			ve = jsonscan.ValueEndSpace(t, vs, depth, &sp)
			ws = sp&jsonscan.SpaceAny != 0
		}
		if ve < 0 {
			return -1
		}
		s.e.setMember(m, t[vs:ve])
		switch m {
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
