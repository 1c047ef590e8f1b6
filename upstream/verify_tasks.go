package upstream

// Tasks and input_required in verify.
//
// A live server chooses its task ids and its input_required requestState
// afresh each run: verify learns them from the live answers (the
// CreateTaskResult's result.task.taskId, an input_required result's
// result.requestState) and splices them into the later requests that
// carried the recorded ones, and leaves them, with a task's timestamps,
// out of the comparison. A task's reads go at the recorded pace, and a
// poll whose recorded answer held the task's terminal status is repeated
// (every pollInterval) until the live task reaches a terminal status or
// the call's timeout passes: a live task runs at its own speed.

import (
	"context"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

// taskPoll is a tasks/get call that may be repeated until the live task
// reaches a terminal status.
type taskPoll struct {
	body     []byte // the request sent, without its id
	terminal string // the task's recorded terminal status, or ""
	every    time.Duration
	resendAt time.Time // zero unless waiting to poll again
	last     string    // the live status of the latest answer
}

// How often a terminal poll is repeated, and how long a read is paced.
const (
	pollMin = 100 * time.Millisecond
	pollMax = 5 * time.Second
	// paceMax caps the recorded gap verify waits before a task read.
	paceMax = 10 * time.Second
)

// serverTasks indexes the tasks the server ran by their reads (tasks/get
// and tasks/result seqs), once.
func (v *verifier) serverTasks() map[int]tape.Task {
	if v.taskReads != nil {
		return v.taskReads
	}
	v.taskReads = map[int]tape.Task{}
	for _, t := range tape.Tasks(v.x) {
		if t.Server != v.server || t.Runner != tape.DirRecv {
			continue
		}
		for _, s := range append(append([]int(nil), t.Polls...), t.Results...) {
			v.taskReads[s] = t
		}
	}
	return v.taskReads
}

// liveValues gives a request the live task id and requestState learnt
// from earlier answers in place of the recorded ones.
func (v *verifier) liveValues(body []byte) []byte {
	if len(v.subst) == 0 {
		return body
	}
	for _, path := range []string{"params.taskId", "params.requestState"} {
		if r := gjson.GetBytes(body, path); r.Type == gjson.String {
			if live, ok := v.subst[r.Str]; ok {
				body = jsonrpc.Splice(body, path, live)
			}
		}
	}
	return body
}

// learn maps the task id and requestState of recorded answer rec to the
// live answer's, when they differ.
func (v *verifier) learn(rec, live []byte) {
	for _, path := range []string{"result.task.taskId", "result.requestState"} {
		r, l := gjson.GetBytes(rec, path), gjson.GetBytes(live, path)
		if r.Type != gjson.String || l.Type != gjson.String || r.Str == l.Str {
			continue
		}
		if v.subst == nil {
			v.subst = map[string][]byte{}
		}
		v.subst[r.Str] = []byte(l.Raw)
	}
}

// pace waits, before task read seq, the recorded gap since the client's
// previous message (at most paceMax): a client polls at its own pace, and
// a poll sent at once would see an earlier status than the recording's.
func (v *verifier) pace(ctx context.Context, seq int) error {
	if _, ok := v.serverTasks()[seq]; !ok {
		return nil
	}
	at := v.x.Entry(seq).Time
	for i := seq - 1; i >= 0 && !at.IsZero(); i-- {
		en := v.x.Entry(i)
		if en.Server != v.server || en.Dir != tape.DirSend || !en.IsWire() {
			continue
		}
		gap := at.Sub(en.Time)
		if en.Time.IsZero() || gap <= 0 {
			return nil
		}
		t := time.NewTimer(min(gap, paceMax))
		defer t.Stop()
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// newPoll returns the poll state of recorded tasks/get seq, sent as body
// (without its id), or nil for another request.
func (v *verifier) newPoll(seq int, method string, body []byte) *taskPoll {
	t, ok := v.serverTasks()[seq]
	if !ok || method != "tasks/get" {
		return nil
	}
	p := &taskPoll{body: body, every: time.Second}
	if tape.TerminalStatus(t.Status) {
		p.terminal = t.Status
	}
	if r := v.x.Pair(seq).Partner; r >= 0 {
		if m, err := v.x.Message(r); err == nil {
			if ms := gjson.GetBytes(m.Raw, "result.pollInterval"); ms.Type == gjson.Number {
				p.every = time.Duration(ms.Float() * float64(time.Millisecond))
			}
		}
	}
	p.every = min(max(p.every, pollMin), pollMax)
	return p
}

// repoll reports whether call c, a poll whose recorded answer rec held the
// task's terminal status, must be asked again: the live answer live says
// the task still runs and the call's time is not up. It schedules it.
func (v *verifier) repoll(c *call, rec, live []byte) bool {
	p := c.poll
	if p == nil {
		return false
	}
	p.last = gjson.GetBytes(live, "result.status").String()
	want := gjson.GetBytes(rec, "result.status").String()
	if !tape.TerminalStatus(want) || p.last == "" || tape.TerminalStatus(p.last) {
		return false
	}
	next := v.opts.Now().Add(p.every)
	if next.After(c.deadline) {
		c.res.Problem = fmt.Sprintf("the live task was still %s when the call's %v ran out", p.last, v.opts.Timeout)
		return false
	}
	p.resendAt = next
	v.polling = append(v.polling, c)
	return true
}

// resendPolls sends again the polls whose time has come.
func (v *verifier) resendPolls(ctx context.Context) error {
	now := v.opts.Now()
	kept := v.polling[:0]
	for _, c := range v.polling {
		if c.poll.resendAt.After(now) {
			kept = append(kept, c)
			continue
		}
		c.poll.resendAt = time.Time{}
		v.next++
		live := tape.ID(fmt.Sprint(v.next))
		if err := v.conn.Send(ctx, jsonrpc.SpliceID(c.poll.body, []byte(live))); err != nil {
			c.res.Problem, c.decided = "poll not sent: "+err.Error(), true
			continue
		}
		c.res.Polls++
		v.flight[live] = c
	}
	clear(v.polling[len(kept):])
	v.polling = kept
	return nil
}

// statusSnapshot reports whether the status of a tasks/get answer is left
// out of the comparison: the recorded one was not terminal (a snapshot of
// when the poll came) and the live one is a status the recorded task went
// through (still running, or the status it ended with).
func statusSnapshot(c *call, method string, rec, live []byte) bool {
	if method != "tasks/get" || c.poll == nil {
		return false
	}
	want, got := gjson.GetBytes(rec, "result.status").String(), gjson.GetBytes(live, "result.status").String()
	if want == "" || tape.TerminalStatus(want) {
		return false
	}
	return !tape.TerminalStatus(got) || got == c.poll.terminal
}

// dropVolatile removes from a normalized answer what the live server
// chooses afresh: task ids and timestamps, requestState, and with
// snapshot a poll's status and statusMessage.
func dropVolatile(a any, snapshot bool) {
	m, ok := a.(map[string]any)
	if !ok {
		return
	}
	res, ok := m["result"].(map[string]any)
	if !ok {
		return
	}
	delete(res, "requestState")
	tape.DropTaskVolatile(res)
	if snapshot {
		delete(res, "status")
		delete(res, "statusMessage")
	}
}
