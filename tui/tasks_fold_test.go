package tui

import (
	"fmt"
	"strings"
	"testing"

	"github.com/charmbracelet/x/ansi"
)

// A task is one entry in the timeline: its polls and status notifications
// are folded into the tools/call that created it, whose row says how it
// went; T expands them and folds them again; a jump to a poll expands.
func TestTaskFoldGolden(t *testing.T) {
	for _, size := range []struct{ w, h int }{{80, 24}, {160, 45}} {
		t.Run(fmt.Sprintf("%dx%d", size.w, size.h), func(t *testing.T) {
			m, x := taskModel(t, size.w, size.h)
			if !m.timeline.HasTasks() {
				t.Fatal("the task tape has no task polls to fold")
			}
			m = send(t, m, keys(":goto 5", "enter")...) // the tools/call that created the task
			folded := screen(m)
			const line = "task 916ed7c8… · 4 polls · completed in 4.03s"
			for _, seq := range []int{5, 10} { // the tools/call and its CreateTaskResult
				if got := m.timeline.taskSummary(seq, ""); got != line {
					t.Errorf("#%d's summary is %q, want %q", seq, got, line)
				}
			}
			// 4 polls and their answers, 5 status notifications.
			if got := m.timeline.rowCount(); got != 26-13 {
				t.Errorf("the folded timeline has %d rows, want %d", got, 26-13)
			}
			if !strings.Contains(folded, "task 916ed7") {
				t.Errorf("the folded screen lacks the task's line:\n%s", folded)
			}
			if size.w >= 160 {
				if !strings.Contains(folded, line) || !strings.Contains(folded, "tasks/result") {
					t.Errorf("the folded screen lacks the task's line or the tasks/result row:\n%s", folded)
				}
			}
			if strings.Contains(folded, "tasks/get") || strings.Contains(folded, "tasks/status") {
				t.Errorf("the folded screen shows a poll or a status notification:\n%s", folded)
			}
			for i, l := range strings.Split(folded, "\n") {
				if w := ansi.StringWidth(l); w > size.w {
					t.Errorf("line %d is %d columns wide, want at most %d", i, w, size.w)
				}
			}
			golden(t, fmt.Sprintf("task-folded-%dx%d", size.w, size.h), folded)

			open := send(t, m, keys("T")...)
			if got := open.timeline.rowCount(); got != 26 {
				t.Errorf("after T the timeline has %d rows, want all 26", got)
			}
			again := send(t, open, keys("T")...)
			if again.timeline.rowCount() != 26-13 {
				t.Errorf("a second T did not fold the polls:\n%s", screen(again))
			}

			// :goto a poll expands the tasks and lands on it.
			jump := send(t, m, keys(":goto 15", "enter")...)
			if e := x.Entry(15); e.Method != "tasks/get" {
				t.Fatalf("#15 is %s, want tasks/get", e.Method)
			}
			if c := jump.timeline.Cursor(); c != 15 || !jump.timeline.TasksExpanded() {
				t.Errorf("after :goto 15 the cursor is on #%d (expanded %v), want #15 expanded", c, jump.timeline.TasksExpanded())
			}
		})
	}
}

// Folding keeps the filter's only-matches view: the filter's jump to its
// first match (a status notification) expands the tasks; T folds the
// matching polls away again and keeps the other matches.
func TestTaskFoldWithFilter(t *testing.T) {
	m, _ := taskModel(t, 160, 45)
	m = send(t, m, append(keys("/method:tasks"), keys("enter")...)...)
	m = send(t, m, keys("f")...)
	if !m.timeline.TasksExpanded() || !strings.Contains(screen(m), "tasks/get") {
		t.Fatalf("the filter's jump to a folded match did not expand the tasks:\n%s", screen(m))
	}
	m = send(t, m, keys("T")...)
	got := screen(m)
	if strings.Contains(got, "tasks/get") {
		t.Errorf("only-matches shows folded polls:\n%s", got)
	}
	if !strings.Contains(got, "tasks/result") {
		t.Errorf("only-matches lacks tasks/result:\n%s", got)
	}
	if strings.Contains(got, "tools/list_changed") {
		t.Errorf("only-matches shows a row the filter does not match:\n%s", got)
	}
}

// The pairing pane of a task-creating call lists the task's status
// timeline: its creation, each poll's answer and status notification with
// its status and time, its result.
func TestPairingTaskTimeline(t *testing.T) {
	m, _ := taskModel(t, 160, 45)
	m = send(t, m, keys(":goto 5", "enter", "2")...)
	got := screen(m)
	flat := strings.Join(strings.Fields(got), " ")
	for _, w := range []string{
		"task 916ed7c84114e1db46d77615081358fa · 4 polls · completed in 4.03s",
		`+0.017s #10 created working "Gathering sources..."`,
		"#12 tasks/get working",
		"#18 notification working",
		"#21 notification completed",
		"#22 tasks/result result",
		"#24 tasks/get completed",
	} {
		if !strings.Contains(flat, w) {
			t.Errorf("the pairing pane lacks %q:\n%s", w, got)
		}
	}
	golden(t, "task-pairing-160x45", got)
	// A call that created no task shows no timeline.
	m = send(t, m, keys(":goto 1", "enter")...)
	if got := screen(m); strings.Contains(got, "task 916ed7c84114e1db46d77615081358fa") {
		t.Errorf("initialize's pairing shows the task:\n%s", got)
	}
}
