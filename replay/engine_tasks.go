package replay

// Tasks: a recorded task's polls and result, served to however many polls
// the live client makes.
//
// tasks/get is an idempotent status read and tasks/result may come at any
// time (it waits for the task's end), so a client that polls more or less
// often than the recording's did, or asks for the result at once, is not
// departing from the tape. The engine serves each recorded task (one the
// server ran: tape.Tasks) from its status timeline instead of matching its
// reads one for one: poll k gets the k-th recorded status, the last one
// once they run out; under a speed the status recorded at the same point
// of the task's run (the recorded clock); after the result, the terminal
// status. Recorded reads left over, and reads beyond the recorded ones,
// are neither divergences nor unused.

import (
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// taskBook holds the recorded tasks the engine serves, built on first use,
// and the live ids of the tasks the client runs.
type taskBook struct {
	built  bool
	byID   map[string]*taskState
	reads  map[int]*taskState // recorded tasks/get and tasks/result requests → their task
	create map[int]*taskState // recorded creating requests → their task
	// client maps the recorded ids of tasks the client runs to the live
	// client's (quoted JSON strings).
	client map[string][]byte
}

// taskState is one recorded task and what the live client did with it.
type taskState struct {
	t tape.Task
	// timeline is the statuses a poll can be served: the recorded
	// tasks/get requests (their answers), or, when the recording never
	// polled, the CreateTaskResult and the status notifications.
	timeline []taskStatus
	terminal int // index in timeline of the first terminal status, or -1

	polls     int       // live tasks/get served
	last      int       // index in timeline last served
	liveStart time.Time // when the live creating call was answered
	resulted  bool      // the live client had the result
}

type taskStatus struct {
	seq    int
	at     time.Time
	poll   bool   // seq is a recorded tasks/get: its answer is served
	status string // the status it reports
	task   []byte // !poll: the Task object to answer with
}

// book returns the engine's task book, building it on first use.
func (e *Engine) book() *taskBook {
	b := &e.tasks
	if b.built {
		return b
	}
	b.built = true
	b.byID, b.reads, b.create = map[string]*taskState{}, map[int]*taskState{}, map[int]*taskState{}
	for _, t := range tape.Tasks(e.x) {
		if t.Server != e.server || t.Runner != tape.DirRecv {
			continue // a task the client ran is the client's to answer
		}
		ts := &taskState{t: t, terminal: -1}
		for _, p := range t.Polls {
			if a := e.x.Pair(p).Partner; a >= 0 && !e.x.Entry(a).Error {
				if m, err := e.x.Message(a); err == nil {
					ts.timeline = append(ts.timeline, taskStatus{seq: p, at: e.x.Entry(p).Time, poll: true,
						status: gjson.GetBytes(m.Raw, "result.status").String()})
				}
			}
		}
		var notes []taskStatus
		if t.Created >= 0 {
			if m, err := e.x.Message(t.Created); err == nil {
				if task := gjson.GetBytes(m.Raw, "result.task"); task.IsObject() {
					notes = append(notes, taskStatus{seq: t.Created, at: e.x.Entry(t.Created).Time, status: task.Get("status").String(), task: []byte(task.Raw)})
				}
			}
		}
		for _, n := range t.Notes {
			if m, err := e.x.Message(n); err == nil {
				if p := gjson.GetBytes(m.Raw, "params"); p.IsObject() {
					notes = append(notes, taskStatus{seq: n, at: e.x.Entry(n).Time, status: p.Get("status").String(), task: []byte(p.Raw)})
				}
			}
		}
		if len(ts.timeline) == 0 {
			ts.timeline = notes
		}
		ts.terminal = slices.IndexFunc(ts.timeline, func(s taskStatus) bool { return tape.TerminalStatus(s.status) })
		if ts.terminal < 0 {
			// The recording's client stopped polling before the end: a
			// poll after the result gets the terminal status it announced.
			if i := slices.IndexFunc(notes, func(s taskStatus) bool { return tape.TerminalStatus(s.status) }); i >= 0 {
				ts.timeline = append(ts.timeline, notes[i])
				ts.terminal = len(ts.timeline) - 1
			}
		}
		b.byID[t.ID] = ts
		for _, r := range slices.Concat(t.Polls, t.Results) {
			b.reads[r] = ts
		}
		if t.Create >= 0 {
			b.create[t.Create] = ts
		}
	}
	return b
}

// isTaskRead reports whether recorded request seq is a poll or result
// read of a task the engine serves from its timeline: strict order and
// the report of unused requests pass over it.
func (e *Engine) isTaskRead(seq int) bool {
	if m := e.x.Entry(seq).Method; m != "tasks/get" && m != "tasks/result" {
		return false
	}
	_, ok := e.book().reads[seq]
	return ok
}

// taskCreated notes when the live call that created recorded task seq
// was answered: the recorded clock of its statuses starts then.
func (e *Engine) taskCreated(seq int) {
	if !e.x.HasMethod("tasks/get") && !e.x.HasMethod("tasks/result") {
		return
	}
	if ts, ok := e.book().create[seq]; ok {
		ts.liveStart = e.pos.now
	}
}

// taskRead serves live request m when it is a tasks/get or tasks/result
// of a recorded task, and reports whether it did.
func (e *Engine) taskRead(m tape.Entry) bool {
	if m.Method != "tasks/get" && m.Method != "tasks/result" {
		return false
	}
	ts, ok := e.book().byID[gjson.GetBytes(m.Raw, "params.taskId").String()]
	if !ok {
		return false
	}
	if m.Method == "tasks/result" {
		if len(ts.t.Results) == 0 {
			return false // never fetched when recording: nothing to answer with
		}
		ts.resulted = true
		e.serveRead(m, ts.t.Results[0])
		if e.opts.Speed > 0 && !ts.liveStart.IsZero() && ts.t.Duration() > 0 {
			// tasks/result waits for the task's end: not before the
			// recorded run is over, at the replay's speed.
			e.notBefore(m.ID, ts.liveStart.Add(time.Duration(float64(ts.t.Duration())/e.opts.Speed)))
		}
		return true
	}
	if len(ts.timeline) == 0 {
		return false
	}
	i := min(ts.polls, len(ts.timeline)-1)
	if e.opts.Speed > 0 && !ts.liveStart.IsZero() && !ts.t.Start.IsZero() {
		// By the recorded clock: the last status recorded by this point of
		// the task's run.
		target := ts.t.Start.Add(time.Duration(float64(e.pos.now.Sub(ts.liveStart)) * e.opts.Speed))
		i = 0
		for j, s := range ts.timeline {
			if !s.at.IsZero() && !s.at.After(target) {
				i = j
			}
		}
	}
	if ts.resulted && ts.terminal >= 0 {
		i = max(i, ts.terminal)
	}
	i = max(i, ts.last) // a status never goes back
	ts.polls++
	ts.last = i
	s := ts.timeline[i]
	if s.poll {
		e.serveRead(m, s.seq)
		return true
	}
	e.report.matched++
	msg := make([]byte, 0, len(s.task)+len(m.ID)+40)
	msg = append(append(append(append(msg, `{"jsonrpc":"2.0","id":`...), m.ID...), `,"result":`...), s.task...)
	e.push(append(msg, '}'), e.pos.now, -1, m.ID, nil)
	return true
}

// serveRead answers live request m with recorded read seq's answer, as
// consume does, whether or not the frontier has passed seq already.
func (e *Engine) serveRead(m tape.Entry, seq int) {
	e.report.matched++
	e.order.lost = false
	e.report.used[seq] = true
	e.setRef(seq)
	if seq >= e.pos.frontier {
		e.pass(seq)
	}
	e.respond(m, seq)
	e.advance()
}

// notBefore delays the queued answer to live request id to at the
// earliest.
func (e *Engine) notBefore(id tape.ID, at time.Time) {
	for i, o := range e.out.queue {
		if o.reqID == id && o.Seq >= 0 && o.At.Before(at) {
			e.out.queue = slices.Delete(e.out.queue, i, i+1)
			o.At = at
			e.pushOutput(o)
			return
		}
	}
}

// noteClientTask maps the recorded id of a task the client runs (its
// recorded reply rec was a CreateTaskResult) to the live client's id
// (live): the server's recorded polls of it go out with the live id, as
// progress notifications carry the live progressToken.
func (e *Engine) noteClientTask(rec, live []byte) {
	r, l := gjson.GetBytes(rec, "result.task.taskId"), gjson.GetBytes(live, "result.task.taskId")
	if r.Type != gjson.String || l.Type != gjson.String || r.Str == l.Str {
		return
	}
	if e.tasks.client == nil {
		e.tasks.client = map[string][]byte{}
	}
	e.tasks.client[r.Str] = []byte(l.Raw)
}

// liveTaskID gives a recorded server request about a task the client runs
// (tasks/get, tasks/result, tasks/cancel) the live client's task id.
func (e *Engine) liveTaskID(method string, body []byte) []byte {
	if len(e.tasks.client) == 0 || (method != "tasks/get" && method != "tasks/result" && method != "tasks/cancel") {
		return body
	}
	if live, ok := e.tasks.client[gjson.GetBytes(body, "params.taskId").String()]; ok {
		return jsonrpc.Splice(body, "params.taskId", live)
	}
	return body
}

// dropVolatileTask removes from a normalized reply what a task's runner
// chooses afresh each run: its id and timestamps (in a CreateTaskResult,
// a tasks/get answer, and a result's related-task _meta). The status a
// tasks/get reply reports is a snapshot of when the poll came, which
// replay's pace sets: it goes too.
func dropVolatileTask(method string, v any) {
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return
	}
	tape.DropTaskVolatile(res)
	if method == "tasks/get" {
		delete(res, "status")
		delete(res, "statusMessage")
	}
}
