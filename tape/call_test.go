package tape

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// ReadCalls gives every request once, with the response the index paired
// it with, its status and target, in one pass over a real recording.
func TestReadCalls(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "assets", "demo.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	statuses := map[string]int{}
	err = ReadCalls(bytes.NewReader(data), x, "", func(c Call) error {
		if seen[c.Request] {
			t.Errorf("request #%d given twice", c.Request)
		}
		seen[c.Request] = true
		if p := x.Pair(c.Request); p.Partner != c.Response {
			t.Errorf("%v: response #%d, the index pairs #%d", c, c.Response, p.Partner)
		}
		if c.Response >= 0 && (len(c.ResponseRaw) == 0 || c.End.IsZero() || c.Latency < 0) {
			t.Errorf("%v: answer not filled in: %+v", c, c)
		}
		if c.Method == "tools/call" && c.Target == "" {
			t.Errorf("%v: no target", c)
		}
		statuses[c.Status]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	requests := 0
	for i := range x.Len() {
		if x.Entry(i).Kind == KindRequest {
			requests++
		}
	}
	rpc, tool := x.Failures()
	if len(seen) != requests || statuses["error"] != rpc || statuses["tool-error"] != tool {
		t.Errorf("%d calls (statuses %v) for %d requests, %d errors, %d tool errors", len(seen), statuses, requests, rpc, tool)
	}
}
