package check

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// A task that ended failed or cancelled is a failure finding at the
// message that said so; one that completed is none; --max-duration reads
// the task's duration (creation to terminal status), not its call's.
func TestTaskFindings(t *testing.T) {
	x := index(t,
		rec("send", 0, `"id":1,"method":"tools/call","params":{"name":"job","task":{}}`),
		rec("recv", 5, `"id":1,"result":{"task":{"taskId":"a","status":"working"}}`),
		rec("send", 10, `"id":2,"method":"tools/call","params":{"name":"job","task":{}}`),
		rec("recv", 15, `"id":2,"result":{"task":{"taskId":"b","status":"working"}}`),
		rec("send", 20, `"id":3,"method":"tools/call","params":{"name":"job","task":{}}`),
		rec("recv", 25, `"id":3,"result":{"task":{"taskId":"c","status":"working"}}`),
		rec("recv", 2000, `"method":"notifications/tasks/status","params":{"taskId":"a","status":"failed"}`),
		rec("send", 3000, `"id":4,"method":"tasks/cancel","params":{"taskId":"b"}`),
		rec("recv", 3010, `"id":4,"result":{"taskId":"b","status":"cancelled"}`),
		rec("send", 4000, `"id":5,"method":"tasks/get","params":{"taskId":"c"}`),
		rec("recv", 4020, `"id":5,"result":{"taskId":"c","status":"completed"}`),
	)
	got := mustTape(t, "t", x, Options{FailOn: DefaultFailOn, MaxDuration: 3 * time.Second})
	want := []short{
		{RuleTaskFailed, 7, "task a (tools/call job) ended failed after 2.00s", true},
		{RuleTaskFailed, 9, "task b (tools/call job) ended cancelled after 3.00s", true},
		{RuleSlow, 11, "task c (tools/call job) ran 4.00s, over 3s", true},
	}
	var have []short
	for _, f := range got {
		have = append(have, short{f.Rule, f.Line, f.Message, f.Fail})
	}
	if !slices.Equal(have, want) {
		t.Fatalf("findings:\n%+v\nwant:\n%+v", have, want)
	}

	y, err := tape.OpenIndex(filepath.Join("..", "..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	var slow []short
	for _, f := range mustTape(t, "t", y, Options{FailOn: DefaultFailOn, MaxDuration: 4 * time.Second}) {
		slow = append(slow, short{f.Rule, f.Line, f.Message, f.Fail})
	}
	want = []short{
		{RuleStderr, 3, "the server wrote: Starting default (STDIO) server...", false},
		{RuleSlow, 18, "tasks/result took 4.03s, over 4s", true},
		{RuleSlow, 22, "task 916ed7c84114e1db46d77615081358fa (tools/call simulate-research-query) ran 4.03s, over 4s", true},
	}
	if !slices.Equal(slow, want) {
		t.Fatalf("the recorded task (completed, 4.03s) under --max-duration 4s:\n%+v\nwant:\n%+v", slow, want)
	}
}
