package tape

// The JSON scanner's primitives the classifier walks a line with: members
// of an object, values skipped with their structure checked, strings, and
// a line's UTF-8 check. They allocate only their errors.

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/bits"
	"unicode/utf8"
)

// asciiOrValidUTF8 is utf8.Valid with a faster walk over ASCII, 64 bytes at a
// time: most of a tape is ASCII.
func asciiOrValidUTF8(b []byte) bool {
	return utf8.Valid(b[asciiBlocks(b):]) // nothing before it is a sequence's start
}

// isASCII reports whether b holds no byte above 0x7f.
func isASCII(b []byte) bool {
	i := asciiBlocks(b)
	if len(b)-i >= 64 {
		return false
	}
	for _, c := range b[i:] {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// asciiBlocks returns the length of b's longest prefix of whole 64-byte
// blocks that are ASCII.
func asciiBlocks(b []byte) int {
	i := 0
	for ; i+64 <= len(b); i += 64 {
		p := b[i : i+64 : i+64]
		w := binary.LittleEndian.Uint64(p[0:]) | binary.LittleEndian.Uint64(p[8:]) |
			binary.LittleEndian.Uint64(p[16:]) | binary.LittleEndian.Uint64(p[24:]) |
			binary.LittleEndian.Uint64(p[32:]) | binary.LittleEndian.Uint64(p[40:]) |
			binary.LittleEndian.Uint64(p[48:]) | binary.LittleEndian.Uint64(p[56:])
		if w&0x8080808080808080 != 0 {
			break
		}
	}
	return i
}

// members walks the object at b[i] == '{', calling fn with each key (without
// quotes, escapes left as they are) and the span of its value. It returns the
// index just after the closing brace.
func (c *classifier) members(b []byte, i int, fn func(key []byte, v span)) (int, error) {
	i = skipWS(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, nil
	}
	for {
		var key []byte
		var err error
		// The commonest member, a short name written "key":value (no
		// escape, no space), read here with no call to memberName.
		if i < len(b) && b[i] == '"' {
			if e := shortString(b, i); e > 0 && e+1 < len(b) && b[e] == ':' && b[e+1] > ' ' {
				key, i = b[i+1:e-1], e+1
			}
		}
		if key == nil {
			if key, i, err = memberName(b, i); err != nil {
				return 0, err
			}
		}
		vend := 0
		if i < len(b) && b[i] == '"' { // the commonest value, a short string, with no call
			vend = shortString(b, i)
		}
		if vend == 0 {
			if vend, err = c.skipValue(b, i); err != nil {
				return 0, fmt.Errorf("member %q: %w", key, err)
			}
		}
		fn(key, span{i, vend})
		i = skipWS(b, vend)
		if i < len(b) && b[i] == ',' {
			i = skipWS(b, i+1)
			continue
		}
		if i < len(b) && b[i] == '}' {
			return i + 1, nil
		}
		return 0, fmt.Errorf("expected ',' or '}' after member %q at column %d, found %s", key, i+1, found(b, i))
	}
}

// memberName reads the member name at b[i] and the ':' after it: the name
// (without quotes, escapes left as they are) and where its value starts.
func memberName(b []byte, i int) (key []byte, v int, err error) {
	if i >= len(b) || b[i] != '"' {
		return nil, 0, fmt.Errorf("expected a member name at column %d, found %s", i+1, found(b, i))
	}
	kend := shortString(b, i)
	if kend == 0 {
		if kend, err = skipString(b, i); err != nil {
			return nil, 0, err
		}
	}
	key = b[i+1 : kend-1]
	if kend+1 < len(b) && b[kend] == ':' && b[kend+1] > ' ' { // "key":value, as writers write it: no space to skip
		return key, kend + 1, nil
	}
	i = skipWS(b, kend)
	if i >= len(b) || b[i] != ':' {
		return nil, 0, fmt.Errorf("expected ':' after member %q at column %d, found %s", key, i+1, found(b, i))
	}
	return key, skipWS(b, i+1), nil
}

// skipValue returns the index just after the JSON value starting at b[i].
// It checks structure (strings closed, brackets matched) but not the
// contents of literals and strings: bodies are decoded lazily, when needed.
func (c *classifier) skipValue(b []byte, i int) (int, error) {
	if i >= len(b) {
		return 0, fmt.Errorf("expected a value at column %d, found end of line", i+1)
	}
	switch b[i] {
	case '"':
		if e := shortString(b, i); e > 0 {
			return e, nil
		}
		return skipString(b, i)
	case '{', '[':
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', 't', 'f', 'n':
		// A literal: up to the next delimiter (its first byte is none).
		// One pass, with no call: a tape's ids, numbers and true/false
		// are many and short.
		j, odd := i+1, false
		for ; j < len(b); j++ {
			ch := b[j]
			if isDelim(ch) {
				break
			}
			if ch == '"' || ch == '{' || ch == '[' {
				odd = true
			}
		}
		if odd {
			c.oddLiteral = true // a bracket scan of the object around it reads it otherwise
		}
		return j, nil
	default:
		return 0, fmt.Errorf("expected a value at column %d, found %s", i+1, found(b, i))
	}
	start := i
	stack := c.stack[:0]
	for i < len(b) {
		switch ch := b[i]; ch {
		case '"':
			j := shortString(b, i)
			if j == 0 {
				var err error
				if j, err = skipString(b, i); err != nil {
					c.stack = stack
					return 0, err
				}
			}
			i = j
			continue
		case '{', '[':
			stack = append(stack, ch)
		case '}', ']':
			open := byte('{')
			if ch == ']' {
				open = '['
			}
			if len(stack) == 0 || stack[len(stack)-1] != open {
				c.stack = stack
				return 0, fmt.Errorf("unbalanced %q at column %d in the value starting at column %d", ch, i+1, start+1)
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				c.stack = stack
				return i + 1, nil
			}
		}
		i++
	}
	c.stack = stack
	return 0, fmt.Errorf("expected the value starting at column %d to close, found end of line (%d still open)", start+1, len(stack))
}

// skipString returns the index after the string starting at b[i] == '"'.
// The first bytes are looked at a word at a time (most strings of a tape
// are short: member names, methods, times), the rest through
// bytes.IndexByte.
func skipString(b []byte, i int) (int, error) {
	j := i + 1
	for n := 0; n < 4 && j+8 <= len(b); n++ {
		x := binary.LittleEndian.Uint64(b[j:]) ^ 0x2222222222222222 // a '"' is a zero byte
		t := (x - 0x0101010101010101) &^ x & 0x8080808080808080
		if t == 0 {
			j += 8
			continue
		}
		q := j + bits.TrailingZeros64(t)/8 // the first zero byte: the borrow only marks bytes after it
		if backslashesBefore(b, q, i)%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
	for {
		k := bytes.IndexByte(b[j:], '"')
		if k < 0 {
			return 0, fmt.Errorf("expected the string starting at column %d to close, found end of line", i+1)
		}
		q := j + k
		if backslashesBefore(b, q, i)%2 == 0 {
			return q + 1, nil
		}
		j = q + 1
	}
}

// shortString returns the end of the string at b[i] when it closes within
// the next word, its quote after no backslash, else 0.
func shortString(b []byte, i int) int {
	if i+9 > len(b) {
		return 0
	}
	p := (*[9]byte)(b[i:]) // one bounds check for the loads below
	x := binary.LittleEndian.Uint64(p[1:]) ^ 0x2222222222222222
	t := (x - 0x0101010101010101) &^ x & 0x8080808080808080
	k := bits.TrailingZeros64(t) >> 3 // the quote is p[k+1]; 8 when t is 0
	if k < 8 && p[k] != '\\' {
		return i + k + 2
	}
	return 0
}

// backslashesBefore counts the backslashes just before b[q], after b[i].
func backslashesBefore(b []byte, q, i int) int {
	bs := 0
	for p := q - 1; p > i && b[p] == '\\'; p-- {
		bs++
	}
	return bs
}

func isDelim(c byte) bool { return delims[c] }

// delims marks the bytes that end a literal: one load instead of eight
// comparisons for each byte of a number.
var delims = [256]bool{',': true, '}': true, ']': true, ' ': true, '\t': true, '\r': true, '\n': true, ':': true}

func skipWS(b []byte, i int) int {
	// Most calls find no space: one comparison decides (every space is <= ' ').
	for uint(i) < uint(len(b)) && b[i] <= ' ' && (b[i] == ' ' || b[i] == '\t' || b[i] == '\r' || b[i] == '\n') {
		i++
	}
	return i
}

// found describes what stands at b[i], for error messages.
func found(b []byte, i int) string {
	if i >= len(b) {
		return "end of line"
	}
	r, _ := utf8.DecodeRune(b[i:])
	if r == utf8.RuneError {
		return fmt.Sprintf("byte 0x%02x", b[i])
	}
	return fmt.Sprintf("%q", r)
}
