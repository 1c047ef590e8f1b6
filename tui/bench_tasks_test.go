package tui

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/tape"
)

var (
	tasksOnce sync.Once
	tasksPath string
	tasksErr  error
)

// tasksTape writes, once per test process, the tape of 1,000 tasks
// of 20 polls each (tape.SynthesizeTasks, 44,003 messages), beside the 1M
// tape in its temporary directory.
func tasksTape(b *testing.B) string {
	b.Helper()
	dir := filepath.Dir(bigTape(b))
	tasksOnce.Do(func() {
		tasksPath = filepath.Join(dir, "tasks.jsonl")
		f, err := os.Create(tasksPath)
		if err != nil {
			tasksErr = err
			return
		}
		_, tasksErr = tape.SynthesizeTasks(f, tape.SynthTaskOptions{Tasks: 1000, Polls: 20, Seed: 1})
		if err := f.Close(); tasksErr == nil {
			tasksErr = err
		}
	})
	if tasksErr != nil {
		b.Fatal(tasksErr)
	}
	return tasksPath
}

// openFolded does what "tapedeck open" does on the tasks tape up to the
// frame with its tasks folded: the first screen, then every message the
// app's commands send back in (the rest of the indexing, the task scan),
// a frame after each. It returns the model, the time to the first frame,
// to the folded frame, and the longest Update and frame (the longest the
// screen stood still).
func openFolded(b *testing.B, path string) (m Model, first, folded, stall time.Duration) {
	start := time.Now()
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	x := tape.NewIndex(f)
	m = New(x, Options{Name: "tasks", Size: st.Size()})
	m = m.resize(200, 60)
	queue := []tea.Cmd{indexCmd(x, 0, st.Size(), true)}
	frames := 0
	for len(queue) > 0 && !m.timeline.HasTasks() {
		c := queue[0]
		queue = queue[1:]
		msg := c() // a Cmd runs off the UI's goroutine: not a stall
		if bm, ok := msg.(tea.BatchMsg); ok {
			queue = append(queue, bm...)
			continue
		}
		switch msg.(type) {
		case indexedMsg, tasksFoundMsg:
		default:
			continue // follow, shadow, notices: not part of the load
		}
		t0 := time.Now()
		next, cmd := m.Update(msg)
		m = next.(Model)
		if !strings.Contains(m.View().Content, "tools/call") {
			b.Fatalf("frame %d shows no rows", frames)
		}
		stall = max(stall, time.Since(t0))
		if frames == 0 {
			first = time.Since(start)
		}
		frames++
		if cmd != nil {
			queue = append(queue, cmd)
		}
	}
	if !m.timeline.HasTasks() {
		b.Fatal("the tasks tape never folded its tasks")
	}
	return m, first, time.Since(start), stall
}

// BenchmarkTasksOpen1K: the tape of 1,000 tasks of 20 polls each opened to
// its first frame and to the frame with the tasks folded, the fold key (T)
// with its frame, and a key with its frame on the folded timeline; beside
// the plain 1M tape's first screen in the same run (x-1M: the ratio to
// it) and the first-screen budget.
func BenchmarkTasksOpen1K(b *testing.B) {
	big, path := bigTape(b), tasksTape(b)
	const baseN = 5
	t0 := time.Now()
	for range baseN {
		_, f := firstScreen(b, big)
		f.Close()
	}
	base := time.Since(t0) / baseN
	var first, folded, stall, fold, key time.Duration
	n := 0
	b.ResetTimer()
	for b.Loop() {
		m, fi, fo, st := openFolded(b, path)
		first, folded, stall = first+fi, folded+fo, max(stall, st)
		t1 := time.Now()
		for range 2 { // expand, then fold again
			next, _ := m.Update(tea.KeyPressMsg{Code: 'T', Text: "T"})
			m = next.(Model)
			_ = m.View()
		}
		fold += time.Since(t1) / 2
		if m.timeline.TasksExpanded() {
			b.Fatal("T twice left the polls shown")
		}
		t2 := time.Now()
		m, k := frames(b, m, func() bool { return time.Since(t2) < 50*time.Millisecond })
		key += time.Since(t2) / time.Duration(max(k, 1))
		n++
	}
	per := func(d time.Duration) time.Duration { return d / time.Duration(max(n, 1)) }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(base), "ms/1M-first-screen")
	b.ReportMetric(ms(per(first)), "ms/first-screen")
	b.ReportMetric(ms(per(folded)), "ms/folded")
	b.ReportMetric(ms(stall), "ms/longest-stall")
	b.ReportMetric(ms(per(fold)), "ms/T+frame")
	b.ReportMetric(float64(per(key))/float64(time.Microsecond), "µs/key+frame")
	b.ReportMetric(float64(per(first))/float64(base), "x-1M")
	b.ReportMetric(float64(per(folded))/float64(budgetFirstScreen), "budget-ratio")
	b.ReportMetric(float64(stall)/float64(budgetFrame), "stall-frame-ratio")
}
