package tape

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkTasks: Tasks on the tape of 1,000 tasks of 20 polls each
// (SynthesizeTasks, 44,003 messages) already indexed, read from a file;
// beside it (ms/old) the encoding/json reading it replaced, once.
func BenchmarkTasks(b *testing.B) {
	path := filepath.Join(b.TempDir(), "tasks.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := SynthesizeTasks(f, SynthTaskOptions{Tasks: 1000, Polls: 20, Seed: 1}); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	x, err := OpenIndex(path)
	if err != nil {
		b.Fatal(err)
	}
	defer x.Close()
	if n := len(Tasks(x)); n != 1000 {
		b.Fatalf("%d tasks, want 1000", n)
	}
	t0 := time.Now()
	tasksOld(x)
	old := time.Since(t0)
	for b.Loop() {
		Tasks(x)
	}
	b.ReportMetric(float64(old)/float64(time.Millisecond), "ms/old")
}
