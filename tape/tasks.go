package tape

import (
	"bytes"
	"strings"
	"time"
	"unicode/utf8"
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

// createSearch bounds how far before a task's first poll Tasks looks for
// the answer that created it.
const createSearch = 4096

// createAhead bounds how far after a task's first message (a status
// notification) Tasks looks for the answer that created it.
const createAhead = 64

// HasTasks reports whether x holds a message of the tasks methods (a
// poll, a result, a cancel, a status notification): whether Tasks may
// find any. It reads only the index's methods.
func HasTasks(x *Index) bool {
	return x.HasMethod("tasks/get") || x.HasMethod("tasks/result") || x.HasMethod("notifications/tasks/status") || x.HasMethod("tasks/cancel")
}

// Tasks returns the tasks recorded on x, in the order of their first
// message. Only messages of the tasks methods, their answers and the
// answers that may have created a task are read, and of those only the
// fields a task needs (taskBody): a tape without tasks costs a look at the
// index's methods and no body read.
func Tasks(x *Index) []Task {
	if !HasTasks(x) {
		return nil
	}
	s := newTaskScan(x)
	byID := map[string]map[string]int{} // server -> taskId -> index in tasks
	var tasks []Task
	note := func(t *Task, seq int, status string, at time.Time) {
		if status == "" {
			return
		}
		t.Status = status
		// A tasks/result's answer is noted when its request is read, before
		// the status messages recorded between them: the earliest wins.
		if TerminalStatus(status) && (t.Terminal < 0 || seq < t.Terminal) {
			t.Terminal = seq
			t.End = at
		}
	}
	for _, en := range s.messages() {
		b, ok := s.body(en.seq)
		if !ok || !b.paramsID.ok() || b.paramsID.len() == 2 {
			continue // no taskId, or "": not about a task
		}
		// Read all of the body now: finding the creating answer reads others.
		status := ""
		if b.paramsStatus.ok() {
			status = decodeString(b.raw, b.paramsStatus)
		}
		ids := byID[en.server]
		ti, seen := ids[string(taskString(b.raw, b.paramsID))]
		if !seen {
			id := decodeString(b.raw, b.paramsID)
			if ids == nil {
				ids = map[string]int{}
				byID[en.server] = ids
			}
			ti = len(tasks)
			ids[id] = ti
			runner := en.dir.Opposite() // the poller asks the runner
			if en.kind == KindNotification {
				runner = en.dir
			}
			tasks = append(tasks, Task{ID: id, Server: en.server, Runner: runner, Create: -1, Created: -1, Terminal: -1})
			s.findCreate(&tasks[ti], en.seq)
		}
		t := &tasks[ti]
		if !en.time.IsZero() && t.Terminal < 0 {
			t.End = en.time
		}
		switch en.method {
		case taskNote:
			t.Notes = append(t.Notes, en.seq)
			note(t, en.seq, status, en.time)
			continue
		case taskGet:
			t.Polls = append(t.Polls, en.seq)
		case taskResult:
			t.Results = append(t.Results, en.seq)
		case taskCancel:
			t.Cancels = append(t.Cancels, en.seq)
		}
		if en.partner < 0 {
			continue
		}
		switch {
		case en.method == taskResult && !en.ansError && t.Terminal < 0:
			// The result came: the task was over, whatever it reported.
			status := "completed"
			if en.ansToolError {
				status = "failed"
			}
			note(t, en.partner, status, en.ansTime)
		case en.method != taskResult && !en.ansError:
			a, ok := s.body(en.partner)
			if !ok || !a.resultStatus.ok() || a.resultStatus.len() == 2 {
				continue // no status to note
			}
			note(t, en.partner, decodeString(a.raw, a.resultStatus), en.ansTime)
		}
	}
	return tasks
}

// findCreate finds the answer that created task t: a CreateTaskResult
// with its id, searched back from its first message at seq, then a
// little ahead (a runner may announce the status before it answers).
func (s *taskScan) findCreate(t *Task, seq int) {
	id := []byte(t.ID)
	// A string decodes to t.ID only if it holds it, or an escape, or (when
	// t.ID has U+FFFD) bytes that are not UTF-8: other answers are not read.
	anyRaw := strings.ContainsRune(t.ID, utf8.RuneError)
	try := func(i int) bool {
		if !s.mayCreate(i, t.Server, t.Runner) {
			return false
		}
		raw, err := s.raw(i)
		if err != nil || !anyRaw && !bytes.Contains(raw, id) && bytes.IndexByte(raw, '\\') < 0 {
			return false
		}
		b, ok := s.parse(raw)
		if !ok || !b.task || !b.taskID.ok() || string(taskString(b.raw, b.taskID)) != t.ID {
			return false
		}
		t.Created = i
		t.Create, t.Start = s.creator(i)
		if t.Status == "" && b.taskStatus.ok() {
			t.Status = decodeString(b.raw, b.taskStatus)
		}
		return true
	}
	for i := seq - 1; i >= max(0, seq-createSearch); i-- {
		if try(i) {
			return
		}
	}
	for i := seq + 1; i < min(s.n, seq+createAhead); i++ {
		if try(i) {
			return
		}
	}
}

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
