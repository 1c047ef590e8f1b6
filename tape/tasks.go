package tape

import (
	"encoding/json"
	"time"
)

// Tasks
//
// MCP's tasks (2025-11-25): a request sent with params.task is answered at
// once with a CreateTaskResult ({"task": {"taskId", "status", ...}}); the
// requester then polls tasks/get, an idempotent status read, as often as
// it likes, and fetches the outcome with tasks/result, which may come at
// any time (it waits for the end). The server runs tasks for the client
// (tools/call), and the client for the server (sampling/createMessage,
// elicitation/create). A task is one thing: created, a status timeline, a
// result; Tasks finds each on a tape so that replay, stats and the
// debugger treat it as one.

// Task is one task as a tape recorded it. Sequence numbers are -1 when
// the tape does not hold the message.
type Task struct {
	ID     string // the taskId
	Server string
	// Runner is the side that ran the task: DirRecv for the server (the
	// client created it with a tools/call), DirSend for the client (the
	// server created it with a request to the client).
	Runner Dir
	// Create is the request that created the task and Created its
	// CreateTaskResult answer.
	Create, Created int
	// Polls are the tasks/get requests, Results the tasks/result ones,
	// Cancels the tasks/cancel ones, each in recorded order.
	Polls, Results, Cancels []int
	// Notes are the notifications/tasks/status the runner sent.
	Notes []int
	// Status is the last status recorded, and Terminal the first message
	// that reported a terminal one (completed, failed, cancelled), or -1.
	Status   string
	Terminal int
	// Start is when the task was created (the creating request's time),
	// End when it reached its terminal status, or the last message about
	// it when it never did. Either is zero when the tape has no time.
	Start, End time.Time
}

// Duration is how long the task ran: from its creation to its terminal
// status (or the last message about it); 0 when the tape has no times.
func (t Task) Duration() time.Duration {
	if t.Start.IsZero() || t.End.IsZero() || t.End.Before(t.Start) {
		return 0
	}
	return t.End.Sub(t.Start)
}

// Failed reports whether the task ended failed or cancelled.
func (t Task) Failed() bool { return t.Status == "failed" || t.Status == "cancelled" }

// TerminalStatus reports whether a task status is final: completed,
// failed or cancelled.
func TerminalStatus(s string) bool {
	return s == "completed" || s == "failed" || s == "cancelled"
}

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

// createSearch bounds how far before a task's first poll Tasks looks for
// the answer that created it.
const createSearch = 4096

// HasTasks reports whether x holds a message of the tasks methods (a
// poll, a result, a cancel, a status notification): whether Tasks may
// find any. It reads only the index's methods.
func HasTasks(x *Index) bool {
	return x.HasMethod("tasks/get") || x.HasMethod("tasks/result") || x.HasMethod("notifications/tasks/status") || x.HasMethod("tasks/cancel")
}

// Tasks returns the tasks recorded on x, in the order of their first
// message. Only messages of the tasks methods (and the answers that
// created tasks) are read: a tape without tasks costs one pass over the
// index and no body read.
func Tasks(x *Index) []Task {
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
			findCreate(x, &tasks[ti], i, read)
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
func findCreate(x *Index, t *Task, seq int, read func(int) (taskRead, bool)) {
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

// createAhead bounds how far after a task's first message (a status
// notification) Tasks looks for the answer that created it.
const createAhead = 64

// DropTaskVolatile removes from a decoded result what a task's runner
// chooses afresh each run: its id and timestamps, in a CreateTaskResult
// (result.task), a tasks/get answer (the result itself), each task of a
// tasks/list answer (result.tasks) and a result's related-task _meta. The
// comparisons of replay and verify both use it.
func DropTaskVolatile(res map[string]any) {
	objs := []any{res, res["task"]}
	if list, ok := res["tasks"].([]any); ok {
		objs = append(objs, list...)
	}
	for _, obj := range objs {
		if o, ok := obj.(map[string]any); ok {
			delete(o, "taskId")
			delete(o, "createdAt")
			delete(o, "lastUpdatedAt")
		}
	}
	if meta, ok := res["_meta"].(map[string]any); ok {
		if rt, ok := meta["io.modelcontextprotocol/related-task"].(map[string]any); ok {
			delete(rt, "taskId")
		}
	}
}
