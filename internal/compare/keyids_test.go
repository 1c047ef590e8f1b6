package compare

import (
	"math/rand/v2"
	"testing"
)

// TestKeyIDs: the table gives each key the id it was put with, whatever
// the keys' first bytes (all alike, to collide, or random), across its
// growth, and holds no key not put.
func TestKeyIDs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, alike := range []bool{false, true} {
		ids := newKeyIDs(3)
		want := map[[16]byte]rune{}
		for i := range 5000 {
			var k [16]byte
			for j := range k {
				k[j] = byte(rng.Uint32())
			}
			if alike {
				copy(k[:8], "samehash")
			}
			if i%3 == 0 && len(want) > 0 {
				// a key already held
				for h := range want {
					k = h
					break
				}
			}
			got, ok := ids.get(k)
			if w, held := want[k]; held != ok || held && got != w {
				t.Fatalf("key %x: %d %v, want %d %v", k, got, ok, w, held)
			}
			if !ok {
				want[k] = rune(ids.len())
				ids.put(k, rune(ids.len()))
			}
		}
		if ids.len() != len(want) {
			t.Fatalf("%d keys held, want %d", ids.len(), len(want))
		}
		for k, w := range want {
			if got, ok := ids.get(k); !ok || got != w {
				t.Fatalf("key %x: %d %v after growth, want %d", k, got, ok, w)
			}
		}
	}
}
