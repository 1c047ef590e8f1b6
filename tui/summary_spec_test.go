package tui

import (
	"path/filepath"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// The summary column names the spec features of 2025-11-25 and 2026-07-28
// instead of showing their JSON: MCP's error codes, resource_link content,
// URL-mode elicitation and its completion notification, subscriptions/listen
// and its acknowledgement.
func TestSummarySpecFeatures(t *testing.T) {
	for _, tt := range []struct {
		msg, method, want string
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"This request requires more information.","data":{"elicitations":[]}}}`, "tools/call",
			`-32042 URLElicitationRequired This request requires more information. · {"elicitations":[]}`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`, "resources/read", "-32002 ResourceNotFound Resource not found"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, "x", "-32601 Method not found"},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"demo://resource/static/document/README.md","name":"README.md"}]}}`, "tools/call",
			"resource_link demo://resource/static/document/README.md (README.md)"},
		{`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"url","elicitationId":"e1","url":"https://example.com/connect","message":"Connect your account"}}`, "elicitation/create",
			"url https://example.com/connect · Connect your account"},
		{`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}`, "notifications/elicitation/complete", "elicitation e1 complete"},
		// 2026-07-28 subscriptions, as the v2 SDK 2.4.0 sends them
		{`{"jsonrpc":"2.0","id":"listen:1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["demo://a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "subscriptions/listen",
			"listen: tools list_changed; updates of demo://a"},
		{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:1"}}}`, "notifications/subscriptions/acknowledged",
			`subscription "listen:1" subscribed: tools list_changed`},
		{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`, "notifications/subscriptions/acknowledged", "subscribed: nothing"},
	} {
		es := tape.Classify([]byte(tt.msg))
		if len(es) != 1 {
			t.Fatalf("%s: %d entries", tt.msg, len(es))
		}
		if got := Summary(es[0], []byte(tt.msg), tt.method); got != tt.want {
			t.Errorf("summary of %s:\n got %q\nwant %q", tt.msg, got, tt.want)
		}
	}
}

// The summary column says what the messages that carry no arguments of
// their own mean: the handshake's end, a ping's answer, a completion, a
// sampling request and its answer, tasks/list, a resource's update, the
// client's roots changing. Each case is the first message of its method
// on a tape of testdata that records it, and its answer.
func TestSummaryByMeaning(t *testing.T) {
	for _, tt := range []struct {
		tape, method    string
		request, answer string // the summaries of the message and its answer
	}{
		{"ts-everything-coverage", "notifications/initialized", "client ready", ""},
		{"ts-everything-coverage", "ping", "", "pong"},
		{"ts-everything-coverage", "completion/complete", `prompt "completable-prompt" arg "department"="S"`, "2 values: Sales, Support"},
		{"ts-everything-coverage", "tasks/list", "", "1 task (1 working)"},
		{"ts-everything-coverage", "notifications/resources/updated", "demo://resource/dynamic/text/1", ""},
		{"ts-everything-coverage", "notifications/roots/list_changed", "client's roots changed", ""},
		// answered with a task (the timeline shows the task's line there)
		{"ts-everything-task-sampling", "sampling/createMessage", `user: "Resource trigger-sampling-request-async context: hello" · max 10 tokens`, ""},
		// the sampling task's result, fetched with tasks/result
		{"ts-everything-task-sampling", "tasks/result", `{"taskId":"93eef0de107a542d7f8d3950e3c93301"}`, "model scripted · sampled: 1 message(s)"},
	} {
		x, err := tape.OpenIndex(filepath.Join("..", "testdata", tt.tape+".tape.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		i := -1
		for k := range x.Len() {
			if e := x.Entry(k); e.Method == tt.method && (e.Kind == tape.KindRequest || e.Kind == tape.KindNotification) {
				i = k
				break
			}
		}
		if i < 0 {
			x.Close()
			t.Fatalf("%s: no %s on the tape", tt.tape, tt.method)
		}
		summary := func(k int) string {
			m, err := x.Message(k)
			if err != nil {
				t.Fatal(err)
			}
			return Summary(x.Entry(k), tape.StripMeta(m.Raw), tt.method)
		}
		if got := summary(i); got != tt.request {
			t.Errorf("%s: summary of %s: got %q, want %q", tt.tape, tt.method, got, tt.request)
		}
		if tt.answer != "" {
			p := x.Pair(i).Partner
			if p < 0 {
				t.Errorf("%s: %s has no answer on the tape", tt.tape, tt.method)
			} else if got := summary(p); got != tt.answer {
				t.Errorf("%s: summary of %s's answer: got %q, want %q", tt.tape, tt.method, got, tt.answer)
			}
		}
		x.Close()
	}
}

// The summaries by meaning of messages no tape here holds in that shape:
// a completion with its context and a partial answer, tasks of several
// statuses, a sampling request with model hints and no text, a ping
// answered with members; text from the peer stays on one line, its
// control characters made spaces.
func TestSummaryByMeaningShapes(t *testing.T) {
	for _, tt := range []struct {
		msg, method, want string
	}{
		{`{"jsonrpc":"2.0","id":3,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///{path}"},"argument":{"name":"path","value":"sr"},"context":{"arguments":{"repo":"tapedeck"}}}}`, "completion/complete",
			`resource file:///{path} arg "path"="sr" · given "repo"="tapedeck"`},
		{`{"jsonrpc":"2.0","id":3,"result":{"completion":{"values":["src","srv","sre"],"total":40,"hasMore":true}}}`, "completion/complete", "3 of 40 values: src, srv, sre"},
		{`{"jsonrpc":"2.0","id":3,"result":{"completion":{"values":["a"],"hasMore":true}}}`, "completion/complete", "1 value (more): a"},
		{`{"jsonrpc":"2.0","id":3,"result":{"completion":{"values":[]}}}`, "completion/complete", "0 values"},
		{`{"jsonrpc":"2.0","id":4,"result":{"tasks":[{"taskId":"a","status":"completed"},{"taskId":"b","status":"working"},{"taskId":"c","status":"working"},{"taskId":"d","status":"paused"}]}}`, "tasks/list",
			"4 tasks (2 working, 1 completed, 1 paused)"},
		{`{"jsonrpc":"2.0","id":4,"result":{"tasks":[]}}`, "tasks/list", "0 tasks"},
		{`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":{"type":"image","data":"AA==","mimeType":"image/png"}},{"role":"assistant","content":{"type":"text","text":"ok"}}],"modelPreferences":{"hints":[{"name":"claude-3"},{"name":"gpt"}]},"maxTokens":1}}`, "sampling/createMessage",
			"user: (image) · 2 messages · models claude-3, gpt · max 1 token"},
		{`{"jsonrpc":"2.0","id":5,"method":"sampling/createMessage","params":{"messages":[{"role":"user","content":[{"type":"text","text":"line one\nline\u001b[2Jtwo"}]}],"maxTokens":100}}`, "sampling/createMessage",
			`user: "line one\nline\x1b[2Jtwo" · max 100 tokens`},
		{`{"jsonrpc":"2.0","id":5,"result":{"role":"assistant","content":{"type":"text","text":"hi\u001b]52;c;AA==\u0007 there"},"model":"m\u001b[31m"}}`, "sampling/createMessage", "model m [31m · hi ]52;c;AA== there"},
		{`{"jsonrpc":"2.0","id":6,"result":{"ok":true}}`, "ping", `{"ok":true}`},
		{`{"jsonrpc":"2.0","id":6,"error":{"code":-32601,"message":"Method not found"}}`, "ping", "-32601 Method not found"},
		{`{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"demo://x\u001b[2J","title":"X"}}`, "notifications/resources/updated", "demo://x [2J"},
	} {
		es := tape.Classify([]byte(tt.msg))
		if len(es) != 1 {
			t.Fatalf("%s: %d entries", tt.msg, len(es))
		}
		if got := Summary(es[0], []byte(tt.msg), tt.method); got != tt.want {
			t.Errorf("summary of %s:\n got %q\nwant %q", tt.msg, got, tt.want)
		}
	}
}
