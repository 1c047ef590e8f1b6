package compare

import "encoding/binary"

// keyIDs numbers call keys in the order they are first seen. The keys are
// hashes already, so their first eight bytes place them in an open
// addressing table (linear probing, at most three quarters full) rather
// than being hashed again as a map's keys are.
type keyIDs struct {
	slots []keySlot
	n     int // keys held
}

type keySlot struct {
	key  [16]byte
	id   rune
	used bool
}

// newKeyIDs makes a table for about n keys.
func newKeyIDs(n int) *keyIDs {
	size := 16
	for size*3/4 < n {
		size <<= 1
	}
	return &keyIDs{slots: make([]keySlot, size)}
}

// len is how many keys the table holds.
func (t *keyIDs) len() int { return t.n }

// get returns k's id, or false when k is not held.
func (t *keyIDs) get(k [16]byte) (rune, bool) {
	s := t.slot(k)
	return s.id, s.used
}

// put gives k, not held, the id.
func (t *keyIDs) put(k [16]byte, id rune) {
	if (t.n+1)*4 > len(t.slots)*3 {
		old := t.slots
		t.slots = make([]keySlot, 2*len(old))
		for _, s := range old {
			if s.used {
				*t.slot(s.key) = s
			}
		}
	}
	*t.slot(k) = keySlot{key: k, id: id, used: true}
	t.n++
}

// slot is k's slot, or the empty one where it would go.
func (t *keyIDs) slot(k [16]byte) *keySlot {
	mask := uint64(len(t.slots) - 1)
	for i := binary.LittleEndian.Uint64(k[:8]) & mask; ; i = (i + 1) & mask {
		if s := &t.slots[i]; !s.used || s.key == k {
			return s
		}
	}
}
