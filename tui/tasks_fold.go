package tui

// Task folding: a task (2025-11-25) is one entry in the timeline. Its
// polls (the tasks/get requests and their answers) and the status
// notifications its runner sent are folded into the row of the call that
// created it, whose summary says how the task went: "task 916ed7c8… · 4
// polls · completed in 4.0s". The tasks key (T) expands them again. The
// tasks are found once the tape is indexed (tape.Tasks), and again when a
// followed tape grew, off the UI's goroutine (tasksCmd).

import (
	"fmt"
	"slices"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/tidwall/gjson"

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

// syncTasks finds the tasks of a tape indexed before the app started
// (debug's), in New, which can return no command.
func (m *Model) syncTasks() {
	if m.load.active || m.x.Len() == 0 {
		return
	}
	m.tasksN = m.x.Len()
	*m = m.tasksFound(tasksFoundMsg{x: m.x, n: m.tasksN, tasks: tape.Tasks(m.x)})
}

// tasksFoundMsg carries the tasks found on x's first n messages (at least).
type tasksFoundMsg struct {
	x     *tape.Index
	n     int
	tasks []tape.Task
}

// tasksCmd finds the tape's tasks once it is indexed, and again when it
// grew, off the UI's goroutine: a tape of a thousand tasks takes a scan
// of its task messages' bodies, longer than a frame. The rows show
// unfolded, and the status line says "finding tasks…", until the result
// arrives (tasksFound). A tape without tasks methods costs one look at the
// index's methods and no command.
func (m *Model) tasksCmd() tea.Cmd {
	if m.load.active || m.x.Len() == m.tasksN {
		return nil
	}
	m.tasksN = m.x.Len()
	if !tape.HasTasks(m.x) {
		m.tasksShown = m.tasksN // nothing to find
		return nil
	}
	x, n := m.x, m.tasksN
	return func() tea.Msg { return tasksFoundMsg{x: x, n: n, tasks: tape.Tasks(x)} }
}

// findingTasks reports whether a scan for the tape's tasks is under way.
func (m Model) findingTasks() bool { return m.tasksShown != m.tasksN && m.tasksN > 0 }

// tasksFound folds the tasks a scan found, unless the tape was replaced
// or a later scan's tasks are already shown.
func (m Model) tasksFound(msg tasksFoundMsg) Model {
	if msg.x != m.x || msg.n <= m.tasksShown {
		return m
	}
	m.tasksShown = msg.n
	m.timeline.SetTasks(msg.tasks)
	m.pairing.SetTasks(msg.tasks)
	m.showCursor()
	return m
}

// SetTasks gives the pane the tape's tasks: a task-creating call shows
// the task's status timeline above the pair.
func (p *Pairing) SetTasks(tasks []tape.Task) {
	p.tasks = nil
	for _, k := range tasks {
		if k.Create < 0 {
			continue
		}
		if p.tasks == nil {
			p.tasks = map[int]tape.Task{}
		}
		p.tasks[k.Create] = k
		if k.Created >= 0 {
			p.tasks[k.Created] = k
		}
	}
	p.shown = detailKey{}
	p.refresh()
}

// taskTimeline is task k's status timeline: its creation, each poll's
// answer and status notification with the status it reported and when
// (from the task's creation), its result; one line each.
func taskTimeline(x *tape.Index, k tape.Task, s *Styles) []string {
	head := "task " + k.ID + " · " + text.Plural(len(k.Polls), "poll")
	if k.Status != "" {
		head += " · " + k.Status
	}
	if d := k.Duration(); d > 0 {
		head += " in " + tape.FormatLatency(1, d.Round(time.Millisecond))
	}
	if k.Runner == tape.DirSend {
		head += " · run by the client"
	}
	lines := []string{s.Detail.Key.Render(head)}
	type ev struct {
		seq  int
		what string
	}
	var evs []ev
	if k.Created >= 0 {
		evs = append(evs, ev{k.Created, "created"})
	}
	for _, q := range k.Polls {
		a := q
		if p := x.Pair(q).Partner; p >= 0 {
			a = p
		}
		evs = append(evs, ev{a, "tasks/get"})
	}
	for _, n := range k.Notes {
		evs = append(evs, ev{n, "notification"})
	}
	for _, q := range k.Results {
		a := q
		if p := x.Pair(q).Partner; p >= 0 {
			a = p
		}
		evs = append(evs, ev{a, "tasks/result"})
	}
	for _, q := range k.Cancels {
		evs = append(evs, ev{q, "tasks/cancel"})
	}
	slices.SortFunc(evs, func(a, b ev) int { return a.seq - b.seq })
	for _, e := range evs {
		en := x.Entry(e.seq)
		at := ""
		if !en.Time.IsZero() && !k.Start.IsZero() {
			at = "+" + relTime(en.Time.Sub(k.Start))
		}
		st := ""
		switch {
		case en.Error:
			st = "error"
		case e.what == "tasks/result" && en.ToolError:
			st = "result (tool error)"
		case e.what == "tasks/result" && en.Kind == tape.KindResponse:
			st = "result"
		case e.what == "tasks/cancel":
			st = "cancel asked"
		default:
			if m, err := x.Message(e.seq); err == nil {
				st = taskStatusOf(m.Raw)
			}
		}
		line := fmt.Sprintf("  %9s  #%-5d %-13s %s", at, e.seq, e.what, st)
		if st == "failed" || st == "cancelled" || st == "error" || st == "result (tool error)" {
			line = s.Timeline.Error.Render(line)
		}
		lines = append(lines, line)
	}
	return lines
}

// taskStatusOf is the status a message about a task reports, with its
// status message: a notification's params, a tasks/get answer's result,
// a CreateTaskResult's result.task.
func taskStatusOf(raw []byte) string {
	for _, path := range []string{"result.task", "result", "params"} {
		r := gjson.GetBytes(raw, path)
		if st := r.Get("status").String(); st != "" {
			if msg := r.Get("statusMessage").String(); msg != "" {
				return fmt.Sprintf("%s %q", st, msg)
			}
			return st
		}
	}
	return ""
}
