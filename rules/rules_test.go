package rules

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

func mustParse(t *testing.T, src string) *Set {
	t.Helper()
	s, err := Parse("rules.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

const (
	callEcho = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`
	callSum  = `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"get-sum","arguments":{"a":2,"b":3}}}`
	ansEcho  = `{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"Echo: hi"}]}}`
	progress = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}`
)

func send(raw string) Message { return Message{Raw: []byte(raw), Dir: tape.DirSend, Server: "s"} }
func recv(raw string) Message { return Message{Raw: []byte(raw), Dir: tape.DirRecv, Server: "s"} }

func TestParseErrorsSayFileLineAndWhatWasExpected(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"empty file", "", "empty rules file"},
		{"no rules", "rules: []\n", "no rules"},
		{"unknown action", "rules:\n  - name: a\n    action: explode\n", `rules.yaml:2: rule "a": action "explode": expected one of block, error`},
		{"delay not a duration", "rules:\n  - name: a\n    action: block\n  - name: b\n    action: delay\n    delay: soon\n", `rules.yaml:4: rule "b": delay: "soon": expected a duration`},
		{"unknown field", "rules:\n  - name: a\n    action: block\n    colour: red\n", "line 4: field colour not found"},
		{"delay over the cap", "rules:\n  - name: a\n    action: block\n  - name: slow\n    action: delay\n    delay: 87600h\n", `rules.yaml:4: rule "slow": delay: "87600h": expected at most 10m0s`},
		{"delay range over the cap", "rules:\n  - name: a\n    action: delay\n    delay: 1s..11m\n", `rules.yaml:2: rule "a": delay: "1s..11m": expected at most 10m0s`},
		{"expression that does not compile", "rules:\n  - name: a\n    match: 'method ==='\n    action: block\n", `rules.yaml:2: rule "a": match: expression`},
		{"unknown phase", "rules:\n  - name: a\n    match: {phase: sometimes}\n    action: block\n", `phase "sometimes": expected request, response, notification or server_request`},
		{"two schedules", "rules:\n  - name: a\n    action: block\n    schedule: {first: 1, every: 2}\n", "expected exactly one of first"},
		{"probability over 1", "rules:\n  - name: a\n    action: block\n    schedule: {probability: 2}\n", "expected a number in (0, 1]"},
		{"modify without a change", "rules:\n  - name: a\n    action: modify\n", "expected patch:"},
		{"set path not a pointer", "rules:\n  - name: a\n    action: modify\n    set: {params/x: 1}\n", "expected a JSON pointer"},
		{"delay on block", "rules:\n  - name: a\n    action: block\n    delay: 1s\n", "delay: is for another action than block"},
		{"respond without result", "rules:\n  - name: a\n    action: respond\n", "expected result:"},
		{"error on a notification", "rules:\n  - name: a\n    match: {phase: notification}\n    action: error\n", "a notification has nobody to answer"},
		{"duplicate name", "rules:\n  - name: a\n    action: block\n  - name: a\n    action: log\n", `rule name "a" is already used at line 2`},
		{"rule not a mapping", "rules:\n  - block\n", "a rule must be a mapping"},
		{"broken YAML", "rules: [\n", "rules.yaml:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse("rules.yaml", []byte(c.src))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("Parse(%q):\n got %v\nwant it to say %q", c.src, err, c.want)
			}
		})
	}
}

func TestErrorOnRequestAnswersTheClientAndDropsTheRequest(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: echo-fails
    match: {phase: request, tool: echo}
    action: error
    error: {code: -32001, message: boom}
`)
	c := s.Conn()
	if d := c.Apply(send(callSum)); d.Matched {
		t.Fatalf("get-sum matched: %+v", d)
	}
	d := c.Apply(send(callEcho))
	if !d.Matched || len(d.Out) != 0 {
		t.Fatalf("echo: %+v", d)
	}
	if got := string(d.Reply); got != `{"jsonrpc":"2.0","id":3,"error":{"code":-32001,"message":"boom"}}` {
		t.Errorf("reply %s", got)
	}
	if len(d.Injections) != 1 || !d.Injections[0].Dropped || d.ReplyInjections[0].Rule != "echo-fails" {
		t.Errorf("injections %+v %+v", d.Injections, d.ReplyInjections)
	}
}

func TestToolErrorAndResponsePairing(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: echo-result-fails
    match: {phase: response, method: tools/call, tool: echo}
    action: error
    error: {tool: the tool broke}
`)
	c := s.Conn()
	c.Apply(send(callEcho))
	d := c.Apply(recv(ansEcho))
	if len(d.Out) != 1 {
		t.Fatalf("%+v", d)
	}
	var m struct {
		ID     int
		Result struct {
			IsError bool
			Content []struct{ Text string }
		}
	}
	if err := json.Unmarshal(d.Out[0], &m); err != nil || m.ID != 3 || !m.Result.IsError || m.Result.Content[0].Text != "the tool broke" {
		t.Errorf("out %s (%v)", d.Out[0], err)
	}
	if string(d.Injections[0].Original) != ansEcho {
		t.Errorf("original %q", d.Injections[0].Original)
	}
	// The pairing is spent: a second answer with id 3 names no tool.
	if d := c.Apply(recv(ansEcho)); d.Matched {
		t.Errorf("an unpaired answer matched")
	}
}

func TestModifySetDeleteAndPatch(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: shout
    match: 'method == "tools/call" && params.arguments.message == "hi"'
    action: modify
    set: {/params/arguments/message: HI, /params/arguments/extra: [1, 2]}
    continue: true
  - name: drop-extra
    match: {method: tools/call}
    action: modify
    patch:
      - {op: remove, path: /params/arguments/extra}
      - {op: add, path: /params/_meta, value: {k: v}}
`)
	d := s.Conn().Apply(send(callEcho))
	if len(d.Out) != 1 || len(d.Injections) != 2 {
		t.Fatalf("%+v", d)
	}
	want := `{"id":3,"jsonrpc":"2.0","method":"tools/call","params":{"_meta":{"k":"v"},"arguments":{"message":"HI"},"name":"echo"}}`
	if !tape.EqualJSON(d.Out[0], []byte(want)) {
		t.Errorf("out %s\nwant %s", d.Out[0], want)
	}
	if string(d.Injections[0].Original) != callEcho {
		t.Errorf("first original %q", d.Injections[0].Original)
	}
}

func TestSchedules(t *testing.T) {
	fires := func(sched string, n int) string {
		s := mustParse(t, "rules:\n  - name: r\n    match: {method: ping}\n    action: block\n    schedule: "+sched+"\n")
		c := s.Conn()
		var out []byte
		for range n {
			if c.Apply(send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)).Matched {
				out = append(out, 'x')
			} else {
				out = append(out, '.')
			}
		}
		return string(out)
	}
	for _, c := range []struct{ sched, want string }{
		{"always", "xxxxxx"},
		{"{first: 2}", "xx...."},
		{"{every: 3}", "..x..x"},
		{"{after: 4}", "....xx"},
	} {
		t.Run(c.sched, func(t *testing.T) {
			if got := fires(c.sched, 6); got != c.want {
				t.Errorf("%s: %s, want %s", c.sched, got, c.want)
			}
		})
	}
	// A probability schedule under one seed fires on the same messages.
	p := func(seed int64) string {
		s := mustParse(t, "rules:\n  - name: r\n    action: block\n    schedule: {probability: 0.5}\n")
		s.Seed(seed)
		c := s.Conn()
		var out []byte
		for range 40 {
			if c.Apply(send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)).Matched {
				out = append(out, 'x')
			} else {
				out = append(out, '.')
			}
		}
		return string(out)
	}
	a, b, other := p(7), p(7), p(8)
	if a != b {
		t.Errorf("seed 7 twice: %s vs %s", a, b)
	}
	if a == other {
		t.Errorf("seeds 7 and 8 fire alike: %s", a)
	}
	if n := strings.Count(a, "x"); n < 10 || n > 30 {
		t.Errorf("probability 0.5 fired %d of 40", n)
	}
}

func TestAuditReportsWithoutActing(t *testing.T) {
	s := mustParse(t, `
mode: audit
rules:
  - name: no-echo
    match: {tool: echo}
    action: error
`)
	d := s.Conn().Apply(send(callEcho))
	if d.Matched || d.Out != nil || d.Reply != nil {
		t.Fatalf("audit acted: %+v", d)
	}
	if len(d.Injections) != 1 || !d.Injections[0].Audit || !strings.Contains(d.Injections[0].Note, "would answer with an error") {
		t.Errorf("injections %+v", d.Injections)
	}
}

func TestDelayDuplicateDisconnectLogBlockNotification(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: slow
    match: {method: tools/call, tool: get-sum}
    action: delay
    delay: 10ms..20ms
    continue: true
  - name: twice
    match: {method: tools/call, tool: get-sum}
    action: duplicate
  - name: no-progress
    match: {phase: notification, method: notifications/progress}
    action: block
  - name: cut
    match: {method: tools/call, tool: echo}
    action: disconnect
    schedule: {after: 1}
  - name: note
    match: {method: ping}
    action: log
`)
	c := s.Conn()
	d := c.Apply(send(callSum))
	if d.Delay < 10*time.Millisecond || d.Delay > 20*time.Millisecond || len(d.Out) != 2 || len(d.Injections) != 2 {
		t.Errorf("get-sum: %+v", d)
	}
	if d := c.Apply(recv(progress)); !d.Matched || len(d.Out) != 0 {
		t.Errorf("progress: %+v", d)
	}
	if d := c.Apply(send(callEcho)); d.Disconnect {
		t.Errorf("first echo disconnected")
	}
	if d := c.Apply(send(callEcho)); !d.Disconnect {
		t.Errorf("second echo: %+v", d)
	}
	d = c.Apply(send(`{"jsonrpc":"2.0","id":9,"method":"ping"}`))
	if !d.Matched || d.Out != nil || len(d.Logs) != 1 || !strings.Contains(d.Logs[0], "request ping id 9") {
		t.Errorf("log: %+v", d)
	}
}

func TestRespondFromLiteralAndFromTape(t *testing.T) {
	dir := t.TempDir()
	tp := filepath.Join(dir, "answers.jsonl")
	w := tape.NewWriter(mustCreate(t, tp))
	now := time.Now()
	for _, l := range []struct {
		raw string
		dir tape.Dir
	}{{callEcho, tape.DirSend}, {ansEcho, tape.DirRecv}} {
		if err := w.Write([]byte(l.raw), tape.Meta{Dir: l.dir, Server: "s", Time: now}); err != nil {
			t.Fatal(err)
		}
	}
	rf := filepath.Join(dir, "rules.yaml")
	os.WriteFile(rf, []byte(`
rules:
  - name: canned-sum
    match: {tool: get-sum}
    action: respond
    respond: {result: {content: [{type: text, text: "5"}]}}
  - name: from-tape
    match: {tool: echo}
    action: respond
    respond: {tape: answers.jsonl}
`), 0o644)
	s, err := Load(rf)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Conn()
	d := c.Apply(send(callSum))
	if string(d.Reply) != `{"jsonrpc":"2.0","id":4,"result":{"content":[{"text":"5","type":"text"}]}}` {
		t.Errorf("literal: %s", d.Reply)
	}
	other := strings.Replace(strings.Replace(callEcho, `"hi"`, `"other"`, 1), `"id":3`, `"id":"x"`, 1)
	d = c.Apply(send(other))
	if !tape.EqualJSON(d.Reply, []byte(`{"jsonrpc":"2.0","id":"x","result":{"content":[{"type":"text","text":"Echo: hi"}]}}`)) {
		t.Errorf("from tape: %s", d.Reply)
	}
}

func mustCreate(t *testing.T, p string) *os.File {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestNilSetAndNonMessages(t *testing.T) {
	var s *Set
	if d := s.Conn().Apply(send(callEcho)); d.Matched {
		t.Error("nil set matched")
	}
	c := mustParse(t, "rules:\n  - name: all\n    action: block\n").Conn()
	for _, m := range []struct{ name, raw string }{
		{"not JSON", `not json`},
		{"a batch", `[` + callEcho + `]`},
		{"no method, id or result", `{"jsonrpc":"2.0"}`},
	} {
		t.Run(m.name, func(t *testing.T) {
			if d := c.Apply(send(m.raw)); d.Matched {
				t.Errorf("%s matched", m.raw)
			}
		})
	}
}

// The README's example rules file parses, and its rules mean what the
// README says.
func TestREADMEExample(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i := strings.Index(s, "### Injecting faults")
	j := strings.Index(s[i:], "```yaml\n")
	k := strings.Index(s[i+j+8:], "```")
	if i < 0 || j < 0 || k < 0 {
		t.Fatal("no yaml block in the README's Injecting faults section")
	}
	set, err := Parse("README.md", []byte(s[i+j+8:i+j+8+k]))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), " "); got != "echo-fails-once slow-search sum-is-42 no-progress canned-weather cut-after-20-calls watch-deletes" {
		t.Errorf("rules %s", got)
	}
	if seed, ok := set.FileSeed(); !ok || seed != 42 {
		t.Errorf("seed %d %v", seed, ok)
	}
	c := set.Conn()
	search := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"limit":11}}}`
	if d := c.Apply(send(search)); d.Delay < 200*time.Millisecond || d.Delay > 2*time.Second {
		t.Errorf("slow-search: %+v", d)
	}
	if d := c.Apply(send(strings.Replace(search, "11", "5", 1))); d.Matched {
		t.Errorf("slow-search matched limit 5")
	}
	del := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"delete_file","arguments":{}}}`
	if d := c.Apply(send(del)); d.Matched || len(d.Injections) != 1 || !d.Injections[0].Audit {
		t.Errorf("watch-deletes (audit): %+v", d)
	}
}

// TestParseRefusesNaNProbability: probability .nan compared false with
// both bounds and fired every time.
func TestParseRefusesNaNProbability(t *testing.T) {
	for _, p := range []string{".nan", ".NaN", ".inf", "-.inf", "0", "1.5"} {
		t.Run(p, func(t *testing.T) {
			_, err := Parse("rules.yaml", []byte("rules:\n  - name: a\n    action: block\n    schedule: {probability: "+p+"}\n"))
			if err == nil || !strings.Contains(err.Error(), "expected a number in (0, 1]") {
				t.Errorf("probability %s: %v, want it refused", p, err)
			}
		})
	}
}

// TestParseAnchorsAcrossRules: an anchor defined in one rule (or at the
// top) serves aliases and merge keys in others; the line numbers of errors
// stay the file's, and unknown keys are refused through aliases too.
func TestParseAnchorsAcrossRules(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: a
    match: &echo {phase: request, tool: echo}
    action: error
    error: &err {code: -32001, message: boom}
  - name: b
    match: *echo
    action: log
  - name: c
    <<: &blk {action: block}
    match: {method: ping}
  - name: d
    match: {method: tools/list}
    action: error
    error: *err
`[1:])
	if got := s.Names(); strings.Join(got, ",") != "a,b,c,d" {
		t.Fatalf("rules %v", got)
	}
	d := s.Conn().Apply(send(callEcho))
	if !d.Matched || d.Reply == nil || !strings.Contains(string(d.Reply), `"code":-32001`) {
		t.Errorf("echo: %+v, want rule a's error", d)
	}
	if d := s.Conn().Apply(send(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)); !d.Matched || d.Out == nil || len(d.Out) != 0 {
		t.Errorf("ping: %+v, want rule c's block", d)
	}
	if d := s.Conn().Apply(send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)); d.Reply == nil || !strings.Contains(string(d.Reply), `"message":"boom"`) {
		t.Errorf("tools/list: %+v, want rule d's error through the alias", d)
	}
	_, err := Parse("rules.yaml", []byte("rules:\n  - name: a\n    action: log\n    match: &m {tool: echo, colour: red}\n  - name: b\n    action: block\n    match: *m\n"))
	if err == nil || !strings.Contains(err.Error(), "line 4: field colour not found") {
		t.Errorf("an unknown key behind an alias: %v, want line 4: field colour not found", err)
	}
	_, err = Parse("rules.yaml", []byte("rules:\n  - name: a\n    action: block\n  - name: b\n    action: delay\n    delay: soon\n"))
	if err == nil || !strings.Contains(err.Error(), "rules.yaml:4:") {
		t.Errorf("error in the second rule: %v, want line 4", err)
	}
}

// TestParseLongWhenErrorIsShort: a 449 KB expression that does not compile
// once printed a 973 KB error; the error quotes some 80 bytes of it and
// the part around the problem.
func TestParseLongWhenErrorIsShort(t *testing.T) {
	when := strings.Repeat(`params.x == "a" || `, 23000) + `params.x ===`
	src := "rules:\n  - name: a\n    action: block\n    match: {when: '" + when + "'}\n"
	_, err := Parse("rules.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	if len(err.Error()) > 600 || !strings.Contains(err.Error(), "rules.yaml:2:") || !strings.Contains(err.Error(), "=") || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("error of %d bytes, want under 600 naming the line and the size:\n%.2000s", len(err.Error()), err)
	}
}

// TestWhenRunErrorWarnsOncePerRule: an expression that fails on a message
// is no match, said once a rule in the decision's logs.
func TestWhenRunErrorWarnsOncePerRule(t *testing.T) {
	s := mustParse(t, `
rules:
  - name: big
    match: {method: tools/call, when: 'params.arguments.count > 3'}
    action: block
  - name: other
    match: {method: tools/call, when: 'len(params.name) > 100'}
    action: block
`)
	c := s.Conn()
	var logs []string
	for range 3 {
		d := c.Apply(send(callEcho)) // arguments.count is missing: nil > 3 fails
		if d.Matched {
			t.Fatalf("matched: %+v", d)
		}
		logs = append(logs, d.Logs...)
	}
	if len(logs) != 1 || !strings.Contains(logs[0], `rule "big" (line 3): when: failed on`) || !strings.Contains(logs[0], "no match") {
		t.Errorf("logs %q, want one warning about rule big", logs)
	}
}

// TestParseContextStops: loading stops when its context is done.
func TestParseContextStops(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := ParseContext(ctx, "rules.yaml", manyRules(5000))
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v, want context.Canceled", err)
	}
}

// TestMatch holds each field of a rule's match to the messages it picks out
// of one connection's traffic: a call to echo and its answer, a call to
// get-sum (unanswered), a progress notification, a server request, and a
// ping to another server. Each want marks the matched messages x.
func TestMatch(t *testing.T) {
	srvReq := `{"jsonrpc":"2.0","id":"s1","method":"sampling/createMessage","params":{}}`
	ping := Message{Raw: []byte(`{"jsonrpc":"2.0","id":9,"method":"ping"}`), Dir: tape.DirSend, Server: "other"}
	traffic := []Message{send(callEcho), recv(ansEcho), send(callSum), recv(progress), recv(srvReq), ping}
	tests := []struct{ name, match, want string }{
		{"no match: every message", "", "xxxxxx"},
		{"phase request", "{phase: request}", "x.x..x"},
		{"phase response", "{phase: response}", ".x...."},
		{"phase notification", "{phase: notification}", "...x.."},
		{"phase server_request", "{phase: server_request}", "....x."},
		{"phases, a list", "{phase: [request, response]}", "xxx..x"},
		{"dir recv", "{dir: recv}", ".x.xx."},
		{"dir send", "{dir: send}", "x.x..x"},
		{"method, its answer by pairing", "{method: tools/call}", "xxx..."},
		{"methods, a list", "{method: [ping, notifications/progress]}", "...x.x"},
		{"tool, its answer by pairing", "{tool: echo}", "xx...."},
		{"target", "{target: get-sum}", "..x..."},
		{"server", "{server: other}", ".....x"},
		{"every field must hold", "{phase: request, method: tools/call, tool: echo}", "x....."},
		{"when, a member of the message", `{when: 'params.name == "get-sum"'}`, "..x..."},
		{"when, after the fields", `{method: tools/call, when: 'params.arguments.message == "hi"'}`, "x....."},
		{"when alone, a string", `'method == "ping" && server == "other"'`, ".....x"},
		{"when on the id", `'id == "s1"'`, "....x."},
		{"when on phase and tool", `'phase == "response" && tool == "echo"'`, ".x...."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "rules:\n  - name: r\n    action: log\n"
			if tt.match != "" {
				src += "    match: " + tt.match + "\n"
			}
			c := mustParse(t, src).Conn()
			var got []byte
			for _, m := range traffic {
				if c.Apply(m).Matched {
					got = append(got, 'x')
				} else {
					got = append(got, '.')
				}
			}
			if string(got) != tt.want {
				t.Errorf("match %s: matched %s, want %s", tt.match, got, tt.want)
			}
		})
	}
}

// respond: tape: gets the tapes' guards at load time: a device is refused,
// a named pipe no one writes to is an error at once (both used to hang the
// load or fill the memory), and a line over the limit is refused.
func TestRespondTapeGuarded(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "answers.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	big := filepath.Join(dir, "big.jsonl") // sparse: 300 MiB of zeros on no disk
	if err := os.WriteFile(big, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(big, 300<<20); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ tape, want string }{
		{"/dev/zero", "is a device"},
		{fifo, "no writer"},
		{big, "at most 268435456 bytes"},
	} {
		rf := filepath.Join(dir, "rules.yaml")
		os.WriteFile(rf, []byte("rules:\n  - name: r\n    action: respond\n    respond: {tape: "+c.tape+"}\n"), 0o600)
		done := make(chan error, 1)
		go func() { _, err := Load(rf); done <- err }()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "respond: tape:") {
				t.Errorf("respond: {tape: %s}: Load = %v, want an error saying %q", c.tape, err, c.want)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("respond: {tape: %s}: Load still running after 5s", c.tape)
		}
	}
}

// A modify whose result would pass the message limit is refused: a
// self-copying JSON Patch (each copy doubling the document) is stopped as
// it is applied instead of making gigabytes, and a set that makes the
// message too long is refused too. The original goes on, and the rule's
// failure is logged and recorded.
func TestModifyBoundedByMessageLimit(t *testing.T) {
	var ops strings.Builder
	for i := 0; i < 8; i++ { // 2^8 times the params: 1 MiB from 4 KB (2^40 times in the attack)
		fmt.Fprintf(&ops, "      - {op: copy, from: /params, path: /params/c%d}\n", i)
	}
	for _, c := range []struct{ name, change, want string }{
		{"self-copying patch", "    patch:\n" + ops.String(), "the patch's copies would add more than"},
		{"set past the limit", "    set: {/params/big: " + strings.Repeat("y", 300<<10) + "}\n", "over the limit of"},
	} {
		s := mustParse(t, "rules:\n  - name: grow\n    match: {method: tools/call}\n    action: modify\n"+c.change)
		for _, r := range s.rules {
			r.maxOut = 256 << 10 // the rule of MaxMessage, at a size a test can afford
		}
		msg := strings.Replace(callEcho, `"hi"`, `"`+strings.Repeat("x", 4<<10)+`"`, 1)
		d := s.Conn().Apply(send(msg))
		if len(d.Out) != 0 || len(d.Injections) != 1 || !strings.Contains(d.Injections[0].Note, c.want) {
			t.Errorf("%s: Out %d messages (first %d bytes), injections %+v; want none (the original goes on) and a note saying %q",
				c.name, len(d.Out), lenFirst(d.Out), d.Injections, c.want)
		}
		if len(d.Logs) != 1 || !strings.Contains(d.Logs[0], "rule grow") {
			t.Errorf("%s: logs %q, want the rule's failure", c.name, d.Logs)
		}
	}
	if MaxMessage != 64<<20 {
		t.Errorf("MaxMessage = %d, want the 64 MiB line limit", MaxMessage)
	}
}

func lenFirst(out [][]byte) int {
	if len(out) == 0 {
		return 0
	}
	return len(out[0])
}
