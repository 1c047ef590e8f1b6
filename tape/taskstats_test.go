package tape_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// indexOf indexes tape lines held in memory.
func indexOf(t *testing.T, lines ...string) *tape.Index {
	t.Helper()
	b := []byte(strings.Join(lines, "\n") + "\n")
	x := tape.NewIndex(bytes.NewReader(b))
	if err := x.Extend(int64(len(b)), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	return x
}

// TestAddTaskStats: the recorded task is one entry lasting from its
// tools/call (07.036) to the status notification that said completed
// (11.062), not to the tasks/result answer read later (11.992) nor the
// call's 17 ms; a failed and a cancelled task count as such, one never
// ended as unfinished.
func TestAddTaskStats(t *testing.T) {
	x := openFixture(t, "ts-everything-task.tape.jsonl")
	st := tape.ComputeStats(x, "")
	tape.AddTaskStats(&st, x)
	got := st.Servers[0].Tasks
	if len(got) != 1 {
		t.Fatalf("%d task rows, want 1: %+v", len(got), got)
	}
	ts := got[0]
	if ts.Created != "tools/call simulate-research-query" || ts.Runner != tape.DirRecv || ts.Tasks != 1 || ts.Completed != 1 || ts.Failed+ts.Cancelled+ts.Unfinished != 0 {
		t.Errorf("row %+v, want one completed task created by tools/call simulate-research-query, run by the server", ts)
	}
	if ts.Duration.Max != 4026*time.Millisecond {
		t.Errorf("duration %v, want 4.026s (created 07.036, completed 11.062)", ts.Duration.Max)
	}

	meta := func(dir, ts string) string {
		return `"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-01-01T00:00:` + ts + `Z"}`
	}
	y := indexOf(t,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"job","task":{}},`+meta("send", "00.000")+`}`,
		`{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"a","status":"working"}},`+meta("recv", "00.010")+`}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"job","task":{}},`+meta("send", "00.020")+`}`,
		`{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"b","status":"working"}},`+meta("recv", "00.030")+`}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"job","task":{}},`+meta("send", "00.040")+`}`,
		`{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"c","status":"working"}},`+meta("recv", "00.050")+`}`,
		`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"a"},`+meta("send", "02.000")+`}`,
		`{"jsonrpc":"2.0","id":4,"result":{"taskId":"a","status":"failed"},`+meta("recv", "02.000")+`}`,
		`{"jsonrpc":"2.0","id":5,"method":"tasks/cancel","params":{"taskId":"b"},`+meta("send", "03.020")+`}`,
		`{"jsonrpc":"2.0","id":5,"result":{"taskId":"b","status":"cancelled"},`+meta("recv", "03.020")+`}`,
		`{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"c"},`+meta("send", "04.000")+`}`,
		`{"jsonrpc":"2.0","id":6,"result":{"taskId":"c","status":"working"},`+meta("recv", "04.000")+`}`,
	)
	st = tape.ComputeStats(y, "")
	tape.AddTaskStats(&st, y)
	ts = st.Servers[0].Tasks[0]
	if ts.Tasks != 3 || ts.Failed != 1 || ts.Cancelled != 1 || ts.Unfinished != 1 || ts.Completed != 0 || ts.Duration.Max != 3960*time.Millisecond {
		t.Errorf("row %+v, want 3 tasks: 1 failed, 1 cancelled, 1 unfinished; the longest 3.96s (unfinished c: 00.040 to its last poll)", ts)
	}
	if h, rows := st.Servers[0].TaskTable(); len(h) != 10 || len(rows) != 1 || rows[0][0] != "tools/call job" || rows[0][4] != "1" {
		t.Errorf("task table %q %q", h, rows)
	}
}
