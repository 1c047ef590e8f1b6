package jsonscan

import (
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Unquote appends the text of raw, a whole JSON string (quotes included),
// to dst as encoding/json decodes it (an invalid UTF-8 byte or a lone
// surrogate becomes U+FFFD); ok false when raw is not a valid JSON string.
func Unquote(dst, raw []byte) ([]byte, bool) {
	n := len(raw)
	if n < 2 || raw[0] != '"' || StringEnd(raw, 0) != n {
		return dst, false
	}
	return Unescape(dst, raw[1:n-1]), true
}

// Unescape appends the text of s, a JSON string's bytes between its quotes
// that StringEnd accepted, to dst as encoding/json decodes it (an invalid
// UTF-8 byte or a lone surrogate becomes U+FFFD).
func Unescape(dst, s []byte) []byte {
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
				r := Hex4(s[i+2 : i+6])
				i += 6
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, Hex4(s[i+2:i+6])); d != unicode.ReplacementChar {
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
	return dst
}

// Hex4 is the value of h, four hex digits (as a \u escape that StringEnd
// accepted has them).
func Hex4(h []byte) rune {
	var r rune
	for _, c := range h[:4] {
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
