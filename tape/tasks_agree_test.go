package tape

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// tasksIndex indexes a tape held in memory.
func tasksIndex(t testing.TB, data []byte) *Index {
	t.Helper()
	x := NewIndex(bytes.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// agree fails when Tasks and tasksOld (the encoding/json reading it
// replaced) find different tasks on x.
func agree(t *testing.T, name string, x *Index) []Task {
	t.Helper()
	got, want := Tasks(x), tasksOld(x)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s: Tasks and the encoding/json reading differ:\n got %+v\nwant %+v", name, got, want)
	}
	return got
}

// TestTasksAgreeFixtures: on every testdata tape that has tasks (and all
// the others), Tasks finds what the encoding/json reading found.
func TestTasksAgreeFixtures(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("..", "testdata", "*.jsonl"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no testdata tapes (%v)", err)
	}
	withTasks := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if got := agree(t, filepath.Base(p), tasksIndex(t, data)); len(got) > 0 {
			withTasks++
		}
		if bytes.Contains(data, []byte(`"tasks/get"`)) && withTasks == 0 {
			t.Errorf("%s polls tasks/get but no task was found", filepath.Base(p))
		}
	}
	if withTasks < 2 {
		t.Errorf("%d testdata tapes have tasks, want the 2 of server-everything", withTasks)
	}
}

// TestTasksAgreeSynth: on SynthesizeTasks tapes of a few shapes, Tasks
// finds what the encoding/json reading found, every task created,
// polled and completed.
func TestTasksAgreeSynth(t *testing.T) {
	for _, o := range []SynthTaskOptions{{Tasks: 1, Polls: 1, Seed: 1}, {Tasks: 50, Polls: 3, Seed: 2}, {Tasks: 300, Polls: 20, Seed: 3}} {
		var buf bytes.Buffer
		if _, err := SynthesizeTasks(&buf, o); err != nil {
			t.Fatal(err)
		}
		got := agree(t, fmt.Sprintf("%+v", o), tasksIndex(t, buf.Bytes()))
		if len(got) != o.Tasks {
			t.Fatalf("%+v: %d tasks, want %d", o, len(got), o.Tasks)
		}
		for _, tk := range got {
			if tk.Create < 0 || len(tk.Polls) != o.Polls || tk.Status != "completed" || tk.Terminal < 0 {
				t.Fatalf("%+v: task %+v, want created, %d polls, completed", o, tk, o.Polls)
			}
		}
	}
}

// oddTape writes the messages as tape lines of server s (a "dir|server|"
// prefix overrides both, "<" says recv), a millisecond apart; a line
// prefixed "raw|" is written as it is.
func oddTape(lines ...string) []byte {
	var b bytes.Buffer
	for i, l := range lines {
		if raw, ok := strings.CutPrefix(l, "raw|"); ok {
			b.WriteString(raw + "\n")
			continue
		}
		dir, server := "send", "s"
		if p := strings.SplitN(l, "|", 3); len(p) == 3 {
			dir, server, l = p[0], p[1], p[2]
		} else if strings.HasPrefix(l, "<") {
			dir, l = "recv", l[1:]
		}
		if strings.HasPrefix(l, "[") { // a batch: as recorded, meta on each
			l = strings.ReplaceAll(l, `}}`, fmt.Sprintf(`},"_meta":{"dir":%q,"server":%q,"ts":"2026-01-01T00:00:%02d.%03dZ"}}`, dir, server, i/1000, i%1000))
			b.WriteString(l + "\n")
			continue
		}
		fmt.Fprintf(&b, `%s,"_meta":{"dir":%q,"server":%q,"ts":"2026-01-01T00:00:%02d.%03dZ"}}`+"\n", l[:len(l)-1], dir, server, i/1000, i%1000)
	}
	return b.Bytes()
}

const (
	callT   = `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t","task":{}}}`
	createT = `<{"jsonrpc":"2.0","id":%d,"result":{"task":{"taskId":%s,"status":%s}}}`
	getT    = `{"jsonrpc":"2.0","id":%d,"method":"tasks/get","params":{"taskId":%s}}`
	statusT = `<{"jsonrpc":"2.0","id":%d,"result":{"taskId":%s,"status":%s}}`
	resultT = `{"jsonrpc":"2.0","id":%d,"method":"tasks/result","params":{"taskId":%s}}`
	doneT   = `<{"jsonrpc":"2.0","id":%d,"result":{"content":[]}}`
)

func fm(format string, a ...any) string { return fmt.Sprintf(format, a...) }

// TestTasksAgreeOdd: on odd tapes (bad JSON in a poll answer or around it,
// numeric task ids, unknown statuses, polls before the creating answer,
// keys in another case or escaped, repeated keys, a _meta of its own that
// is not JSON, batches, errors, two servers with one id) Tasks finds what
// the encoding/json reading found.
func TestTasksAgreeOdd(t *testing.T) {
	cases := map[string][]string{
		"bad JSON in a poll answer": {fm(callT, 1), fm(createT, 1, `"a"`, `"working"`), fm(getT, 2, `"a"`),
			`<{"jsonrpc":"2.0","id":2,"result":{"taskId":"a","status":"completed","ttl":6x0}}`,
			fm(getT, 3, `"a"`), `<{"jsonrpc":"2.0","id":3,"result":{"taskId":"a","status":"failed","note":"tab	inside"}}`,
			fm(getT, 4, `"a"`), `<{"jsonrpc":"2.0","id":4,"result":{"taskId":"a","status":"cancelled","x":"\q"}}`,
			fm(getT, 5, `"a"`), `<{"jsonrpc":"2.0","id":5,"result":{"taskId":"a","status":"working","x":[1,,2]}}`,
			fm(getT, 6, `"a"`), `<{"jsonrpc":"2.0","id":6,"result":{"taskId":"a","status":"working","x":{"k" 1}}}`,
			fm(getT, 7, `"a"`), fm(statusT, 7, `"a"`, `"input_required"`)},
		"bad JSON in a poll and a create": {fm(callT, 1), `<{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"a","status":"working"},"n":01}}`,
			fm(callT, 2), fm(createT, 2, `"a"`, `"submitted"`),
			`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"a","x":tru}}`, fm(statusT, 3, `"a"`, `"completed"`),
			fm(getT, 4, `"a"`), fm(statusT, 4, `"a"`, `"completed"`)},
		"a task id that is a number": {fm(callT, 1), fm(createT, 1, `7`, `"working"`), fm(getT, 2, `7`), fm(statusT, 2, `7`, `"completed"`),
			fm(callT, 3), fm(createT, 3, `8`, `"working"`), fm(getT, 4, `"8"`), fm(statusT, 4, `8`, `"completed"`), fm(getT, 5, `"8"`), fm(statusT, 5, `"8"`, `9`),
			fm(getT, 6, `null`), fm(statusT, 6, `null`, `null`), fm(getT, 7, `"8"`), fm(statusT, 7, `"8"`, `null`)},
		"unknown and empty statuses": {fm(callT, 1), fm(createT, 1, `"a"`, `"pondering"`), fm(getT, 2, `"a"`), fm(statusT, 2, `"a"`, `""`),
			fm(getT, 3, `"a"`), fm(statusT, 3, `"a"`, `"paused"`), fm(getT, 4, `"a"`), fm(statusT, 4, `"a"`, `"Completed"`),
			fm(callT, 5), fm(createT, 5, `"b"`, `""`), fm(getT, 6, `"b"`), fm(statusT, 6, `"b"`, `"failed"`), fm(getT, 7, `"b"`), fm(statusT, 7, `"b"`, `"working"`)},
		"polls before the creating answer": {fm(callT, 1), fm(getT, 2, `"a"`), fm(statusT, 2, `"a"`, `"working"`),
			`<{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"b","status":"working"}}`,
			fm(callT, 3), fm(createT, 3, `"b"`, `"submitted"`), fm(createT, 1, `"a"`, `"submitted"`), fm(resultT, 4, `"a"`), fm(doneT, 4),
			`<{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"b","status":"completed"}}`},
		"keys in another case, escaped, repeated": {fm(callT, 1), `<{"jsonrpc":"2.0","id":1,"result":{"TASK":{"TaskID":"a","STATUS":"working"}}}`,
			`{"jsonrpc":"2.0","id":2,"method":"tasks/get","Params":{"task\u0049d":"a"}}`, `<{"jsonrpc":"2.0","id":2,"Result":{"ſtatus":"failed"}}`,
			`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"a"},"params":{"status":"x"}}`, `<{"jsonrpc":"2.0","id":3,"result":{"status":"completed","status":null}}`,
			fm(callT, 4), `<{"jsonrpc":"2.0","id":4,"result":{"task":{"taskId":"b"},"task":null,"task":{"status":"working"}}}`,
			fm(callT, 5), `<{"jsonrpc":"2.0","id":5,"result":{"task":{"taskId":"b"},"task":{"status":"working"}}}`,
			fm(getT, 6, `"b"`), fm(statusT, 6, `"b"`, `"working"`),
			fm(callT, 7), `<{"jsonrpc":"2.0","id":7,"result":{"task":{"taskId":"c","status":"w"}}, "result":{"task":null}}`, fm(getT, 8, `"c"`), fm(statusT, 8, `"c"`, `"cancelled"`)},
		"escaped and invalid UTF-8 ids": {fm(callT, 1), fm(createT, 1, `"ab\u0063"`, `"work\u0069ng"`), fm(getT, 2, `"abc"`), fm(statusT, 2, `"a\u0062c"`, `"c\u006fmpleted"`),
			fm(callT, 3), fm(createT, 3, "\"x\xffy\"", `"working"`), fm(getT, 4, `"x\ufffdy"`), fm(statusT, 4, "\"x\xffy\"", `"completed"`),
			fm(getT, 5, `"d\"q"`), fm(statusT, 5, `"d\"q"`, `"working"`)},
		"wrong types": {fm(callT, 1), `<{"jsonrpc":"2.0","id":1,"result":{"task":"a"}}`, fm(callT, 2), `<{"jsonrpc":"2.0","id":2,"result":{"task":{"taskId":"a","status":1}}}`,
			fm(callT, 3), `<{"jsonrpc":"2.0","id":3,"result":{"task":{"taskId":"a"},"taskId":[]}}`, fm(callT, 4), fm(createT, 4, `"a"`, `"working"`),
			`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":"a"}`, fm(statusT, 5, `"a"`, `"completed"`),
			`{"jsonrpc":"2.0","id":6,"method":"tasks/get","params":{"taskId":"a"},"result":5}`, fm(statusT, 6, `"a"`, `"completed"`),
			`{"jsonrpc":"2.0","id":7,"method":"tasks/get","params":null}`, fm(statusT, 7, `"a"`, `"completed"`),
			fm(getT, 8, `"a"`), `<{"jsonrpc":"2.0","id":8,"result":[1]}`, fm(getT, 9, `"a"`), `<{"jsonrpc":"2.0","id":9,"result":{"status":{}}}`,
			fm(getT, 10, `"a"`), `<{"jsonrpc":"2.0","id":10,"result":{"status":"failed","task":7}}`},
		"a _meta of its own that is not JSON": {fm(callT, 1), fm(createT, 1, `"a"`, `"working"`),
			`raw|{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"a"},"_meta":{"dir":"send","server":"s","x":nope}}`,
			`raw|{"jsonrpc":"2.0","id":2,"result":{"taskId":"a","status":"completed"},"_meta":{"dir":"recv","server":"s","x":01}}`,
			`raw|{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"a"},"_meta":{"x":nope},"_tapedeck":{"dir":"send","server":"s"}}`,
			`raw|{"jsonrpc":"2.0","id":3,"result":{"taskId":"a","status":"failed"},"_tapedeck":{"dir":"recv","server":"s","x":01}}`},
		"batches, errors, cancels, tool errors": {fm(callT, 1), fm(createT, 1, `"a"`, `"working"`),
			`[{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"a"}},{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"a"}}]`,
			`<[{"jsonrpc":"2.0","id":2,"result":{"taskId":"a","status":"working"}},{"jsonrpc":"2.0","id":3,"error":{"code":-1,"message":"no"}}]`,
			fm(resultT, 4, `"a"`), `<{"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"x"}}`,
			fm(resultT, 5, `"a"`), `<{"jsonrpc":"2.0","id":5,"result":{"content":[],"isError":true}}`,
			fm(callT, 6), fm(createT, 6, `"b"`, `"working"`), fm(resultT, 7, `"b"`), fm(getT, 8, `"b"`), fm(statusT, 8, `"b"`, `"failed"`), fm(doneT, 7)},
		"two servers, one id; a client-run task": {fm(callT, 1), fm(createT, 1, `"a"`, `"working"`),
			`send|t|{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, `recv|t|{"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"a","status":"working"}}}`,
			`recv|t|{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"a"}}`, fm(getT, 2, `"a"`), `send|t|{"jsonrpc":"2.0","id":2,"result":{"status":"completed"}}`,
			fm(statusT, 2, `"a"`, `"failed"`),
			`recv|s|{"jsonrpc":"2.0","id":9,"method":"sampling/createMessage","params":{"task":{}}}`, `send|s|{"jsonrpc":"2.0","id":9,"result":{"task":{"taskId":"z","status":"working"}}}`,
			`recv|s|{"jsonrpc":"2.0","id":10,"method":"tasks/result","params":{"taskId":"z"}}`, `send|s|{"jsonrpc":"2.0","id":10,"result":{"role":"assistant"}}`,
			`send|s|{"jsonrpc":"2.0","method":"notifications/tasks/status","params":{"taskId":"z","status":"working"}}`},
		"deep nesting": {fm(callT, 1), fm(createT, 1, `"a"`, `"working"`),
			`{"jsonrpc":"2.0","id":2,"method":"tasks/get","params":{"taskId":"a","x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}}`, fm(statusT, 2, `"a"`, `"completed"`),
			`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"a","x":` + strings.Repeat("[", 9998) + strings.Repeat("]", 9998) + `}}`, fm(statusT, 3, `"a"`, `"failed"`),
			`{"jsonrpc":"2.0","id":4,"method":"tasks/get","params":{"taskId":"a"},"x":` + strings.Repeat("[", 9999) + strings.Repeat("]", 9999) + `}`, fm(statusT, 4, `"a"`, `"cancelled"`),
			`{"jsonrpc":"2.0","id":5,"method":"tasks/get","params":{"taskId":"a"},"x":` + strings.Repeat("[", 10000) + strings.Repeat("]", 10000) + `}`, fm(statusT, 5, `"a"`, `"completed"`)},
	}
	for name, lines := range cases {
		data := oddTape(lines...)
		x := tasksIndex(t, data)
		got := agree(t, name, x)
		if len(got) == 0 {
			t.Errorf("%s: no task found: the case tests nothing", name)
		}
	}
}

// TestTasksAgreeShuffled: tapes made of the odd cases' lines and a
// synthetic tape's, shuffled, so that answers come before their
// requests, polls before creations and outside the search bounds.
func TestTasksAgreeShuffled(t *testing.T) {
	var buf bytes.Buffer
	if _, err := SynthesizeTasks(&buf, SynthTaskOptions{Tasks: 40, Polls: 4, Seed: 7}); err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSuffix(buf.String(), "\n"), "\n")
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		l := append([]string(nil), lines...)
		for i := range l { // swap near neighbours: pairs and windows still meet
			j := min(len(l)-1, i+rng.IntN(8))
			l[i], l[j] = l[j], l[i]
		}
		agree(t, fmt.Sprintf("seed %d", seed), tasksIndex(t, []byte(strings.Join(l, ""))))
	}
}
