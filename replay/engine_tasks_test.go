package replay

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// taskTape opens the recorded research task (server-everything's
// simulate-research-query run as a task by the TypeScript SDK's client:
// 3 polls, tasks/result, one more poll) and returns it with the client's
// recorded messages up to the call that created the task, and the task.
func taskTape(t *testing.T) (*tape.Index, []string, tape.Task) {
	t.Helper()
	x, err := tape.OpenIndex(filepath.Join("..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	tasks := tape.Tasks(x)
	if len(tasks) != 1 {
		t.Fatalf("the fixture holds %d tasks, want 1", len(tasks))
	}
	var head []string
	for i := 0; i <= tasks[0].Create; i++ {
		if en := x.Entry(i); en.Dir == tape.DirSend && en.IsWire() {
			m, err := x.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			head = append(head, string(tape.StripMeta(m.Raw)))
		}
	}
	return x, head, tasks[0]
}

func taskReq(id int, method, task string) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":%q,"params":{"taskId":%q}}`, 100+id, method, task)
}

// answerTo returns the output answering live id 100+id.
func answerTo(t *testing.T, out []Output, id int) []byte {
	t.Helper()
	for _, o := range out {
		if gjson.GetBytes(o.Msg, "id").Int() == int64(100+id) {
			return o.Msg
		}
	}
	t.Fatalf("no answer to request %d among %d outputs", 100+id, len(out))
	return nil
}

// TestEngineTaskPolls: a client that polls a recorded task fewer or more
// times than the recording did (0, 1, 3, 10), then asks for the result
// and polls once more, is served the recorded statuses in order (the last
// one once they run out), the result, then the terminal status: no
// divergence, nothing unused, in strict and keyed mode. Before, strict
// answered the early tasks/result -32090 and keyed reported the polls not
// made unused.
func TestEngineTaskPolls(t *testing.T) {
	x, head, task := taskTape(t)
	for _, mode := range []Mode{Strict, Keyed} {
		for _, polls := range []int{0, 1, 3, 10} {
			t.Run(fmt.Sprintf("%s/%d", mode, polls), func(t *testing.T) {
				e := mustEngine(t, x, EngineOptions{Mode: mode})
				feed(t, e, head...)
				var statuses []string
				for i := range polls {
					out := feed(t, e, taskReq(i, "tasks/get", task.ID))
					statuses = append(statuses, gjson.GetBytes(answerTo(t, out, i), "result.status").String())
				}
				out := feed(t, e, taskReq(polls, "tasks/result", task.ID))
				if text := gjson.GetBytes(answerTo(t, out, polls), "result.content.0.text").String(); !strings.HasPrefix(text, "# Research Report") {
					t.Errorf("tasks/result answered %q, want the recorded report", text)
				}
				out = feed(t, e, taskReq(polls+1, "tasks/get", task.ID))
				if s := gjson.GetBytes(answerTo(t, out, polls+1), "result.status").String(); s != "completed" {
					t.Errorf("a poll after the result got status %q, want completed", s)
				}
				for i, s := range statuses {
					if s != "working" && !(i >= 3 && s == "completed") {
						t.Errorf("poll %d got %q, want working (the recorded 3 polls), then the last recorded status", i+1, s)
					}
				}
				r := e.Report()
				if len(r.Divergences) != 0 || len(r.Unused) != 0 || r.Matched != r.Requests {
					t.Errorf("report: %d divergences %v, %d unused %v, %d of %d matched; want a clean report", len(r.Divergences), r.Divergences, len(r.Unused), r.Unused, r.Matched, r.Requests)
				}
			})
		}
	}
}

// drain returns every output e has queued, due or not.
func drain(e *Engine) []Output {
	var out []Output
	for {
		at, ok := e.NextDue()
		if !ok {
			return out
		}
		out = append(out, e.Poll(at)...)
	}
}

// TestEngineTaskClock: under a speed, a poll gets the status recorded at
// the same point of the task's run, and tasks/result asked at once is not
// due before the recorded run is over.
func TestEngineTaskClock(t *testing.T) {
	x, head, task := taskTape(t)
	e := mustEngine(t, x, EngineOptions{Speed: 1})
	start := t0
	for _, m := range head {
		e.Receive([]byte(m), start)
	}
	drain(e)
	out := append(e.Receive([]byte(taskReq(0, "tasks/get", task.ID)), start.Add(100*time.Millisecond)), drain(e)...)
	if s := gjson.GetBytes(answerTo(t, out, 0), "result.status").String(); s != "working" {
		t.Errorf("a poll 100 ms into the run got %q, want working", s)
	}
	out = append(e.Receive([]byte(taskReq(1, "tasks/result", task.ID)), start.Add(200*time.Millisecond)), drain(e)...)
	answerTo(t, out, 1)
	var due time.Time
	for _, o := range out {
		if gjson.GetBytes(o.Msg, "id").Int() == 101 {
			due = o.At
		}
	}
	if want := start.Add(task.Duration()); due.Before(want) {
		t.Errorf("tasks/result due %v after the start, want not before the recorded run's end, %v", due.Sub(start), task.Duration())
	}
	out = append(e.Receive([]byte(taskReq(2, "tasks/get", task.ID)), due.Add(time.Second)), drain(e)...)
	if s := gjson.GetBytes(answerTo(t, out, 2), "result.status").String(); s != "completed" {
		t.Errorf("a poll after the run got %q, want completed", s)
	}
}

// TestEngineClientTask: replaying trigger-sampling-request-async, whose
// server had the client run the sampling as a task and polled it
// (tasks/get, tasks/result) before answering the tool call: the replay
// sends each recorded poll with the live client's task id, holds the
// tool's answer until all were answered, and takes the client's own task
// id and times for what they are (no divergence). Before, the answer went
// out after the first reply, the polls never, and the reply diverged on
// taskId, createdAt and lastUpdatedAt.
func TestEngineClientTask(t *testing.T) {
	x, err := tape.OpenIndex(filepath.Join("..", "testdata", "ts-everything-task-sampling.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, mode := range []Mode{Strict, Keyed} {
		t.Run(mode.String(), func(t *testing.T) {
			e := mustEngine(t, x, EngineOptions{Mode: mode})
			var out []Output
			var sent []string
			for i := range x.Len() {
				en := x.Entry(i)
				if en.Dir != tape.DirSend || en.Kind == tape.KindResponse || !en.IsWire() {
					continue
				}
				m, _ := x.Message(i)
				out = append(out, feed(t, e, string(tape.StripMeta(m.Raw)))...)
			}
			const live = "0123456789abcdef0123456789abcdef"
			for range 5 { // answer the server's requests as a client whose task id is live
				var next []Output
				for _, o := range out {
					if o.Divergence != nil {
						t.Fatalf("divergence: %s", o.Divergence.Message)
					}
					method := gjson.GetBytes(o.Msg, "method").String()
					id := gjson.GetBytes(o.Msg, "id").Raw
					var reply string
					switch method {
					case "sampling/createMessage":
						reply = `{"jsonrpc":"2.0","id":` + id + `,"result":{"task":{"taskId":"` + live + `","status":"working","ttl":300000,"createdAt":"2030-01-01T00:00:00Z","lastUpdatedAt":"2030-01-01T00:00:00Z","pollInterval":1000}}}`
					case "tasks/get", "tasks/result":
						sent = append(sent, method)
						if got := gjson.GetBytes(o.Msg, "params.taskId").String(); got != live {
							t.Errorf("%s asked about task %q, want the live client's %q", method, got, live)
						}
						if method == "tasks/get" {
							reply = `{"jsonrpc":"2.0","id":` + id + `,"result":{"taskId":"` + live + `","status":"working","ttl":300000,"createdAt":"2030-01-01T00:00:00Z","lastUpdatedAt":"2030-01-01T00:00:01Z","pollInterval":1000}}`
						} else {
							reply = `{"jsonrpc":"2.0","id":` + id + `,"result":{"role":"assistant","content":{"type":"text","text":"sampled: 1 message(s)"},"model":"scripted","_meta":{"io.modelcontextprotocol/related-task":{"taskId":"` + live + `"}}}}`
						}
					default:
						if gjson.GetBytes(o.Msg, "result.content").Exists() {
							sent = append(sent, "answer")
						}
						continue
					}
					next = append(next, feed(t, e, reply)...)
				}
				out = next
			}
			if got := strings.Join(sent, " "); got != "tasks/get tasks/result answer" {
				t.Errorf("the replay sent %q, want the recorded polls, then the tool's answer", got)
			}
			if r := e.Report(); len(r.Divergences) != 0 {
				t.Errorf("divergences: %v", r.Divergences)
			}
		})
	}
}
