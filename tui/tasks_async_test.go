package tui

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/tapedeck/tapedeck/tape"
)

// A tape opened as "tapedeck open" opens it (indexed in the background)
// finds its tasks off the UI's goroutine: the frame after the indexing
// shows the polls unfolded and says "finding tasks…", a true statement
// (the scan's command is pending); when its message arrives the polls are
// folded, the status line no longer says it, and the screen is the one
// the task golden holds.
func TestTasksFoldArrives(t *testing.T) {
	path := filepath.Join("..", "testdata", "ts-everything-task.tape.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	st, _ := f.Stat()
	x := tape.NewIndex(f)
	clock := &fakeClock{t: time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)}
	m := New(x, Options{Now: clock.now, CopyDir: t.TempDir(), Name: "task", Size: st.Size()})
	m.noticeAfter = func(time.Duration, func(time.Time) tea.Msg) tea.Cmd { return nil }
	m = m.resize(160, 45)

	next, cmd := m.Update(indexCmd(x, 0, st.Size(), true)())
	m = next.(Model)
	if m.load.active {
		t.Fatal("the task tape was not indexed in one chunk")
	}
	first := screen(m)
	if m.timeline.HasTasks() || !strings.Contains(first, "tasks/get") {
		t.Fatalf("the frame after indexing already folds the polls (the scan ran on the UI's goroutine):\n%s", first)
	}
	if !strings.Contains(first, "finding tasks…") {
		t.Errorf("the frame after indexing does not say it is finding tasks:\n%s", first)
	}
	var found *tasksFoundMsg
	for _, c := range flatten(cmd) {
		if msg, ok := c().(tasksFoundMsg); ok {
			found = &msg
		}
	}
	if found == nil {
		t.Fatal("indexing returned no command that finds the tasks")
	}
	next, _ = m.Update(*found)
	m = next.(Model)
	if !m.timeline.HasTasks() || m.timeline.rowCount() != 26-13 {
		t.Fatalf("after the tasks arrived the timeline has %d rows (tasks %v), want 13 folded", m.timeline.rowCount(), m.timeline.HasTasks())
	}
	if s := screen(m); strings.Contains(s, "finding tasks") || strings.Contains(s, "tasks/get") {
		t.Errorf("after the tasks arrived the screen still says it is finding them, or shows a poll:\n%s", s)
	}
	m = send(t, m, keys(":goto 5", "enter")...)
	golden(t, "task-folded-160x45", screen(m))

	// A scan of a tape since replaced is dropped.
	stale := tasksFoundMsg{x: demoIndex(t), n: 79, tasks: found.tasks}
	next, _ = m.Update(stale)
	if next.(Model).tasksShown != m.tasksShown {
		t.Error("the tasks of another index were taken")
	}
}

// flatten lists the commands in cmd, batches opened.
func flatten(cmd tea.Cmd) []tea.Cmd {
	if cmd == nil {
		return nil
	}
	var out []tea.Cmd
	msg := cmd()
	if b, ok := msg.(tea.BatchMsg); ok {
		for _, c := range b {
			out = append(out, flatten(c)...)
		}
		return out
	}
	return []tea.Cmd{func() tea.Msg { return msg }}
}
