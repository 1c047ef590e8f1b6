package compare

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task is compared as one entry: two runs of the same task, one of
// which polled it once less, show no difference; a task whose result
// differs still does.
func TestTaskPollsNotCompared(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(src), "\n")
	// Lines 14 and 15 (#13, #14) are the second poll and its answer.
	if !strings.Contains(lines[13], `"tasks/get"`) || !strings.Contains(lines[14], `"status":"working"`) {
		t.Fatalf("lines 14-15 are not a poll and its answer:\n%s%s", lines[13], lines[14])
	}
	fewer := strings.Join(append(append([]string(nil), lines[:13]...), lines[15:]...), "")
	dir := t.TempDir()
	write := func(name, data string) Side {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := OpenSide(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Index.Close() })
		return s
	}
	a := write("a.tape.jsonl", string(src))
	b := write("b.tape.jsonl", fewer)
	r, err := Compare(a, b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Differences(); n != 0 {
		t.Errorf("a run that polled the task 3 times instead of 4 differs in %d places, want 0: %+v", n, r.Servers[0].Calls)
	}
	// The result differs: that is a difference.
	other := write("c.tape.jsonl", strings.Replace(fewer, "# Research Report: tapes", "# Research Report: other", 1))
	r, err = Compare(a, other, Options{})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, c := range r.Servers[0].Calls {
		if c.Method == "tasks/result" {
			found = true
		}
	}
	if !found {
		t.Errorf("a task whose result differs shows no tasks/result difference: %+v", r.Servers[0].Calls)
	}
}
