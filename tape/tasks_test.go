package tape_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

func openFixture(t *testing.T, name string) *tape.Index {
	t.Helper()
	x, err := tape.OpenIndex(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { x.Close() })
	return x
}

// TestTasksServerSide: server-everything's simulate-research-query, run as
// a task by the TypeScript SDK's client (3 polls, then tasks/result, then
// one more poll), is one task: created by the tools/call, its polls and
// result, completed, lasting the ~4 s the server worked (not the call's
// few milliseconds).
func TestTasksServerSide(t *testing.T) {
	x := openFixture(t, "ts-everything-task.tape.jsonl")
	tasks := tape.Tasks(x)
	if len(tasks) != 1 {
		t.Fatalf("Tasks found %d tasks, want 1: %+v", len(tasks), tasks)
	}
	tk := tasks[0]
	if tk.Runner != tape.DirRecv || tk.Server != "everything" {
		t.Errorf("runner %q server %q, want the server (recv) everything", tk.Runner, tk.Server)
	}
	if tk.Create < 0 || x.Entry(tk.Create).Method != "tools/call" || x.Pair(tk.Create).Partner != tk.Created {
		t.Errorf("created by seq %d (%q) answered at %d, want the tools/call and its answer", tk.Create, x.Entry(max(tk.Create, 0)).Method, tk.Created)
	}
	if len(tk.Polls) != 4 || len(tk.Results) != 1 {
		t.Errorf("%d polls and %d results, want 4 (3, then one after the result) and 1", len(tk.Polls), len(tk.Results))
	}
	if tk.Status != "completed" || tk.Terminal < 0 || tk.Failed() {
		t.Errorf("status %q terminal at %d failed %v, want completed", tk.Status, tk.Terminal, tk.Failed())
	}
	if d := tk.Duration(); d < 3*time.Second || d > 10*time.Second {
		t.Errorf("duration %v, want the ~4 s the research ran", d)
	}
}

// TestTasksClientSide: trigger-sampling-request-async makes the client run
// a task (the server's sampling/createMessage answered with a
// CreateTaskResult) which the server polls: the runner is the client.
func TestTasksClientSide(t *testing.T) {
	x := openFixture(t, "ts-everything-task-sampling.tape.jsonl")
	tasks := tape.Tasks(x)
	if len(tasks) != 1 {
		t.Fatalf("Tasks found %d tasks, want 1: %+v", len(tasks), tasks)
	}
	tk := tasks[0]
	if tk.Runner != tape.DirSend {
		t.Errorf("runner %q, want the client (send)", tk.Runner)
	}
	if tk.Create < 0 || x.Entry(tk.Create).Method != "sampling/createMessage" {
		t.Errorf("created by seq %d, want the sampling/createMessage", tk.Create)
	}
	if len(tk.Polls) == 0 || len(tk.Results) != 1 || tk.Status != "completed" {
		t.Errorf("%d polls, %d results, status %q: want polls, one result, completed", len(tk.Polls), len(tk.Results), tk.Status)
	}
}

func TestTasksNone(t *testing.T) {
	if got := tape.Tasks(openFixture(t, "sdk-sdkserver.tape.jsonl")); got != nil {
		t.Errorf("Tasks of a tape with no task: %+v", got)
	}
}
