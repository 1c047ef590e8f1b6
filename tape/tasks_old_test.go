package tape

import "encoding/json"

// taskRead is what Tasks reads of a message about a task.
type taskRead struct {
	Params struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
	} `json:"params"`
	Result struct {
		TaskID string `json:"taskId"`
		Status string `json:"status"`
		Task   *struct {
			TaskID string `json:"taskId"`
			Status string `json:"status"`
		} `json:"task"`
	} `json:"result"`
}

// tasksOld is Tasks as it was before it read bodies with taskBody: it
// decodes each body with encoding/json. TestTasksAgree holds Tasks to it.
// It returned the tasks recorded on x, in the order of their first
// message. Only messages of the tasks methods (and the answers that
// created tasks) are read: a tape without tasks costs one pass over the
// index and no body read.
func tasksOld(x *Index) []Task {
	if !HasTasks(x) {
		return nil
	}
	type key struct{ server, id string }
	byID := map[key]int{}
	var tasks []Task
	read := func(i int) (taskRead, bool) {
		var r taskRead
		m, err := x.Message(i)
		if err != nil || json.Unmarshal(StripMeta(m.Raw), &r) != nil {
			return r, false
		}
		return r, true
	}
	note := func(t *Task, seq int, status string) {
		if status == "" {
			return
		}
		t.Status = status
		// A tasks/result's answer is noted when its request is read, before
		// the status messages recorded between them: the earliest wins.
		if TerminalStatus(status) && (t.Terminal < 0 || seq < t.Terminal) {
			t.Terminal = seq
			t.End = x.Entry(seq).Time
		}
	}
	n := x.Len()
	for i := range n {
		en := x.Entry(i)
		switch en.Method {
		case "tasks/get", "tasks/result", "tasks/cancel", "notifications/tasks/status":
		default:
			continue
		}
		if en.Kind != KindRequest && en.Kind != KindNotification {
			continue
		}
		r, ok := read(i)
		if !ok || r.Params.TaskID == "" {
			continue
		}
		k := key{en.Server, r.Params.TaskID}
		ti, seen := byID[k]
		if !seen {
			ti = len(tasks)
			byID[k] = ti
			runner := en.Dir.Opposite() // the poller asks the runner
			if en.Kind == KindNotification {
				runner = en.Dir
			}
			tasks = append(tasks, Task{ID: r.Params.TaskID, Server: en.Server, Runner: runner, Create: -1, Created: -1, Terminal: -1})
			findCreateOld(x, &tasks[ti], i, read)
		}
		t := &tasks[ti]
		if !en.Time.IsZero() && t.Terminal < 0 {
			t.End = en.Time
		}
		switch en.Method {
		case "notifications/tasks/status":
			t.Notes = append(t.Notes, i)
			note(t, i, r.Params.Status)
			continue
		case "tasks/get":
			t.Polls = append(t.Polls, i)
		case "tasks/result":
			t.Results = append(t.Results, i)
		case "tasks/cancel":
			t.Cancels = append(t.Cancels, i)
		}
		p := x.Pair(i).Partner
		if p < 0 {
			continue
		}
		ans := x.Entry(p)
		switch {
		case en.Method == "tasks/result" && !ans.Error && t.Terminal < 0:
			// The result came: the task was over, whatever it reported.
			status := "completed"
			if ans.ToolError {
				status = "failed"
			}
			note(t, p, status)
		case en.Method != "tasks/result" && !ans.Error:
			if a, ok := read(p); ok {
				note(t, p, a.Result.Status)
			}
		}
	}
	return tasks
}

// findCreate finds the answer that created task t: a CreateTaskResult
// with its id, searched back from its first message at seq, then a
// little ahead (a runner may announce the status before it answers).
func findCreateOld(x *Index, t *Task, seq int, read func(int) (taskRead, bool)) {
	try := func(i int) bool {
		en := x.Entry(i)
		if en.Server != t.Server || en.Kind != KindResponse || en.Dir != t.Runner || en.Error {
			return false
		}
		r, ok := read(i)
		if !ok || r.Result.Task == nil || r.Result.Task.TaskID != t.ID {
			return false
		}
		t.Created = i
		t.Create = x.Pair(i).Partner
		if t.Create >= 0 {
			t.Start = x.Entry(t.Create).Time
		}
		if t.Status == "" {
			t.Status = r.Result.Task.Status
		}
		return true
	}
	for i := seq - 1; i >= max(0, seq-createSearch); i-- {
		if try(i) {
			return
		}
	}
	for i := seq + 1; i < min(x.Len(), seq+createAhead); i++ {
		if try(i) {
			return
		}
	}
}
