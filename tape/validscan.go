package tape

// The JSON validity check of ReadCallsMapped's scan (CallOptions.Alias):
// jsonscan.ValueEnd and ObjectEnd, step for step, with strings crossed
// faster. Most of a realistic tape's bytes are long plain strings (tool
// arguments, results): their closing quote is found with bytes.IndexByte
// and the bytes before it checked 32 at a time for a backslash or a
// control byte; a string that has one is left to jsonscan.StringEnd
// whole. TestValidScanAgrees holds them to jsonscan's.

import (
	"bytes"
	"encoding/binary"
	"math/bits"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// validStringEnd is jsonscan.StringEnd(b, i): the index after the valid
// JSON string at b[i] == '"', or -1.
func validStringEnd(b []byte, i int) int {
	j := i + 1
	if j+8 <= len(b) { // a short string (a name, a method) within a word
		w := binary.LittleEndian.Uint64(b[j:])
		q, bs := w^(ones8*'"'), w^(ones8*'\\')
		quotes := (q - ones8) &^ q & highs8
		odd := ((bs-ones8)&^bs | (w-ones8*0x20)&^w) & highs8
		if quotes != 0 {
			first := quotes & -quotes // the first quote's high bit (borrows only mark bytes after it)
			if odd&(first-1) == 0 {
				return j + bits.TrailingZeros64(first)/8 + 1
			}
			return jsonscan.StringEnd(b, i)
		}
		if odd != 0 {
			return jsonscan.StringEnd(b, i)
		}
		j += 8
	}
	k := bytes.IndexByte(b[j:], '"')
	if k < 0 {
		return -1 // not closed
	}
	if !plainRun(b[j : j+k]) {
		return jsonscan.StringEnd(b, i) // an escape or a control byte: the exact check
	}
	return j + k + 1
}

// plainRun reports whether s holds no backslash and no control byte (so
// that, between two quotes, it is a valid JSON string's text as it is).
func plainRun(s []byte) bool {
	if bytes.IndexByte(s, '\\') >= 0 {
		return false
	}
	for len(s) >= 32 {
		w0 := binary.LittleEndian.Uint64(s)
		w1 := binary.LittleEndian.Uint64(s[8:])
		w2 := binary.LittleEndian.Uint64(s[16:])
		w3 := binary.LittleEndian.Uint64(s[24:])
		if ((w0-ones8*0x20)&^w0|(w1-ones8*0x20)&^w1|(w2-ones8*0x20)&^w2|(w3-ones8*0x20)&^w3)&highs8 != 0 {
			return false
		}
		s = s[32:]
	}
	for _, c := range s {
		if c < 0x20 {
			return false
		}
	}
	return true
}

// validValueEnd is jsonscan.ValueEnd(b, i, depth): the index after the
// valid JSON value at b[i], nested depth deep, or -1.
func validValueEnd(b []byte, i, depth int) int {
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
		i = jsonscan.SkipSpace(b, i+1)
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
		i = jsonscan.SkipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto value
	case '"':
		if i = validStringEnd(b, i); i < 0 {
			return -1
		}
	default:
		if i = jsonscan.ValueEnd(b, i, depth+len(stack)); i < 0 { // a literal or a number
			return -1
		}
	}
after:
	if len(stack) == 0 {
		return i
	}
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) {
		return -1
	}
	switch top := stack[len(stack)-1]; {
	case b[i] == ',':
		i = jsonscan.SkipSpace(b, i+1)
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
	if i = validStringEnd(b, i); i < 0 {
		return -1
	}
	i = jsonscan.SkipSpace(b, i)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	goto value
}

// validObjectEnd is jsonscan.ObjectEnd(b, i, depth, f): it validates the
// object at b[i] == '{' at nesting depth, calling f with each member's
// key (its bytes between the quotes) and value, and returns the index
// after it, or -1.
func validObjectEnd(b []byte, i, depth int, f func(key, val []byte)) int {
	if depth > jsonscan.MaxDepth {
		return -1
	}
	i = jsonscan.SkipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ke := validStringEnd(b, i)
		if ke < 0 {
			return -1
		}
		j := jsonscan.SkipSpace(b, ke)
		if j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := jsonscan.SkipSpace(b, j+1)
		ve := validValueEnd(b, vs, depth)
		if ve < 0 {
			return -1
		}
		if f != nil {
			f(b[i+1:ke-1], b[vs:ve])
		}
		i = jsonscan.SkipSpace(b, ve)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = jsonscan.SkipSpace(b, i+1)
	}
}
