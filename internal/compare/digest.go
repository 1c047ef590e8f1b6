package compare

import (
	"bytes"
	"encoding/binary"
	"hash/maphash"
)

// A call's key is a hash of its canonical params, and most of their bytes
// are in a few long strings (a query, a document): copying those into the
// canonical bytes, moving them again when their object's members are put
// in key order, then hashing the whole twice costs more than the scan.
// So the key is taken of the canonical bytes with every string value
// longer than digestMin bytes written as its digest instead: 0xFF (a byte
// canonical JSON never holds: the scan takes only valid UTF-8), a 64-bit
// hash of the string's bytes (quotes included, one pass) and its length.
// Equal canonical bytes give equal digested bytes; unequal ones give
// unequal digested bytes but where two long strings of one length collide
// in 64 bits (the key over the digested bytes is 128 bits).

// digestMin is the length (quotes included) above which a string value is
// digested.
const digestMin = 64

// digestLen is the length of a digested string.
const digestLen = 1 + 16

// digester writes strings' digests, with the seeds of the keys.
type digester struct {
	seed maphash.Seed
}

// str appends the digest of the string tok (quotes included) to dst.
func (d *digester) str(dst, tok []byte) []byte {
	dst = append(dst, 0xFF)
	dst = binary.LittleEndian.AppendUint64(dst, maphash.Bytes(d.seed, tok))
	return binary.LittleEndian.AppendUint64(dst, uint64(len(tok)))
}

// canon appends to dst the canonical JSON canon (compact, as
// tape.CanonicalValue writes it) with its long string values digested, as
// the scan writes them with a digester: what a key decoded by the slow
// path is hashed from. Keys (a string followed by ':') are kept.
func (d *digester) canon(dst, canon []byte) []byte {
	for i := 0; i < len(canon); {
		q := bytes.IndexByte(canon[i:], '"')
		if q < 0 {
			return append(dst, canon[i:]...)
		}
		q += i
		dst = append(dst, canon[i:q]...)
		end, ok := skipStr(canon, q)
		if !ok {
			return append(dst, canon[q:]...)
		}
		if tok := canon[q:end]; len(tok) > digestMin && (end == len(canon) || canon[end] != ':') {
			dst = d.str(dst, tok)
		} else {
			dst = append(dst, tok...)
		}
		i = end
	}
	return dst
}
