package export

import (
	"math"
	"strconv"
	"unicode/utf8"
)

// appendJSONString appends src quoted exactly as encoding/json quotes a
// string (with escapeHTML as json.Encoder.SetEscapeHTML sets it: < > &
// as \u003c \u003e \u0026), without reflection and crossing the bytes
// that need nothing eight at a time: the exporters write hundreds of
// megabytes of message bodies as JSON strings. TestAppendJSONStringAgrees
// holds it to encoding/json.
func appendJSONString[S ~string | ~[]byte](dst []byte, src S, escapeHTML bool) []byte {
	dst = append(dst, '"')
	start := 0
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	for i := 0; i < len(src); {
		// Eight bytes at a time while none is a control byte, '"', '\\',
		// non-ASCII, or (escapeHTML) '<', '>', '&'.
		for i+8 <= len(src) {
			w := uint64(src[i]) | uint64(src[i+1])<<8 | uint64(src[i+2])<<16 | uint64(src[i+3])<<24 |
				uint64(src[i+4])<<32 | uint64(src[i+5])<<40 | uint64(src[i+6])<<48 | uint64(src[i+7])<<56
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
		if i >= len(src) {
			break
		}
		b := src[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && !(escapeHTML && (b == '<' || b == '>' || b == '&')) {
				i++
				continue
			}
			dst = append(dst, src[start:i]...)
			switch b {
			case '\\', '"':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		n := min(len(src)-i, utf8.UTFMax)
		c, size := utf8.DecodeRuneInString(string(src[i : i+n]))
		if c == utf8.RuneError && size == 1 {
			dst = append(dst, src[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if c == '\u2028' || c == '\u2029' {
			dst = append(dst, src[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, src[start:]...)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONFloat appends f as encoding/json writes a float64 (which
// refuses NaN and infinities; they are written here as 0).
func appendJSONFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
