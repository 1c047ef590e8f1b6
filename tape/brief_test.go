package tape

import (
	"os"
	"path/filepath"
	"testing"
)

// TestBriefsAgree: a message's Brief says what Entry, Pair, Failure,
// Negotiation and MethodOf say of it, read one at a time or a few at once
// (Briefs, from any seq, a short last run).
func TestBriefsAgree(t *testing.T) {
	paths, _ := filepath.Glob("../testdata/*.jsonl")
	more, _ := filepath.Glob("../testdata/hostile/*.jsonl")
	synth := filepath.Join(t.TempDir(), "synth.jsonl") // odd lines among a synthetic tape's
	if err := os.WriteFile(synth, parallelTape(t, SynthDefault, 6000, ""), 0o644); err != nil {
		t.Fatal(err)
	}
	paths = append(append(paths, more...), "testdata/oauth-stepup.tape.jsonl", synth)
	checked := 0
	for _, path := range paths {
		x, err := OpenIndex(path)
		if err != nil {
			continue // not a tape an index is made of
		}
		buf := make([]Brief, 3)
		for from := 0; from < x.Len(); from += len(buf) {
			bs := x.Briefs(from, buf[:0])
			if want := min(len(buf), x.Len()-from); len(bs) != want {
				t.Fatalf("%s: Briefs from %d gave %d, want %d", path, from, len(bs), want)
			}
			for j, b := range bs {
				i := from + j
				e, p := x.Entry(i), x.Pair(i)
				want := Brief{
					Server: e.Server, Method: x.MethodOf(i), Timed: !e.Time.IsZero(),
					Partner: p.Partner, Kind: e.Kind, Dir: e.Dir,
					Cancelled: p.Cancelled, Late: p.Late, Negotiation: x.Negotiation(i),
				}
				if want.Timed {
					want.Time = e.Time.UnixNano()
				} else {
					want.Time = b.Time // unknown: any value
				}
				if e.Kind == KindResponse {
					want.Failure = x.Failure(i)
				}
				if b != want || x.Brief(i) != b {
					t.Fatalf("%s: message %d: Brief %+v, want %+v", path, i, b, want)
				}
				checked++
			}
		}
		x.Close()
	}
	if checked < 1000 {
		t.Fatalf("expected at least 1000 messages checked, found %d", checked)
	}
}
