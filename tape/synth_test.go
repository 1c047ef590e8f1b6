package tape

import (
	"bytes"
	"strings"
	"testing"
)

// TestSynthRealistic: the realistic profile has the shape (answers
// out of order, about 10% progress, some 64 KiB answers, a few errors),
// and ChangeEvery/DropEvery change only the calls they name.
func TestSynthRealistic(t *testing.T) {
	var buf bytes.Buffer
	if _, err := Synthesize(&buf, SynthOptions{Messages: 20_000, Seed: 3, Profile: SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	x := NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if x.Len() != 20_000 {
		t.Fatalf("%d messages, want 20000", x.Len())
	}
	progress, big, errs, outOfOrder, lastAnswered := 0, 0, 0, 0, -1
	for i := range x.Len() {
		e := x.Entry(i)
		switch {
		case e.Method == "notifications/progress":
			progress++
		case e.Kind == KindResponse:
			m, err := x.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			if len(m.Raw) > 64<<10 {
				big++
			}
			p := x.Pair(i).Partner
			if p >= 0 && p < lastAnswered {
				outOfOrder++
			}
			lastAnswered = max(lastAnswered, p)
		}
	}
	st := ComputeStats(x, "")
	for _, s := range st.Servers {
		errs += s.Total.Errors + s.Total.ToolErrors
	}
	if progress < 1500 || progress > 2500 || big < 50 || errs < 100 || outOfOrder < 1000 {
		t.Fatalf("progress %d (want about 2000), 64 KiB answers %d, errors %d, answers out of order %d", progress, big, errs, outOfOrder)
	}
	if per := buf.Len() / 20_000; per < 1500 || per > 2600 {
		t.Fatalf("%d bytes a message, want about 2 KB", per)
	}

	var changed bytes.Buffer
	Synthesize(&changed, SynthOptions{Messages: 20_000, Seed: 3, Profile: SynthRealistic, ChangeEvery: 1000, DropEvery: 3000})
	a, b := strings.Split(buf.String(), "\n"), strings.Split(changed.String(), "\n")
	// Lines of a's that b lacks: the dropped calls' messages and the changed answers.
	inB := map[string]bool{}
	for _, l := range b {
		inB[l] = true
	}
	missing := 0
	for _, l := range a {
		if !inB[l] {
			missing++
		}
	}
	if missing < 6 || missing > 40 || len(b) >= len(a) {
		t.Fatalf("%d lines of A not in B (%d and %d lines), want the ~9 changed answers and ~3 dropped calls' messages", missing, len(a), len(b))
	}
}
