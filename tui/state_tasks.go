package tui

// The state pane's tasks: the tasks (2025-11-25) of the server running at
// the cursor, each one line: its id, the call that created it, its status
// as last reported at the cursor, its polls so far and how long it has
// run; then how many had ended by then, and how.

import (
	"fmt"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// renderTasks writes the tasks section of the state pane, first: what
// runs matters more than the handshake.
func renderTasks(b *strings.Builder, tasks []tape.TaskState, x *tape.Index, at int, s *Styles, kv func(k, v string)) {
	if len(tasks) == 0 {
		return
	}
	defer b.WriteString("\n")
	var running []tape.TaskState
	ended := map[string]int{}
	var endedOrder []string
	for _, t := range tasks {
		if !t.Ended {
			running = append(running, t)
			continue
		}
		if ended[t.Status] == 0 {
			endedOrder = append(endedOrder, t.Status)
		}
		ended[t.Status]++
	}
	now := x.Entry(at).Time
	if len(running) == 0 {
		kv("tasks", "none running")
	} else {
		kv("tasks", text.Plural(len(running), "task")+" running:")
	}
	for _, t := range running {
		what := "created off the tape"
		if c := t.Task.Create; c >= 0 {
			what = x.Entry(c).Method
			if name := callName(x, c, what); name != "" {
				what += " " + name
			}
			what += fmt.Sprintf(" #%d", c)
		}
		kv("", shortTaskID(t.Task.ID)+" "+what)
		line := "  " + t.Status
		if t.Message != "" {
			line += fmt.Sprintf(" %q", t.Message)
		}
		line += " · " + text.Plural(t.Polls, "poll")
		if !now.IsZero() && !t.Task.Start.IsZero() {
			line += fmt.Sprintf(" · %s so far", tape.FormatLatency(1, now.Sub(t.Task.Start).Round(time.Millisecond)))
		}
		if t.Task.Runner == tape.DirSend {
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
