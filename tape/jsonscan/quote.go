package jsonscan

import "unicode/utf8"

// AppendQuoted appends s quoted exactly as encoding/json quotes a string,
// with escapeHTML as json.Encoder.SetEscapeHTML sets it (< > & as \u003c
// \u003e \u0026; json.Marshal escapes them, tape's Writer does not), without
// reflection, crossing the bytes that need nothing eight at a time.
func AppendQuoted[S ~string | ~[]byte](dst []byte, s S, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		// Eight bytes at a time while none is a control byte, '"', '\\',
		// non-ASCII, or (escapeHTML) '<', '>', '&'.
		for i+8 <= len(s) {
			w := word(s, i)
			q, bs := w^(ones*'"'), w^(ones*'\\')
			m := (q-ones)&^q | (bs-ones)&^bs | (w-ones*0x20)&^w | w
			if escapeHTML {
				lt, gt, amp := w^(ones*'<'), w^(ones*'>'), w^(ones*'&')
				m |= (lt-ones)&^lt | (gt-ones)&^gt | (amp-ones)&^amp
			}
			if m&highs != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			break
		}
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && !(escapeHTML && (b == '<' || b == '>' || b == '&')) {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			dst = AppendEscape(dst, b)
			i++
			start = i
			continue
		}
		n := min(len(s)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(s[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// AppendEscape appends the escape encoding/json writes for the ASCII byte
// c in a string: '"' and '\\' after a backslash, \b \f \n \r \t by name,
// any other as \u00XX.
func AppendEscape(dst []byte, c byte) []byte {
	switch c {
	case '\\', '"':
		return append(dst, '\\', c)
	case '\b':
		return append(dst, '\\', 'b')
	case '\f':
		return append(dst, '\\', 'f')
	case '\n':
		return append(dst, '\\', 'n')
	case '\r':
		return append(dst, '\\', 'r')
	case '\t':
		return append(dst, '\\', 't')
	}
	return append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
}

// Plain returns the index of the first byte of s at or after i that a JSON
// string cannot hold as it is, '"', '\\' or a control byte, or len(s).
func Plain[S ~string | ~[]byte](s S, i int) int {
	for {
		for i+8 <= len(s) {
			w := word(s, i)
			q, bs := w^(ones*'"'), w^(ones*'\\')
			// bytes below 0x20 (or with their high bit set, which are
			// plain: looked at one by one below), '"', '\\'
			if ((q-ones)&^q|(bs-ones)&^bs|(w-ones*0x20)&^w)&highs != 0 {
				break
			}
			i += 8
		}
		if i >= len(s) {
			return len(s)
		}
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
		i++
	}
}

// word is the eight bytes of s at i, little-endian.
func word[S ~string | ~[]byte](s S, i int) uint64 {
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

const hexDigits = "0123456789abcdef"
