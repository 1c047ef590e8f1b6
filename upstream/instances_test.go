package upstream

import (
	"slices"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// TestSplits: answers compared by meaning (key order and ids do not
// count), grouped with the largest group first, each other group's diff
// against it; a call all instances answer alike is no split.
func TestSplits(t *testing.T) {
	ans := func(s string) CallResult {
		return CallResult{Method: "tools/call", Name: "answer", Line: 7, Answer: []byte(s)}
	}
	reports := []VerifyReport{
		{Calls: []CallResult{ans(`{"jsonrpc":"2.0","id":1,"result":{"a":1,"b":2}}`), ans(`{"jsonrpc":"2.0","id":2,"result":{"x":43}}`)}},
		{Calls: []CallResult{ans(`{"jsonrpc":"2.0","id":9,"result":{"b":2,"a":1}}`), ans(`{"jsonrpc":"2.0","id":2,"result":{"x":42}}`)}},
		{Calls: []CallResult{ans(`{"id":1,"jsonrpc":"2.0","result":{"a":1,"b":2}}`), ans(`{"jsonrpc":"2.0","id":2,"result":{"x":42}}`)}},
	}
	got := splits(reports, tape.Normalizer{})
	if len(got) != 1 {
		t.Fatalf("got %d splits, want 1 (the second call): %+v", len(got), got)
	}
	s := got[0]
	if !slices.Equal(s.Groups[0], []int{1, 2}) || !slices.Equal(s.Groups[1], []int{0}) || len(s.Diffs) != 1 || len(s.Diffs[0]) != 1 || s.Diffs[0][0].Path != "/result/x" {
		t.Errorf("split %+v, want groups [1 2] then [0], one diff at /result/x", s)
	}
}
