// Package jsonscan is JSON scanning for the hot paths that read or write
// tapes' bytes without decoding them: a validity check that says what
// json.Valid says, the end of a value or a string, a string's text as
// encoding/json decodes it, and a string quoted as encoding/json quotes it.
// Each crosses a string's plain bytes eight or more at a time (most of a tape's
// bytes are in strings) and is held to encoding/json by a fuzz test.
//
// It sits under tape because tape uses it and imports no other tapedeck
// package (TestImportRules); the importers and exporters use it too.
package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math/bits"
)

// MaxDepth is encoding/json's limit on nesting: deeper is invalid.
const MaxDepth = 10000

// Valid reports what json.Valid(b) reports, without its per-byte state
// machine.
func Valid(b []byte) bool {
	i := ValueEnd(b, SkipSpace(b, 0), 0)
	return i >= 0 && SkipSpace(b, i) == len(b)
}

// SkipSpace returns the index of the first byte at or after b[i] that is
// not JSON white space.
func SkipSpace(b []byte, i int) int {
	return skipSpace(b, i, nil)
}

// ValueEnd returns the index after the valid JSON value at b[i] (no white
// space before it), nested depth deep (0 for a document), or -1.
func ValueEnd(b []byte, i, depth int) int {
	return ValueEndSpace(b, i, depth, nil)
}

// Space is the white space a scan crossed between tokens, as bits.
type Space uint8

const (
	SpaceAny   Space = 1 << iota // any white space
	SpaceBreak                   // a line break, '\n' or '\r'
)

// skipSpace is SkipSpace, adding to *sp (when not nil) what it skipped.
func skipSpace(b []byte, i int, sp *Space) int {
	if i < len(b) && b[i] > ' ' {
		return i // no space: most tokens of a compact line
	}
	return skipSomeSpace(b, i, sp)
}

func skipSomeSpace(b []byte, i int, sp *Space) int {
	var seen Space
	for ; i < len(b); i++ {
		switch b[i] {
		case ' ', '\t':
			seen |= SpaceAny
		case '\r', '\n':
			seen |= SpaceAny | SpaceBreak
		default:
			goto done
		}
	}
done:
	if sp != nil {
		*sp |= seen
	}
	return i
}

// ValueEndSpace is ValueEnd, adding to *sp (when not nil) the white space
// between the value's tokens (a valid value holds white space only there).
func ValueEndSpace(b []byte, i, depth int, sp *Space) int {
	var stackBuf [32]byte
	stack := stackBuf[:0]
value:
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '{':
		if stack = append(stack, '{'); depth+len(stack) > MaxDepth {
			return -1
		}
		i = skipSpace(b, i+1, sp)
		if i < len(b) && b[i] == '}' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto key
	case '[':
		if stack = append(stack, '['); depth+len(stack) > MaxDepth {
			return -1
		}
		i = skipSpace(b, i+1, sp)
		if i < len(b) && b[i] == ']' {
			stack = stack[:len(stack)-1]
			i++
			goto after
		}
		goto value
	case '"':
		if i = StringEnd(b, i); i < 0 {
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
		if i = NumberEnd(b, i); i < 0 {
			return -1
		}
	}
after:
	if len(stack) == 0 {
		return i
	}
	i = skipSpace(b, i, sp)
	if i >= len(b) {
		return -1
	}
	switch top := stack[len(stack)-1]; {
	case b[i] == ',':
		i = skipSpace(b, i+1, sp)
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
	if i = StringEnd(b, i); i < 0 {
		return -1
	}
	i = skipSpace(b, i, sp)
	if i >= len(b) || b[i] != ':' {
		return -1
	}
	i = skipSpace(b, i+1, sp)
	goto value
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// StringEnd returns the index after the valid JSON string at b[i] == '"',
// or -1: no control character, only JSON's escapes. Bytes that are not
// UTF-8 are valid (encoding/json reads each as U+FFFD).
//
// It crosses a string eight bytes at a time to its first quote, backslash
// or control byte (a short string, a key or a method, ends within the
// first word or two, and escapes close together are crossed without a
// call); past a few plain words the run is taken to be long (a tool's
// text): its next quote and backslash are found with bytes.IndexByte and
// the bytes before them checked 32 at a time for a control byte.
// TestStringEndAgrees and FuzzStringEnd hold it to a byte-at-a-time
// reading.
func StringEnd(b []byte, i int) int {
	i++
	q := -1 // the next quote at or after i, once looked for (a long run's)
	for {
		// Eight bytes at a time, up to shortWords words: the lowest flagged
		// byte is the first quote, backslash or control byte (a borrow
		// only runs upwards from a flagged byte).
		for n := 0; i+8 <= len(b); n++ {
			if n == shortWords {
				goto long
			}
			w := binary.LittleEndian.Uint64(b[i:])
			qq, bs := w^(ones*'"'), w^(ones*'\\')
			if m := ((qq-ones)&^qq | (bs-ones)&^bs | (w-ones*0x20)&^w) & highs; m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				goto special
			}
			i += 8
		}
		for i < len(b) && b[i] != '"' && b[i] != '\\' && b[i] >= 0x20 {
			i++
		}
		if i >= len(b) {
			return -1
		}
		goto special
	long:
		// A long run: the next quote (already found when an escape came
		// before it), the first backslash before it, and no control byte
		// before that.
		if q < i {
			k := bytes.IndexByte(b[i:], '"')
			if k < 0 {
				return -1
			}
			q = i + k
		}
		if k := bytes.IndexByte(b[i:q], '\\'); k >= 0 {
			if hasControl(b[i : i+k]) {
				return -1
			}
			i += k
		} else {
			if hasControl(b[i:q]) {
				return -1
			}
			return q + 1
		}
	special:
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		}
		// A backslash.
		if i+1 >= len(b) {
			return -1
		}
		switch b[i+1] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			i += 2
		case 'u':
			if i+5 >= len(b) {
				return -1
			}
			for _, h := range b[i+2 : i+6] {
				if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
					return -1
				}
			}
			i += 6
		default:
			return -1
		}
	}
}

// shortWords is how many plain words StringEnd crosses one at a time
// before it takes the run for a long one.
const shortWords = 3

// hasControl reports whether s holds a byte below 0x20 (a raw control
// character, which no JSON string may hold).
func hasControl(s []byte) bool {
	i := 0
	for ; i+32 <= len(s); i += 32 {
		p := s[i : i+32 : i+32]
		w0 := binary.LittleEndian.Uint64(p[0:])
		w1 := binary.LittleEndian.Uint64(p[8:])
		w2 := binary.LittleEndian.Uint64(p[16:])
		w3 := binary.LittleEndian.Uint64(p[24:])
		if ((w0-ones*0x20)&^w0|(w1-ones*0x20)&^w1|(w2-ones*0x20)&^w2|(w3-ones*0x20)&^w3)&highs != 0 {
			return true
		}
	}
	for ; i+8 <= len(s); i += 8 {
		if w := binary.LittleEndian.Uint64(s[i:]); (w-ones*0x20)&^w&highs != 0 {
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

// NumberEnd returns the index after the JSON number at b[i], or -1.
func NumberEnd(b []byte, i int) int {
	digits := func(i int) int {
		j := i
		for j < len(b) && '0' <= b[j] && b[j] <= '9' {
			j++
		}
		return j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = digits(i)
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		j := digits(i + 1)
		if j == i+1 {
			return -1
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := digits(i)
		if j == i {
			return -1
		}
		i = j
	}
	return i
}

// Members validates doc, a whole JSON document, and when it is an object
// calls f with each of its members' key (its bytes between the quotes,
// escapes and all: Unescape reads them) and value, in order, as ObjectEnd
// does. It reports whether doc is a valid object.
func Members(doc []byte, f func(key, val []byte)) bool {
	i := SkipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	i = ObjectEnd(doc, i, 1, f)
	return i >= 0 && SkipSpace(doc, i) == len(doc)
}

// ObjectEnd validates the object at b[i] == '{' at nesting depth (1 for a
// document's), calling f (when not nil) with each member's key (its bytes
// between the quotes, escapes and all) and value, in order, and returns
// the index after it, or -1 when it is not valid (f may have been called
// for the members before the fault).
func ObjectEnd(b []byte, i, depth int, f func(key, val []byte)) int {
	return ObjectWalk(b, i, depth, nil, func(key []byte, vs int) int {
		ve := ValueEnd(b, vs, depth)
		if ve >= 0 && f != nil {
			f(key, b[vs:ve])
		}
		return ve
	})
}

// ObjectWalk validates the object at b[i] == '{' at nesting depth as
// ObjectEnd does, with each member's value read by value(key, vs): key
// its bytes between the quotes, escapes and all, vs where its value
// starts (after any white space); value returns the value's end, -1 when
// it is not valid (ValueEnd or ValueEndSpace at depth, or a walk of its
// own). It adds to *sp (when not nil) the white space between the
// object's members, and returns the index after it, or -1.
func ObjectWalk(b []byte, i, depth int, sp *Space, value func(key []byte, vs int) int) int {
	if depth > MaxDepth {
		return -1
	}
	i = skipSpace(b, i+1, sp)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ke := StringEnd(b, i)
		if ke < 0 {
			return -1
		}
		j := skipSpace(b, ke, sp)
		if j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := skipSpace(b, j+1, sp)
		if vs >= len(b) {
			return -1
		}
		ve := value(b[i+1:ke-1], vs)
		if ve < 0 {
			return -1
		}
		i = skipSpace(b, ve, sp)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1, sp)
	}
}
