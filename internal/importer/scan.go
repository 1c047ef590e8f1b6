package importer

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// A small JSON scanner for the importers' hot paths: it validates a
// document by encoding/json's grammar (what json.Valid accepts, its
// nesting limit included) in one pass, skipping the runs of a string's
// plain bytes eight at a time, and hands the members of an object to a
// function as they are found, so that a line-based importer validates an
// envelope and reads its members (each value's bytes, taken as they are)
// without decoding it. A document it refuses is looked at again with
// encoding/json, only to say why.

// maxDepth is encoding/json's nesting limit (json.Valid refuses deeper).
const maxDepth = 10000

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// plainRun reports whether none of the 8 bytes of x ends or escapes a
// string or is a control character: no '"', '\\' or byte below 0x20.
func plainRun(x uint64) bool {
	q := x ^ (lsb * '"')
	s := x ^ (lsb * '\\')
	return ((q-lsb)&^q|(s-lsb)&^s|(x-lsb*0x20)&^x)&msb == 0
}

// scanString returns the index after the string starting at b[i] ('"'),
// or -1 when it is not a valid JSON string.
func scanString(b []byte, i int) int {
	i++
	for {
		for i+8 <= len(b) && plainRun(binary.LittleEndian.Uint64(b[i:])) {
			i += 8
		}
		if i >= len(b) {
			return -1
		}
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c == '\\':
			if i+1 >= len(b) {
				return -1
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex(b[i+2]) || !isHex(b[i+3]) || !isHex(b[i+4]) || !isHex(b[i+5]) {
					return -1
				}
				i += 6
			default:
				return -1
			}
		case c < 0x20:
			return -1
		default:
			i++
		}
	}
}

func isHex(c byte) bool { return c-'0' < 10 || (c|0x20)-'a' < 6 }

func isDigit(c byte) bool { return c-'0' < 10 }

// scanNumber returns the index after the number starting at b[i], or -1.
func scanNumber(b []byte, i int) int {
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i >= len(b):
		return -1
	case b[i] == '0':
		i++
	case isDigit(b[i]):
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if i >= len(b) || !isDigit(b[i]) {
			return -1
		}
		for i < len(b) && isDigit(b[i]) {
			i++
		}
	}
	return i
}

// scanValue returns the index after the value starting at b[i] (no
// whitespace before it), or -1 when there is no valid one.
func scanValue(b []byte, i, depth int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; c {
	case '"':
		return scanString(b, i)
	case '{':
		return scanObject(b, i, depth+1, nil)
	case '[':
		if depth+1 > maxDepth {
			return -1
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == ']' {
			return i + 1
		}
		for {
			if i = scanValue(b, i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			if b[i] == ']' {
				return i + 1
			}
			if b[i] != ',' {
				return -1
			}
			i = skipSpace(b, i+1)
		}
	case 't':
		return literal(b, i, "true")
	case 'f':
		return literal(b, i, "false")
	case 'n':
		return literal(b, i, "null")
	}
	return scanNumber(b, i)
}

func literal(b []byte, i int, lit string) int {
	if len(b)-i >= len(lit) && string(b[i:i+len(lit)]) == lit {
		return i + len(lit)
	}
	return -1
}

// scanObject validates the object starting at b[i] ('{') at nesting depth,
// calling f (when not nil) with each member's key (its bytes between the
// quotes, escapes and all) and value, in order, and returns the index after
// it, or -1 when it is not valid.
func scanObject(b []byte, i, depth int, f func(key, val []byte)) int {
	if depth > maxDepth {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for {
		if i >= len(b) || b[i] != '"' {
			return -1
		}
		ke := scanString(b, i)
		if ke < 0 {
			return -1
		}
		j := skipSpace(b, ke)
		if j >= len(b) || b[j] != ':' {
			return -1
		}
		vs := skipSpace(b, j+1)
		ve := scanValue(b, vs, depth)
		if ve < 0 {
			return -1
		}
		if f != nil {
			f(b[i+1:ke-1], b[vs:ve])
		}
		i = skipSpace(b, ve)
		if i >= len(b) {
			return -1
		}
		if b[i] == '}' {
			return i + 1
		}
		if b[i] != ',' {
			return -1
		}
		i = skipSpace(b, i+1)
	}
}

// validJSON is json.Valid.
func validJSON(b []byte) bool {
	i := scanValue(b, skipSpace(b, 0), 0)
	return i >= 0 && skipSpace(b, i) == len(b)
}

// members validates doc, a whole JSON document, and when it is an object
// calls f with each of its members' key (unescaped) and value in order (a
// later duplicate after an earlier one: keeping the last one is
// encoding/json's "last wins"). It reports whether doc is a valid object.
func members(doc []byte, f func(key string, val []byte)) bool {
	i := skipSpace(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return false
	}
	i = scanObject(doc, i, 1, func(k, v []byte) { f(unquoteKey(k), v) })
	return i >= 0 && skipSpace(doc, i) == len(doc)
}

// unquoteKey is the text of a member's key (its bytes between the quotes).
func unquoteKey(k []byte) string {
	if bytes.IndexByte(k, '\\') < 0 {
		return string(k)
	}
	var s string
	if json.Unmarshal(append(append([]byte{'"'}, k...), '"'), &s) != nil {
		return string(k)
	}
	return s
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
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

// unquote appends the text of raw, a JSON string scanString accepted, to
// dst, as encoding/json decodes it (an invalid UTF-8 byte or a lone
// surrogate becomes U+FFFD); ok false when raw is not such a string.
func unquote(dst, raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || scanString(raw, 0) != n {
		return dst, false
	}
	s := raw[1 : n-1]
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := u4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, u4(s[i+2:i+6])); d != unicode.ReplacementChar {
							dst = utf8.AppendRune(dst, d)
							i += 6
							continue
						}
					}
					r = unicode.ReplacementChar
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			j := i + 1
			for j < len(s) && s[j] < utf8.RuneSelf && s[j] != '\\' {
				j++
			}
			dst = append(dst, s[i:j]...)
			i = j
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, unicode.ReplacementChar)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return dst, true
}

// u4 is the value of four hex digits (scanString checked them).
func u4(h []byte) rune {
	var r rune
	for _, c := range h {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
