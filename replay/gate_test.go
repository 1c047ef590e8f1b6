package replay

import (
	"slices"
	"testing"
)

// TestGate: what the engine makes itself always passes; a held output goes
// out once Release lets its tape message through, in the order held;
// Release never takes back; Drop forgets what is held, not what was let
// through.
func TestGate(t *testing.T) {
	var g Gate[string]
	if !g.Pass(-1) || g.Pass(0) {
		t.Fatalf("a zero gate: Pass(-1) %v, Pass(0) %v; want true, false", g.Pass(-1), g.Pass(0))
	}
	g.Hold(3, "c")
	g.Hold(1, "a")
	g.Hold(2, "b")
	if got := g.Release(2); !slices.Equal(got, []string{"a"}) {
		t.Errorf("Release(2) = %q, want [a]", got)
	}
	if got := g.Release(1); len(got) != 0 || !g.Pass(1) {
		t.Errorf("Release(1) after Release(2) = %q, Pass(1) %v; want nothing, true", got, g.Pass(1))
	}
	if got := g.Release(4); !slices.Equal(got, []string{"c", "b"}) {
		t.Errorf("Release(4) = %q, want [c b], in the order held", got)
	}
	g.Hold(5, "e")
	g.Hold(6, "f")
	if n := g.Drop(); n != 2 {
		t.Errorf("Drop() = %d, want 2", n)
	}
	if got := g.Release(10); len(got) != 0 {
		t.Errorf("Release(10) after Drop = %q, want nothing", got)
	}
	if !g.Pass(3) {
		t.Error("Drop took back what Release had let through")
	}
}
