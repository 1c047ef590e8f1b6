package importer

import (
	"encoding/binary"
	"math/bits"
)

// The string scanning of the trace importers' fast paths: a trace input
// is mostly strings (each carried record escaped in one), so their ends
// are found eight bytes at a time, escapes and all.

const (
	ones8  = 0x0101010101010101
	highs8 = 0x8080808080808080
)

// strEnd returns the index after the valid JSON string at b[i] == '"', or
// -1: what jsonscan.StringEnd returns (no control character, only JSON's
// escapes), eight bytes at a time past each escape too instead of a byte
// at a time after the first.
func strEnd(b []byte, i int) int {
	i++
	for {
		// Eight bytes at a time to the first quote, backslash or control
		// character: the lowest flagged byte is the first such byte (a
		// borrow only runs upwards from a flagged one).
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			q, bs := w^(ones8*'"'), w^(ones8*'\\')
			if m := ((q-ones8)&^q | (bs-ones8)&^bs | (w-ones8*0x20)&^w) & highs8; m != 0 {
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
