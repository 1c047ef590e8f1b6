package tape

import (
	"fmt"
	"sort"
	"time"
)

// TaskStats sums up one server's tasks created by one kind of request
// ("tools/call simulate-research-query"): a task counts once, with the
// terminal status it reached and its real duration, from its creation to
// that status (Task.Duration), whatever its polls took.
type TaskStats struct {
	Created string `json:"created"` // the creating request's method and target, or "(not on the tape)"
	// Runner is the side that ran the tasks: "recv" the server, "send" the
	// client (the server asked it, with sampling or elicitation).
	Runner     Dir          `json:"runner"`
	Tasks      int          `json:"tasks"`
	Completed  int          `json:"completed"`
	Failed     int          `json:"failed"`
	Cancelled  int          `json:"cancelled"`
	Unfinished int          `json:"unfinished"` // no terminal status on the tape
	Duration   LatencyStats `json:"duration"`
}

// AddTaskStats fills in each server's Tasks from the tasks recorded on x
// (Tasks reads only the task messages' bodies).
func AddTaskStats(st *Stats, x *Index) {
	type key struct {
		server, created string
		runner          Dir
	}
	per := map[key]*TaskStats{}
	durations := map[key][]time.Duration{}
	for _, t := range Tasks(x) {
		k := key{t.Server, TaskCreator(x, t), t.Runner}
		ts := per[k]
		if ts == nil {
			ts = &TaskStats{Created: k.created, Runner: t.Runner}
			per[k] = ts
		}
		ts.Tasks++
		switch t.Status {
		case "completed":
			ts.Completed++
		case "failed":
			ts.Failed++
		case "cancelled":
			ts.Cancelled++
		default:
			ts.Unfinished++
		}
		if d := t.Duration(); d > 0 {
			durations[k] = append(durations[k], d)
		}
	}
	for i := range st.Servers {
		ss := &st.Servers[i]
		ss.Tasks = nil
		for k, ts := range per {
			if k.server == ss.Server {
				ts.Duration = latencyStats(durations[k])
				ss.Tasks = append(ss.Tasks, *ts)
			}
		}
		sort.Slice(ss.Tasks, func(a, b int) bool {
			if ss.Tasks[a].Created != ss.Tasks[b].Created {
				return ss.Tasks[a].Created < ss.Tasks[b].Created
			}
			return ss.Tasks[a].Runner < ss.Tasks[b].Runner
		})
	}
}

// TaskCreator names the request that created task t: its method and the
// tool, prompt or resource it names, or "(not on the tape)".
func TaskCreator(x *Index, t Task) string {
	if t.Create < 0 {
		return "(not on the tape)"
	}
	method := x.Entry(t.Create).Method
	if m, err := x.Message(t.Create); err == nil {
		if target := Target(method, m.Raw); target != "" {
			return method + " " + target
		}
	}
	return method
}

// TaskTable returns the server's tasks as a header and rows of cells, for
// `tapedeck stats` and the debugger's stats pane; nil when it has none.
func (ss ServerStats) TaskTable() (header []string, rows [][]string) {
	if len(ss.Tasks) == 0 {
		return nil, nil
	}
	header = []string{"task created by", "runner", "tasks", "completed", "failed", "cancelled", "unfinished", "p50", "p95", "max"}
	for _, t := range ss.Tasks {
		l := t.Duration
		n := func(v int) string { return fmt.Sprint(v) }
		rows = append(rows, []string{t.Created, string(t.Runner), n(t.Tasks), n(t.Completed), n(t.Failed), n(t.Cancelled), n(t.Unfinished),
			FormatLatency(l.Count, l.P50), FormatLatency(l.Count, l.P95), FormatLatency(l.Count, l.Max)})
	}
	return header, rows
}
