package tape

import (
	"bytes"
	"testing"
)

// TestSynthesizeTasks: every task of the tasks tape is found whole (its
// creating call, each poll, its result), completed, interleaved with the
// others.
func TestSynthesizeTasks(t *testing.T) {
	var buf bytes.Buffer
	if _, err := SynthesizeTasks(&buf, SynthTaskOptions{Tasks: 50, Polls: 20, Seed: 2}); err != nil {
		t.Fatal(err)
	}
	x := NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if want := 3 + 50*44; x.Len() != want {
		t.Fatalf("%d messages, want %d", x.Len(), want)
	}
	tasks := Tasks(x)
	if len(tasks) != 50 {
		t.Fatalf("%d tasks found, want 50", len(tasks))
	}
	interleaved := 0
	for i, k := range tasks {
		if k.Create < 0 || k.Created < 0 || len(k.Polls) != 20 || len(k.Results) != 1 || k.Status != "completed" || k.Duration() <= 0 {
			t.Fatalf("task %d: create %d, created %d, %d polls, %d results, status %q, duration %v; want a whole completed task of 20 polls",
				i, k.Create, k.Created, len(k.Polls), len(k.Results), k.Status, k.Duration())
		}
		if i > 0 && k.Create < tasks[i-1].Results[0] {
			interleaved++
		}
	}
	if interleaved < 40 {
		t.Fatalf("%d of 50 tasks began before the previous one ended, want most", interleaved)
	}
}
