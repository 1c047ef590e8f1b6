package library

import (
	"math/rand/v2"
	"testing"
)

// stringEnd finds a string's end a word at a time: it must agree with a
// scan of every byte, escapes and all.
func TestStringEndAsScan(t *testing.T) {
	scan := func(b []byte, i int) (int, bool) {
		esc := false
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				esc = true
				j++
			case '"':
				return j + 1, esc
			}
		}
		return -1, esc
	}
	r := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`ab"\\ `)
	for n := range 20000 {
		b := make([]byte, 1+r.IntN(40))
		b[0] = '"'
		for i := 1; i < len(b); i++ {
			b[i] = alphabet[r.IntN(len(alphabet))]
		}
		w := textWalker{b: b}
		gotEnd, gotEsc := w.stringEnd(0)
		wantEnd, wantEsc := scan(b, 0)
		if gotEnd != wantEnd || (wantEnd >= 0 && gotEsc != wantEsc) {
			t.Fatalf("case %d: stringEnd(%q) = %d, %v; a scan says %d, %v", n, b, gotEnd, gotEsc, wantEnd, wantEsc)
		}
	}
}
