package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// faultRules is the rules file of the fault-injection tests: an error on
// one tool (its first call), a delay and a changed result on another,
// progress notifications dropped, and a disconnect on a third tool.
const faultRules = `
rules:
  - name: echo-fails-once
    match: {phase: request, tool: echo}
    action: error
    error: {tool: injected failure}
    schedule: {first: 1}
  - name: slow-sum
    match: {phase: request, tool: get-sum}
    action: delay
    delay: 300ms
  - name: sum-is-42
    match: {phase: response, tool: get-sum}
    action: modify
    set: {/result/content/0/text: "The sum is 42"}
  - name: no-progress
    match: {phase: notification, method: notifications/progress}
    action: block
  - name: cut-on-image
    match: {tool: get-tiny-image}
    action: disconnect
`

// injections returns, per rule, the actions the tape records for it.
func injections(t *testing.T, path string) map[string][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]string{}
	rd := tape.NewReader(f)
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		var m struct {
			Meta struct {
				Injected []struct {
					Rule, Action      string
					Injected, Dropped bool
					Original          json.RawMessage
				}
			} `json:"_meta"`
		}
		_ = json.Unmarshal(e.Raw, &m)
		for _, in := range m.Meta.Injected {
			a := in.Action
			if in.Injected {
				a += "+injected"
			}
			if in.Dropped {
				a += "+dropped"
			}
			if len(in.Original) > 0 {
				a += "+original"
			}
			out[in.Rule] = append(out[in.Rule], string(e.Dir)+":"+a)
		}
	}
	return out
}

// The go-sdk client against server-everything through `tapedeck record
// --rules` (stdio): each rule does what it says on the wire, and the tape
// shows each injection.
func TestRulesRecordStdioGoSDK(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	dir := t.TempDir()
	rulesPath := rulesFile(t, faultRules)
	tapePath := filepath.Join(dir, "faults.jsonl")
	argv := append([]string{"record", "--rules", rulesPath, "-o", tapePath, "--"}, peers.EverythingStdio()...)
	cmd := exec.Command(tapedeck, argv...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "rules-test", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			t.Errorf("a progress notification reached the client past the no-progress rule")
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect through the shim: %v\n%s", err, stderr.String())
	}
	defer cs.Close()
	text := func(r *mcp.CallToolResult) string {
		var parts []string
		for _, c := range r.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				parts = append(parts, tc.Text)
			}
		}
		return strings.Join(parts, " | ")
	}
	call := func(name string, args map[string]any, meta mcp.Meta) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args, Meta: meta})
	}
	r, err := call("echo", map[string]any{"message": "hi"}, nil)
	if err != nil || !r.IsError || text(r) != "injected failure" {
		t.Errorf("first echo: %v %+v, want the injected tool failure", err, r)
	}
	r, err = call("echo", map[string]any{"message": "hi"}, nil)
	if err != nil || r.IsError || text(r) != "Echo: hi" {
		t.Errorf("second echo (the rule fires once): %v %+v", err, r)
	}
	start := time.Now()
	r, err = call("get-sum", map[string]any{"a": 2, "b": 3}, nil)
	if took := time.Since(start); took < 300*time.Millisecond {
		t.Errorf("get-sum answered in %s, the rule delays it 300ms", took)
	}
	if err != nil || text(r) != "The sum is 42" {
		t.Errorf("get-sum: %v %q, want the modified result", err, text(r))
	}
	r, err = call("trigger-long-running-operation", map[string]any{"duration": 1, "steps": 2}, mcp.Meta{"progressToken": "p1"})
	if err != nil || !strings.Contains(text(r), "Long running operation completed") {
		t.Errorf("long operation: %v %+v", err, r)
	}
	if _, err = call("get-tiny-image", nil, nil); err == nil {
		t.Errorf("get-tiny-image answered; the rule cuts the connection")
	}
	cs.Close()
	_ = cmd.Wait()

	got := injections(t, tapePath)
	want := map[string][]string{
		"echo-fails-once": {"send:error+dropped", "recv:error+injected"},
		"slow-sum":        {"send:delay"},
		"sum-is-42":       {"recv:modify+original"},
		"no-progress":     {"recv:block+dropped", "recv:block+dropped"},
		"cut-on-image":    {"send:disconnect+dropped"},
	}
	for rule, w := range want {
		if fmt.Sprint(got[rule]) != fmt.Sprint(w) {
			t.Errorf("rule %s on the tape: %v, want %v", rule, got[rule], w)
		}
	}
	// stats counts them by rule.
	out, _, code := runCLI(t, "stats", tapePath)
	for _, line := range []string{"injected by rules: 7", "echo-fails-once", "no-progress"} {
		if code != 0 || !strings.Contains(out, line) {
			t.Errorf("stats: exit %d, no %q in\n%s", code, line, out)
		}
	}
}

// The TypeScript SDK's client through the stdio shim and the HTTP proxy,
// with the same rules: its transcript shows each fault.
func TestRulesRecordTSClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	rulesPath := rulesFile(t, faultRules)
	check := func(t *testing.T, transcript, tapePath string) {
		for _, want := range []string{"echo: injected failure\n", "sum: The sum is 42\n", "progress: \n", "long: Long running operation completed"} {
			if !strings.Contains(transcript, want) {
				t.Errorf("no %q in the client's transcript:\n%s", want, transcript)
			}
		}
		got := injections(t, tapePath)
		if len(got["echo-fails-once"]) != 2 || len(got["sum-is-42"]) != 1 || len(got["no-progress"]) != 3 {
			t.Errorf("injections on the tape: %v", got)
		}
	}
	t.Run("stdio", func(t *testing.T) {
		tapePath := filepath.Join(t.TempDir(), "ts.jsonl")
		out := tsClient(t, append([]string{"--stdio", tapedeck, "record", "--rules", rulesPath, "-o", tapePath, "--"}, peers.EverythingStdio()...)...)
		check(t, out, tapePath)
		// The faulty session replays as the client saw it: the rule's
		// answers, the changed result, and no dropped progress.
		if replayed := tsClient(t, "--stdio", tapedeck, "replay", tapePath); replayed != out {
			t.Errorf("the replay of the faulty tape:\n%s\nthe session:\n%s", replayed, out)
		}
	})
	t.Run("http", func(t *testing.T) {
		upstream := mcptest.StartEverythingHTTP(t)
		tapePath := filepath.Join(t.TempDir(), "ts.jsonl")
		proxied, stop := startTapedeck(t, tapedeck, "record", "--rules", rulesPath, "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
		out := tsClient(t, "--url", proxied)
		stop()
		check(t, out, tapePath)
	})
}

// A probability schedule under --seed faults the same calls in two runs of
// the same session (and other calls under another seed); a disconnect
// after N calls cuts the session at the N+1th.
func TestRulesSeedReproducesTheRun(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	rulesPath := rulesFile(t, `
rules:
  - name: cut-after-16
    match: {phase: request, method: tools/call}
    action: disconnect
    schedule: {after: 16}
  - name: flaky-echo
    match: {phase: request, tool: echo}
    action: error
    error: {code: -32603, message: flaky}
    schedule: {probability: 0.5}
`)
	run := func(seed string) (string, string) {
		tapePath := filepath.Join(t.TempDir(), "seed.jsonl")
		argv := append([]string{"record", "--rules", rulesPath, "--seed", seed, "-o", tapePath, "--"}, peers.EverythingStdio()...)
		cmd := exec.Command(tapedeck, argv...)
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "seed-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		var outcome []byte
		for i := range 17 {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": fmt.Sprint(i)}})
			switch {
			case err == nil:
				outcome = append(outcome, '.')
			case strings.Contains(err.Error(), "flaky"):
				outcome = append(outcome, 'x')
			default:
				outcome = append(outcome, '#') // the connection is gone
			}
		}
		cs.Close()
		_ = cmd.Wait()
		return string(outcome), fmt.Sprint(injections(t, tapePath)["flaky-echo"])
	}
	a, tapeA := run("7")
	b, tapeB := run("7")
	c, _ := run("8")
	if a != b || tapeA != tapeB {
		t.Errorf("--seed 7 twice: %s and %s (tapes %s, %s)", a, b, tapeA, tapeB)
	}
	if a == c {
		t.Errorf("--seed 7 and --seed 8 faulted the same calls: %s", a)
	}
	for _, o := range []string{a, c} {
		if !strings.HasSuffix(o, "#") || strings.Count(o, "#") != 1 || !strings.Contains(o, "x") || !strings.Contains(o, ".") {
			t.Errorf("outcome %s: want a mix of faults and answers, then the disconnect on the 17th call", o)
		}
	}
	t.Logf("seed 7: %s, seed 8: %s", a, c)
}

// Faults on recorded answers: the TypeScript client against `tapedeck
// replay --rules` of a tape the shim recorded sees the rules' changes, and
// the replay says what each rule did.
func TestRulesReplayTSClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	dir := t.TempDir()
	tapePath := filepath.Join(dir, "ts.jsonl")
	live := tsClient(t, append([]string{"--stdio", tapedeck, "record", "-o", tapePath, "--"}, peers.EverythingStdio()...)...)
	if !strings.Contains(live, "echo: Echo: hi\n") {
		t.Fatalf("live transcript:\n%s", live)
	}
	rulesPath := rulesFile(t, `
rules:
  - name: echo-answer-fails
    match: {phase: response, tool: echo}
    action: error
    error: {tool: recorded answer replaced}
  - name: sum-is-42
    match: {phase: response, tool: get-sum}
    action: modify
    set: {/result/content/0/text: "The sum is 42"}
  - name: no-progress
    match: {method: notifications/progress}
    action: block
`)
	logPath := filepath.Join(dir, "replay.log")
	// The replay's stderr goes to a file through a shell, the client's own
	// stderr being the replay's.
	got := tsClient(t, "--stdio", "sh", "-c", `exec "$0" replay --rules "$1" "$2" 2>"$3"`, tapedeck, rulesPath, tapePath, logPath)
	for _, want := range []string{"echo: recorded answer replaced\n", "sum: The sum is 42\n", "progress: \n", "long: Long running operation completed"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the replayed transcript:\n%s", want, got)
		}
	}
	log, _ := os.ReadFile(logPath)
	for _, want := range []string{"rule echo-answer-fails: error on recv response", "rule sum-is-42: modify on recv response", "rule no-progress: block on recv notification notifications/progress"} {
		if !strings.Contains(string(log), want) {
			t.Errorf("no %q in the replay's stderr:\n%s", want, log)
		}
	}

	// Over Streamable HTTP: a tape the proxy recorded, replayed with the
	// same rules to the client over HTTP.
	upstream := mcptest.StartEverythingHTTP(t)
	httpTape := filepath.Join(dir, "ts-http.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", httpTape)
	if live := tsClient(t, "--url", proxied); !strings.Contains(live, "sum: The sum of 2 and 3 is 5.") {
		t.Fatalf("recording over HTTP:\n%s", live)
	}
	stopRecord()
	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--rules", rulesPath, "--listen", "127.0.0.1:0", httpTape)
	got = tsClient(t, "--url", replayed)
	stopReplay()
	for _, want := range []string{"echo: recorded answer replaced\n", "sum: The sum is 42\n", "progress: \n", "long: Long running operation completed"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in the transcript replayed over HTTP:\n%s", want, got)
		}
	}
}

// replay --fallback: a go-sdk client that calls a tool the tape never saw
// gets the live server's answer (server-everything, started on demand and
// opened with the client's initialize), the exchange lands on the tape,
// and the next replay answers it from the tape with no server at all.
func TestReplayFallbackGoSDK(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	dir := t.TempDir()
	tapePath := filepath.Join(dir, "echo-only.jsonl")
	session := func(argv []string, tools ...string) ([]string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		cmd := exec.Command(argv[0], argv[1:]...)
		var stderr strings.Builder
		cmd.Stderr = &stderr
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "fallback-test", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
		if err != nil {
			t.Fatalf("%v: %v\n%s", argv, err, stderr.String())
		}
		var got []string
		for _, tool := range tools {
			args := map[string]any{"message": "hi"}
			if tool == "get-sum" {
				args = map[string]any{"a": 2, "b": 3}
			}
			r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil {
				got = append(got, "error: "+err.Error())
				continue
			}
			got = append(got, r.Content[0].(*mcp.TextContent).Text)
		}
		cs.Close()
		_ = cmd.Wait()
		return got, stderr.String()
	}
	got, _ := session(append([]string{tapedeck, "record", "-o", tapePath, "--"}, peers.EverythingStdio()...), "echo")
	if fmt.Sprint(got) != "[Echo: hi]" {
		t.Fatalf("recording: %v", got)
	}
	got, stderr := session(append([]string{tapedeck, "replay", "--fallback", tapePath, "--"}, peers.EverythingStdio()...), "echo", "get-sum")
	if fmt.Sprint(got) != "[Echo: hi The sum of 2 and 3 is 5.]" {
		t.Fatalf("replay --fallback: %v\n%s", got, stderr)
	}
	if !strings.Contains(stderr, "was not on the tape (unknown): the live server answered it") || !strings.Contains(stderr, `1 exchange appended to `+tapePath+` as a new episode, after the recorded session; to replay it without a server run "tapedeck replay --match keyed `+tapePath+`"`) {
		t.Errorf("replay --fallback said:\n%s", stderr)
	}
	data, _ := os.ReadFile(tapePath)
	if !strings.Contains(string(data), `"episode":"new"`) || !strings.Contains(string(data), "The sum of 2 and 3 is 5.") {
		t.Errorf("the new episode is not on the tape:\n%s", data)
	}
	// The server is not needed any more: the tape answers both, keyed, as
	// replay --fallback said; a strict replay diverges, as it also said.
	got, stderr = session([]string{tapedeck, "replay", "--match", "keyed", tapePath}, "echo", "get-sum")
	if fmt.Sprint(got) != "[Echo: hi The sum of 2 and 3 is 5.]" {
		t.Errorf("replay of the extended tape: %v\n%s", got, stderr)
	}
	// The episode comes after the recorded session on the tape: keyed
	// matching answers a client that asks in another order, a strict
	// replay diverges, as replay --fallback said.
	if got, stderr = session([]string{tapedeck, "replay", "--match", "keyed", tapePath}, "get-sum", "echo"); fmt.Sprint(got) != "[The sum of 2 and 3 is 5. Echo: hi]" {
		t.Errorf("keyed replay, the episode's call first: %v\n%s", got, stderr)
	}
	if got, stderr = session([]string{tapedeck, "replay", tapePath}, "get-sum", "echo"); fmt.Sprint(got) == "[The sum of 2 and 3 is 5. Echo: hi]" || !strings.Contains(stderr, "tapedeck replay:") {
		t.Errorf("a strict replay, the episode's call first, answered both (%v), yet replay --fallback says it diverges:\n%s", got, stderr)
	}

	// The same with the live server over Streamable HTTP (--fallback-url),
	// the new episode going to another tape (-o).
	upstream := mcptest.StartEverythingHTTP(t)
	httpTape := filepath.Join(dir, "echo-only-2.jsonl")
	if got, _ := session(append([]string{tapedeck, "record", "-o", httpTape, "--"}, peers.EverythingStdio()...), "echo"); fmt.Sprint(got) != "[Echo: hi]" {
		t.Fatalf("recording: %v", got)
	}
	episodes := filepath.Join(dir, "episodes.jsonl")
	got, stderr = session([]string{tapedeck, "replay", "--fallback-url", upstream, "-o", episodes, httpTape}, "echo", "get-sum")
	if fmt.Sprint(got) != "[Echo: hi The sum of 2 and 3 is 5.]" {
		t.Fatalf("replay --fallback-url: %v\n%s", got, stderr)
	}
	if data, _ := os.ReadFile(episodes); !strings.Contains(string(data), `"transport":"http"`) || !strings.Contains(string(data), "The sum of 2 and 3 is 5.") {
		t.Errorf("the new episode is not in -o's tape:\n%s", data)
	}
}

// A rule answers the server's own request (roots/list) in the client's
// place: the go-sdk server gets the rule's roots, the client is never
// asked, and the tape shows the answer as the rule's.
func TestRulesRespondToServerRequest(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rulesPath := rulesFile(t, `
rules:
  - name: fake-roots
    match: {phase: server_request, method: roots/list}
    action: respond
    respond: {result: {roots: [{uri: "file:///injected", name: injected}]}}
`)
	tapePath := filepath.Join(dir, "roots.jsonl")
	out, err := exec.Command(client, "--roots", "--protocol", "2025-06-18", "--steps=init,tools,roots", "--",
		tapedeck, "record", "--rules", rulesPath, "-o", tapePath, "--", server).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "file:///injected") {
		t.Fatalf("the server did not get the rule's roots (%v):\n%s", err, out)
	}
	got := injections(t, tapePath)
	if fmt.Sprint(got["fake-roots"]) != "[recv:respond+dropped send:respond+injected]" {
		t.Errorf("the tape's account: %v", got)
	}
}

// rulesFile writes a rules file in a temporary directory.
func rulesFile(t *testing.T, src string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "rules.yaml")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// duplicate over Streamable HTTP: the TypeScript client's echo call goes
// to server-everything twice through the recording proxy; the client gets
// one answer, and the tape holds both calls and both answers, the copy's
// marked as not forwarded.
func TestRulesDuplicateHTTP(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	rulesPath := rulesFile(t, "rules:\n  - name: echo-twice\n    match: {phase: request, tool: echo}\n    action: duplicate\n")
	upstream := mcptest.StartEverythingHTTP(t)
	tapePath := filepath.Join(t.TempDir(), "dup.jsonl")
	proxied, stop := startTapedeck(t, tapedeck, "record", "--rules", rulesPath, "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
	out := tsClient(t, "--url", proxied)
	stop()
	if !strings.Contains(out, "echo: Echo: hi\n") || !strings.Contains(out, "sum: The sum of 2 and 3 is 5.") {
		t.Errorf("the client's transcript:\n%s", out)
	}
	data, _ := os.ReadFile(tapePath)
	if n := strings.Count(string(data), `"text":"Echo: hi"`); n != 2 {
		t.Errorf("the tape holds %d echo answers, want 2 (the call and its duplicate):\n%s", n, data)
	}
	if got := fmt.Sprint(injections(t, tapePath)["echo-twice"]); got != "[send:duplicate send:duplicate recv:duplicate+dropped]" {
		t.Errorf("the tape's account: %s", got)
	}
}

// ruleAnswerRules answer two requests the tape holds in the rules' name:
// echo with a made-up result, add with a JSON-RPC error.
const ruleAnswerRules = `
rules:
  - name: echo-from-rule
    match: {phase: request, tool: echo}
    action: respond
    respond: {result: {content: [{type: text, text: from the rule}]}}
  - name: add-refused
    match: {phase: request, tool: add}
    action: error
    error: {code: -32603, message: add refused}
`

// ruleAnswerSession is the go-sdk client's session of the rule-answer
// test: echo and add, with what each call gave.
func ruleAnswerSession(t *testing.T, tr mcp.Transport) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "rule-answer-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var b strings.Builder
	for _, c := range []mcp.CallToolParams{{Name: "echo", Arguments: map[string]any{"message": "hi"}}, {Name: "add", Arguments: map[string]any{"a": 2, "b": 3}}} {
		res, err := cs.CallTool(ctx, &c)
		switch {
		case err != nil:
			fmt.Fprintf(&b, "%s: error: %v\n", c.Name, err)
		case len(res.Content) > 0:
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				fmt.Fprintf(&b, "%s: %s\n", c.Name, tc.Text)
			}
		}
	}
	return b.String()
}

// TestRulesReplayRuleAnswers: a rule that answers a request the tape
// holds (respond, error) answers it in the tape's place; the client did
// send it, so replay --rules counts the recorded request as sent (not
// "never sent by the client"), names the rule, and exits 0, over stdio and
// over Streamable HTTP.
func TestRulesReplayRuleAnswers(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	rulesPath := rulesFile(t, ruleAnswerRules)
	wantLive := "echo: Echo: hi\nadd: 2 + 3 = 5\n"
	wantReplay := "echo: from the rule\nadd: error: calling \"tools/call\": add refused\n"
	// checkReport reads the replay's JSON report: clean, both rules named
	// against the recorded requests.
	checkReport := func(t *testing.T, path string) {
		t.Helper()
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var rep struct {
			Divergences  []json.RawMessage
			Unused       []json.RawMessage
			RuleAnswered []struct {
				Rule, Action, Method string
				Seq, Line            int
			}
		}
		if err := json.Unmarshal(data, &rep); err != nil {
			t.Fatal(err)
		}
		if len(rep.Divergences) != 0 || len(rep.Unused) != 0 {
			t.Errorf("report: %d divergences, %d unused; want none:\n%s", len(rep.Divergences), len(rep.Unused), data)
		}
		got := map[string]string{}
		for _, a := range rep.RuleAnswered {
			if a.Seq < 0 || a.Line <= 0 {
				t.Errorf("rule %s answered a request not found on the tape (seq %d):\n%s", a.Rule, a.Seq, data)
			}
			got[a.Rule] = a.Action
		}
		if got["echo-from-rule"] != "respond" || got["add-refused"] != "error" || len(got) != 2 {
			t.Errorf("report's ruleAnswered %v, want echo-from-rule respond and add-refused error:\n%s", got, data)
		}
	}
	checkLog := func(t *testing.T, log string) {
		t.Helper()
		if strings.Contains(log, "never sent by the client") {
			t.Errorf("the replay reports a request the client sent as never sent:\n%s", log)
		}
		for _, want := range []string{
			`rule echo-from-rule answered the client's tools/call {"name":"echo","arguments":{"message":"hi"}} in the tape's place: the recorded request (tape line`,
			`rule add-refused answered with its error the client's tools/call`,
		} {
			if !strings.Contains(log, want) {
				t.Errorf("the replay's stderr lacks %q:\n%s", want, log)
			}
		}
	}

	t.Run("stdio", func(t *testing.T) {
		tapePath := filepath.Join(dir, "stdio.jsonl")
		if got := ruleAnswerSession(t, &mcp.CommandTransport{Command: exec.Command(tapedeck, "record", "-o", tapePath, "--", server)}); got != wantLive {
			t.Fatalf("recording: %q, want %q", got, wantLive)
		}
		reportPath := filepath.Join(dir, "stdio-report.json")
		var stderr strings.Builder
		cmd := exec.Command(tapedeck, "replay", "--rules", rulesPath, "--report", reportPath, tapePath)
		cmd.Stderr = &stderr
		if got := ruleAnswerSession(t, &mcp.CommandTransport{Command: cmd}); got != wantReplay {
			t.Errorf("replayed with the rules: %q, want %q", got, wantReplay)
		}
		if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("replay --rules exited %v, want 0:\n%s", cmd.ProcessState, stderr.String())
		}
		checkReport(t, reportPath)
		checkLog(t, stderr.String())
	})
	t.Run("http", func(t *testing.T) {
		upstream := mcptest.StartSDKServerHTTP(t)
		tapePath := filepath.Join(dir, "http.jsonl")
		proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
		if got := ruleAnswerSession(t, &mcp.StreamableClientTransport{Endpoint: proxied}); got != wantLive {
			t.Fatalf("recording over HTTP: %q, want %q", got, wantLive)
		}
		stopRecord()
		reportPath := filepath.Join(dir, "http-report.json")
		replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--rules", rulesPath, "--report", reportPath, "--listen", "127.0.0.1:0", tapePath)
		if got := ruleAnswerSession(t, &mcp.StreamableClientTransport{Endpoint: replayed}); got != wantReplay {
			t.Errorf("replayed over HTTP with the rules: %q, want %q", got, wantReplay)
		}
		log := stopReplay() // fails the test on a non-zero exit
		checkReport(t, reportPath)
		checkLog(t, log)
	})
}
