package tui

// The state pane's tasks: the tasks (2025-11-25) of the server running at
// the cursor, each one line: its id, the call that created it, its status
// as last reported at the cursor, its polls so far and how long it has
// run; then how many had ended by then, and how.

import (
	"fmt"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// taskState is one task as of the cursor.
type taskState struct {
	task    tape.Task
	status  string // the last status reported at or before the cursor
	message string // its statusMessage
	polls   int    // tasks/get sent so far
	ended   bool   // its terminal status was reported by the cursor
}

// tasksAt returns the tasks of server created at or before seq.
func (s *stateIndex) tasksAt(server string, seq int) []taskState {
	if s.taskN != s.x.Len() {
		s.tasks, s.taskN = tape.Tasks(s.x), s.x.Len()
	}
	var out []taskState
	for _, t := range s.tasks {
		first := t.Create
		if first < 0 {
			first = t.Created
		}
		if t.Server != server || first < 0 || first > seq {
			continue
		}
		ts := taskState{task: t, ended: t.Terminal >= 0 && t.Terminal <= seq}
		// The status reports at or before the cursor: the creating answer,
		// status notifications and the polls' answers.
		reports := append([]int{t.Created}, t.Notes...)
		for _, p := range t.Polls {
			if p <= seq {
				ts.polls++
			}
			reports = append(reports, s.x.Pair(p).Partner)
		}
		last := -1
		for _, r := range reports {
			if r < 0 || r > seq || r < last {
				continue
			}
			b := s.body(r)
			st := gjson.GetBytes(b, "params")
			if !st.Get("status").Exists() {
				st = gjson.GetBytes(b, "result")
				if st.Get("task").Exists() {
					st = st.Get("task")
				}
			}
			if v := st.Get("status").String(); v != "" {
				last, ts.status, ts.message = r, v, st.Get("statusMessage").String()
			}
		}
		if ts.ended {
			ts.status = t.Status
		}
		out = append(out, ts)
	}
	return out
}

// renderTasks writes the tasks section of the state pane, first: what
// runs matters more than the handshake.
func renderTasks(b *strings.Builder, tasks []taskState, x *tape.Index, at int, s *Styles, kv func(k, v string)) {
	if len(tasks) == 0 {
		return
	}
	defer b.WriteString("\n")
	var running []taskState
	ended := map[string]int{}
	var endedOrder []string
	for _, t := range tasks {
		if !t.ended {
			running = append(running, t)
			continue
		}
		if ended[t.status] == 0 {
			endedOrder = append(endedOrder, t.status)
		}
		ended[t.status]++
	}
	now := x.Entry(at).Time
	if len(running) == 0 {
		kv("tasks", "none running")
	} else {
		kv("tasks", text.Plural(len(running), "task")+" running:")
	}
	for _, t := range running {
		what := "created off the tape"
		if c := t.task.Create; c >= 0 {
			what = x.Entry(c).Method
			if name := callName(x, c, what); name != "" {
				what += " " + name
			}
			what += fmt.Sprintf(" #%d", c)
		}
		kv("", shortTaskID(t.task.ID)+" "+what)
		line := "  " + t.status
		if t.message != "" {
			line += fmt.Sprintf(" %q", t.message)
		}
		line += " · " + text.Plural(t.polls, "poll")
		if !now.IsZero() && !t.task.Start.IsZero() {
			line += fmt.Sprintf(" · %s so far", tape.FormatLatency(1, now.Sub(t.task.Start).Round(time.Millisecond)))
		}
		if t.task.Runner == tape.DirSend {
			line += " · run by the client"
		}
		kv("", line)
	}
	if len(endedOrder) > 0 {
		var parts []string
		for _, st := range endedOrder {
			p := fmt.Sprintf("%d %s", ended[st], st)
			if st == "failed" || st == "cancelled" {
				p = s.Timeline.Error.Render(p)
			}
			parts = append(parts, p)
		}
		kv("", "ended by then: "+strings.Join(parts, ", "))
	}
}

// shortTaskID keeps a long task id readable on one line.
func shortTaskID(id string) string {
	if len(id) > 12 {
		return id[:8] + "…"
	}
	return id
}
