package compare

import (
	"fmt"
	"hash/maphash"
	"time"
	"unicode/utf8"

	"github.com/sergi/go-diff/diffmatchpatch"
	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Aligning two sides' calls: Myers over call keys, replaced calls paired,
// answers, statuses and latencies compared.

// alignCalls aligns a and b by their keys and reports the differences:
// calls on one side only (a changed call of the same method and target
// in the same place is reported as changed params), and aligned calls
// whose answers differ.
func alignCalls(a, b []call, xa, xb *tape.Index, n *tape.Normalizer, o Options, seed maphash.Seed) ([]CallDiff, int, []Aligned) {
	ids := newKeyIDs(max(len(a), len(b)))
	runeOf := func(k [16]byte) rune {
		if r, ok := ids.get(k); ok {
			return r
		}
		i := rune(ids.len())
		if i >= 0xD800 {
			i += 0x800 // no surrogates: a string must hold every rune
		}
		if i > utf8.MaxRune {
			i = utf8.MaxRune // past a million distinct calls: they share one
		}
		ids.put(k, i)
		return i
	}
	ra := make([]rune, len(a))
	for i, c := range a {
		ra[i] = runeOf(c.key)
	}
	rb := make([]rune, len(b))
	for i, c := range b {
		rb[i] = runeOf(c.key)
	}
	dmp := diffmatchpatch.New()
	dmp.DiffTimeout = 10 * time.Second
	diffs := dmp.DiffMainRunes(ra, rb, false)

	var out []CallDiff
	var rows []Aligned
	if n := max(len(a), len(b)); n > 0 {
		rows = make([]Aligned, 0, n)
	}
	// add appends diffs found for one row, and the row.
	add := func(ra, rb int, ds []CallDiff) {
		row := Aligned{A: ra, B: rb}
		for _, d := range ds {
			row.Diffs = append(row.Diffs, len(out))
			out = append(out, d)
		}
		rows = append(rows, row)
	}
	matched := 0
	i, j := 0, 0
	for d := 0; d < len(diffs); d++ {
		k := utf8.RuneCountInString(diffs[d].Text)
		switch diffs[d].Type {
		case diffmatchpatch.DiffEqual:
			for range k {
				matched++
				add(int(a[i].req), int(b[j].req), answerDiffs(a[i], b[j], xa, xb, n, o, seed))
				i++
				j++
			}
		case diffmatchpatch.DiffDelete:
			dels := a[i : i+k]
			i += k
			var ins []call
			if d+1 < len(diffs) && diffs[d+1].Type == diffmatchpatch.DiffInsert {
				m := utf8.RuneCountInString(diffs[d+1].Text)
				ins = b[j : j+m]
				j += m
				d++
			}
			for _, cd := range replaced(dels, ins, xa, xb, n) {
				add(cd.A, cd.B, []CallDiff{cd})
			}
		case diffmatchpatch.DiffInsert:
			for _, cd := range replaced(nil, b[j:j+k], xa, xb, n) {
				add(cd.A, cd.B, []CallDiff{cd})
			}
			j += k
		}
	}
	return out, matched, rows
}

// replaced reports a run of calls of A replaced by a run of B: a call of
// the same method and target on both sides, in order, changed its params;
// the rest are on one side only.
func replaced(dels, ins []call, xa, xb *tape.Index, n *tape.Normalizer) []CallDiff {
	var out []CallDiff
	used := make([]bool, len(ins))
	tdels, tins := make([]string, len(dels)), make([]string, len(ins))
	for k, d := range dels {
		tdels[k] = target(xa, d)
	}
	for k, c := range ins {
		tins[k] = target(xb, c)
	}
	for j, d := range dels {
		paired := false
		for k, c := range ins {
			if used[k] || c.method != d.method || tins[k] != tdels[j] {
				continue
			}
			used[k], paired = true, true
			pa, pb := params(xa, int(d.req), n), params(xb, int(c.req), n)
			out = append(out, CallDiff{Kind: "params", A: int(d.req), B: int(c.req), Method: d.method, Target: tdels[j], Diff: tape.Diff(pa, pb)})
			break
		}
		if !paired {
			out = append(out, CallDiff{Kind: "onlyA", A: int(d.req), B: -1, Method: d.method, Target: tdels[j], Params: paramsText(xa, int(d.req))})
		}
	}
	for k, c := range ins {
		if !used[k] {
			out = append(out, CallDiff{Kind: "onlyB", A: -1, B: int(c.req), Method: c.method, Target: tins[k], Params: paramsText(xb, int(c.req))})
		}
	}
	return out
}

// answerDiffs compares the answers of two aligned calls.
func answerDiffs(a, b call, xa, xb *tape.Index, n *tape.Normalizer, o Options, seed maphash.Seed) []CallDiff {
	var out []CallDiff
	base := CallDiff{A: int(a.req), B: int(b.req), Method: a.method, StatusA: statusText(a), StatusB: statusText(b)}
	if a.status != b.status || a.code != b.code {
		d := base
		d.Kind = "status"
		out = append(out, d)
	} else if a.resp >= 0 && b.resp >= 0 && (len(o.Ignore) > 0 || !sameAnswer(seed, a.answer, b.answer, xa, xb, int(a.resp), int(b.resp))) {
		ra, rb := answer(xa, int(a.resp), n), answer(xb, int(b.resp), n)
		if ops := tape.Diff(ra, rb); len(ops) > 0 {
			d := base
			d.Kind, d.Diff = "result", ops
			out = append(out, d)
		}
	}
	if a.timed && b.timed && latencyShift(a.latency, b.latency, o) {
		d := base
		d.Kind, d.LatencyA, d.LatencyB = "latency", a.latency, b.latency
		out = append(out, d)
	}
	if len(out) > 0 { // named only where it is printed: most aligned calls do not differ
		t := target(xa, a)
		for k := range out {
			out[k].Target = t
		}
	}
	return out
}

func latencyShift(a, b time.Duration, o Options) bool {
	abs := o.LatencyAbs
	if abs <= 0 {
		abs = 100 * time.Millisecond
	}
	ratio := o.LatencyRatio
	if ratio <= 0 {
		ratio = 2
	}
	d := b - a
	if d < 0 {
		d = -d
	}
	lo, hi := min(a, b), max(a, b)
	return d > abs && float64(hi) > ratio*float64(max(lo, time.Millisecond))
}

func statusText(c call) string {
	if c.status == "error" {
		return fmt.Sprintf("error %d", c.code)
	}
	return c.status
}

// answer is a response's comparable form: result or error, without the
// wire's jsonrpc, id and _meta.
func answer(x *tape.Index, seq int, n *tape.Normalizer) any {
	m, err := x.Message(seq)
	if err != nil {
		return nil
	}
	v, err := n.Normalize(tape.StripMeta(m.Raw))
	if err != nil {
		return nil
	}
	return v
}

func params(x *tape.Index, seq int, n *tape.Normalizer) any {
	m, err := x.Message(seq)
	if err != nil {
		return nil
	}
	v, err := n.NormalizeParams([]byte(gjson.GetBytes(m.Raw, "params").Raw))
	if err != nil {
		return nil
	}
	return v
}

// target is the tool, prompt or resource call c names (tape.Target), read
// from its request: only calls that differ are named, so calls leaves it.
func target(x *tape.Index, c call) string {
	m, err := x.Message(int(c.req))
	if err != nil {
		return ""
	}
	return tape.Target(c.method, m.Raw)
}

func paramsText(x *tape.Index, seq int) string {
	m, err := x.Message(seq)
	if err != nil {
		return ""
	}
	return tape.ParamsLine([]byte(gjson.GetBytes(tape.StripMeta(m.Raw), "params").Raw), 200)
}

// notPolls keeps every call but a task's polls (tasks/get): a task is
// compared as one entry, by its creating call and its tasks/result, so
// that two runs that polled it a different number of times do not
// differ. nil (keep all) on a tape without tasks.
func notPolls(x *tape.Index) func(int) bool {
	tasks := tape.Tasks(x)
	if len(tasks) == 0 {
		return nil
	}
	polls := map[int]bool{}
	for _, t := range tasks {
		for _, q := range t.Polls {
			polls[q] = true
		}
	}
	return func(seq int) bool { return !polls[seq] }
}
