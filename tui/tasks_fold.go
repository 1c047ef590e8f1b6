package tui

// Task folding: a task (2025-11-25) is one entry in the timeline. Its
// polls (the tasks/get requests and their answers) and the status
// notifications its runner sent are folded into the row of the call that
// created it, whose summary says how the task went: "task 916ed7c8… · 4
// polls · completed in 4.0s". The tasks key (T) expands them again. The
// tasks are found once the tape is indexed (tape.Tasks), and again when a
// followed tape grew.

import (
	"slices"
	"time"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// taskFolds is what the timeline knows of a tape's tasks.
type taskFolds struct {
	hidden   []int          // sorted seqs folded away: polls, their answers, status notifications
	summary  map[int]string // the creating request's and its answer's seq -> the task's one line
	expanded bool           // the polls are shown
}

// SetTasks folds the polls of these tasks into their creating calls.
func (t *Timeline) SetTasks(tasks []tape.Task) {
	f := taskFolds{expanded: t.tasks.expanded, summary: map[int]string{}}
	for _, k := range tasks {
		if k.Create < 0 {
			continue // created off the tape: no row to fold into
		}
		line := taskLine(k)
		f.summary[k.Create] = line
		if k.Created >= 0 {
			f.summary[k.Created] = line
		}
		for _, p := range k.Polls {
			f.hidden = append(f.hidden, p)
			if q := t.x.Pair(p).Partner; q >= 0 {
				f.hidden = append(f.hidden, q)
			}
		}
		f.hidden = append(f.hidden, k.Notes...)
	}
	slices.Sort(f.hidden)
	f.hidden = slices.Compact(f.hidden)
	if len(f.summary) == 0 {
		f.summary = nil
	}
	t.tasks = f
	t.rebuildView()
	t.selectNear(t.cursor)
}

// HasTasks reports whether the tape has tasks to fold.
func (t Timeline) HasTasks() bool { return len(t.tasks.hidden) > 0 }

// TasksExpanded reports whether the tasks' polls are shown.
func (t Timeline) TasksExpanded() bool { return t.tasks.expanded }

// SetTasksExpanded shows (true) or folds the tasks' polls.
func (t *Timeline) SetTasksExpanded(on bool) {
	t.tasks.expanded = on
	t.rebuildView()
	t.selectNear(t.cursor)
}

// taskLine is a task's one line in its creating call's summary.
func taskLine(k tape.Task) string {
	s := "task " + shortTaskID(k.ID) + " · " + text.Plural(len(k.Polls), "poll")
	st := k.Status
	if st == "" {
		st = "unknown"
	}
	if !tape.TerminalStatus(st) {
		st += " (never ended)"
	}
	s += " · " + st
	if d := k.Duration(); d > 0 {
		word := " in "
		if !tape.TerminalStatus(k.Status) {
			word = " after "
		}
		s += word + tape.FormatLatency(1, d.Round(time.Millisecond))
	}
	return s
}

// rebuildView recomputes the shown rows: the filter's matches when only
// they are shown, less the folded polls.
func (t *Timeline) rebuildView() {
	fold := !t.tasks.expanded && len(t.tasks.hidden) > 0
	switch {
	case !t.only && !fold:
		t.view = nil
	case !fold:
		t.view = t.matches
	default:
		src := t.matches
		n := len(src)
		if !t.only {
			n = t.x.Len()
		}
		v := make([]int, 0, max(n-len(t.tasks.hidden), 0))
		h := t.tasks.hidden
		for i := range n {
			seq := i
			if t.only {
				seq = src[i]
			}
			for len(h) > 0 && h[0] < seq {
				h = h[1:]
			}
			if len(h) > 0 && h[0] == seq {
				continue
			}
			v = append(v, seq)
		}
		t.view = v
	}
}

// taskSummary is row seq's summary with its task's line, if it created one.
func (t Timeline) taskSummary(seq int, summary string) string {
	if line, ok := t.tasks.summary[seq]; ok {
		return line
	}
	return summary
}

// syncTasks finds the tape's tasks once it is indexed, and again when it
// grew: a tape without tasks methods costs one look at the index's
// methods.
func (m *Model) syncTasks() {
	if m.load.active || m.x.Len() == m.tasksN {
		return
	}
	m.tasksN = m.x.Len()
	m.timeline.SetTasks(tape.Tasks(m.x))
}
