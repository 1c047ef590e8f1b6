package export

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Task spans of a live recording: as export's (otlp_tasks.go), a task is
// one span, "task {creating call}", a child of that call's span, from its
// creation to its terminal status. Recording cannot wait for the tape's
// end to find the tasks (tape.Tasks reads an index), so liveTasks follows
// them as the lines are written, by the rules tape.Tasks reads them by: a
// CreateTaskResult answer creates a task; tasks/get, tasks/result and
// tasks/cancel requests and notifications/tasks/status name it by
// params.taskId; a tasks/get answer's or a notification's status is noted,
// a tasks/result answered without an error ends it completed (failed when
// a tool's error). Its span goes out when it reaches a terminal status
// (polls asked after that are not counted), and on Flush, at the end of
// the recording, as "unfinished" for those that never did.

// liveTask is a task being followed, and the call that created it.
type liveTask struct {
	task tape.Task
	call tape.Call // the creating call; Request -1 until its answer came
	sent bool      // its span went out
}

type liveTaskKey struct{ server, id string }

// liveTasks are the tasks of a live recording, in the order first seen.
type liveTasks struct {
	by    map[liveTaskKey]*liveTask
	order []liveTaskKey
}

// taskOf returns the task named id on server, begun when unknown.
func (l *liveTasks) taskOf(server, id string, runner tape.Dir) *liveTask {
	k := liveTaskKey{server, id}
	if lt, ok := l.by[k]; ok {
		return lt
	}
	if l.by == nil {
		l.by = map[liveTaskKey]*liveTask{}
	}
	lt := &liveTask{task: tape.Task{ID: id, Server: server, Runner: runner, Create: -1, Created: -1, Terminal: -1}, call: tape.Call{Request: -1}}
	l.by[k] = lt
	l.order = append(l.order, k)
	return lt
}

// taskMessage follows a request or notification e (at seq) of the tasks
// methods; other messages are left alone.
func (l *LiveCalls) taskMessage(e tape.Entry, seq int) {
	switch e.Method {
	case "tasks/get", "tasks/result", "tasks/cancel", "notifications/tasks/status":
	default:
		return
	}
	params := gjson.GetBytes(e.Raw, "params")
	id := params.Get("taskId").String()
	if id == "" {
		return
	}
	runner := e.Dir.Opposite() // the poller asks the runner
	if e.Kind == tape.KindNotification {
		runner = e.Dir
	}
	lt := l.tasks.taskOf(e.Server, id, runner)
	t := &lt.task
	if !e.Time.IsZero() && t.Terminal < 0 {
		t.End = e.Time
	}
	switch e.Method {
	case "notifications/tasks/status":
		t.Notes = append(t.Notes, seq)
		l.noteTask(lt, seq, e, params.Get("status").String())
	case "tasks/get":
		t.Polls = append(t.Polls, seq)
	case "tasks/result":
		t.Results = append(t.Results, seq)
	case "tasks/cancel":
		t.Cancels = append(t.Cancels, seq)
	}
}

// taskAnswer follows the answer e (at seq) of call c: a CreateTaskResult
// creates its task, a tasks/get answer says its status, a tasks/result
// answer ends it.
func (l *LiveCalls) taskAnswer(c tape.Call, e tape.Entry, seq int) {
	if c.Status == "error" || !bytes.Contains(c.ResponseRaw, []byte(`"taskId"`)) && c.Method != "tasks/result" {
		return
	}
	switch c.Method {
	case "tasks/get", "tasks/result", "tasks/cancel":
		id := gjson.GetBytes(c.RequestRaw, "params.taskId").String()
		lt, ok := l.tasks.by[liveTaskKey{c.Server, id}]
		if !ok {
			return
		}
		switch {
		case c.Method == "tasks/result" && lt.task.Terminal < 0:
			status := "completed" // the result came: the task was over
			if c.Status == "tool-error" {
				status = "failed"
			}
			l.noteTask(lt, seq, e, status)
		case c.Method != "tasks/result":
			l.noteTask(lt, seq, e, gjson.GetBytes(c.ResponseRaw, "result.status").String())
		}
		return
	}
	task := gjson.GetBytes(c.ResponseRaw, "result.task")
	id := task.Get("taskId").String()
	if id == "" {
		return
	}
	lt := l.tasks.taskOf(c.Server, id, e.Dir)
	if lt.call.Request >= 0 {
		return // created twice: the first holds
	}
	t := &lt.task
	lt.call = c
	t.Runner, t.Create, t.Created, t.Start = e.Dir, c.Request, seq, c.Start
	if t.Status == "" {
		t.Status = task.Get("status").String()
	}
	if t.Terminal < 0 && t.End.IsZero() {
		t.End = e.Time
	}
	if t.Terminal >= 0 {
		l.sendTask(lt) // it ended before its creation was answered
	}
}

// noteTask notes a status a message e (at seq) reported for lt; a
// terminal one ends it and sends its span.
func (l *LiveCalls) noteTask(lt *liveTask, seq int, e tape.Entry, status string) {
	if status == "" {
		return
	}
	t := &lt.task
	t.Status = status
	if tape.TerminalStatus(status) && t.Terminal < 0 {
		t.Terminal, t.End = seq, e.Time
		l.sendTask(lt)
	}
}

// sendTask sends lt's span once, when the call that created it is known.
func (l *LiveCalls) sendTask(lt *liveTask) {
	if lt.sent || lt.call.Request < 0 {
		return
	}
	lt.sent = true
	l.t.addTask(lt.task, lt.call)
}

// flushTasks sends the spans of the tasks never ended, as unfinished.
func (l *LiveCalls) flushTasks() {
	for _, k := range l.tasks.order {
		l.sendTask(l.tasks.by[k])
	}
	l.tasks = liveTasks{}
}

// addTask makes the span of task tk, created by call c (whose span add
// made), as export does.
func (t *Tracer) addTask(tk tape.Task, c tape.Call) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.emit(t.taskSpec(tk, c, t.spec(c, t.versions[c.Server])))
}
