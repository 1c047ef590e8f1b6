package tape

import (
	"bytes"
	"strings"
	"testing"
)

func TestTarget(t *testing.T) {
	for _, tt := range []struct{ method, raw, want string }{
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{"name":"not me"},"name":"echo"}}`, "echo"},
		{"tools/call", `{"name":"echo\u00e9","arguments":{}}`, "echoé"},
		{"prompts/get", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greet"}}`, "greet"},
		{"resources/read", `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`, "file:///a"},
		{"completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"}}}`, "p"},
		{"completion/complete", `{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/resource","uri":"file:///r"}}}`, "file:///r"},
		{"tools/list", `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"name":"x"}}`, ""},
		{"tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":5}}`, ""},
		{"tools/call", `not json`, ""},
	} {
		if got := Target(tt.method, []byte(tt.raw)); got != tt.want {
			t.Errorf("Target(%s, %s) = %q, want %q", tt.method, tt.raw, got, tt.want)
		}
	}
}

// A tool's failure (result.isError) is a failure like a JSON-RPC error,
// told apart; the request of a failed exchange reports it too.
func TestFailure(t *testing.T) {
	meta := func(dir string) string {
		return `,"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`
	}
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"fail"}` + meta("send"),
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"boom"}],"isError":true}` + meta("recv"),
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}` + meta("send"),
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}` + meta("recv")[1:],
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"ok"}` + meta("send"),
		`{"jsonrpc":"2.0","id":3,"result":{"content":[],"isError":false}` + meta("recv"),
	}
	lines[3] = `{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}` + meta("recv")
	var buf bytes.Buffer
	for _, l := range lines {
		buf.WriteString(l + "\n")
	}
	x := NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), nil); err != nil {
		t.Fatal(err)
	}
	want := []Failure{ToolError, ToolError, RPCError, RPCError, NoFailure, NoFailure}
	for i, w := range want {
		if got := x.Failure(i); got != w {
			t.Errorf("Failure(%d) = %v, want %v", i, got, w)
		}
	}
	if e := x.Entry(1); !e.ToolError || e.Error || e.Failed() != ToolError {
		t.Errorf("entry 1: %+v", e)
	}
	if m := x.MethodOf(1); m != "tools/call" {
		t.Errorf("MethodOf(1) = %q", m)
	}
	st := ComputeStats(x, "")
	if tot := st.Servers[0].Total; tot.Errors != 1 || tot.ToolErrors != 1 {
		t.Errorf("stats: %d errors, %d tool errors; want 1 and 1", tot.Errors, tot.ToolErrors)
	}
}

// Timestamps that leap ahead, go back, or put a response before its
// request are warned about, with their lines.
func TestClockWarnings(t *testing.T) {
	line := func(dir, ts, msg string) string {
		return msg[:len(msg)-1] + `,"_meta":{"dir":"` + dir + `","server":"s","ts":"` + ts + `"}}` + "\n"
	}
	data := line("send", "2026-05-16T12:00:00.000Z", `{"jsonrpc":"2.0","id":1,"method":"ping"}`) +
		line("recv", "2100-01-01T00:00:00.000Z", `{"jsonrpc":"2.0","method":"notifications/message"}`) +
		line("send", "2026-05-16T12:00:05.000Z", `{"jsonrpc":"2.0","id":2,"method":"ping"}`) +
		line("recv", "2026-05-16T12:00:04.000Z", `{"jsonrpc":"2.0","id":2,"result":{}}`)
	x := NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, w := range x.Warnings() {
		got = append(got, w.Error())
	}
	all := strings.Join(got, "\n")
	for _, want := range []string{"line 2: _meta.ts leaps", "line 3: _meta.ts goes back", "line 4: response id 2 is stamped 1s before its request (line 3)"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

// A server of an earlier era rejects a client's server/discover probe
// before initialize: version negotiation, not a failure. The same answer
// to another method, or after initialize, or a probe that failed in
// another way, is a failure.
func TestNegotiation(t *testing.T) {
	const (
		notFound = `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`
		notInit  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`
		http400  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Invalid request"},"_meta":{"dir":"recv","server":"s","status":400,"transport":"http"}}`
		http500  = `{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"boom"},"_meta":{"dir":"recv","server":"s","status":500,"transport":"http"}}`
		internal = `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`
		otherMsg = `{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"Connection closed"}}`
		result   = `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"]}}`
	)
	for _, tt := range []struct {
		method     string
		beforeInit bool
		resp       string
		status     int
		want       bool
	}{
		{MethodDiscover, true, notFound, 0, true},
		{MethodDiscover, true, notInit, 0, true},
		{MethodDiscover, true, http400, 0, true},
		{MethodDiscover, true, internal, 404, true}, // the live status, not on the message
		{MethodDiscover, true, http500, 0, false},
		{MethodDiscover, true, internal, 0, false},
		{MethodDiscover, true, otherMsg, 0, false},
		{MethodDiscover, true, result, 0, false}, // a success is no failure either way
		{MethodDiscover, false, notFound, 0, false},
		{"tools/list", true, notFound, 0, false},
	} {
		if got := Negotiation(tt.method, tt.beforeInit, []byte(tt.resp), tt.status); got != tt.want {
			t.Errorf("Negotiation(%s, beforeInit %v, %s, %d) = %v, want %v", tt.method, tt.beforeInit, tt.resp, tt.status, got, tt.want)
		}
	}
}

// The index marks a rejected probe and its answer as negotiation: not a
// failure (Failure, NextFailure, Failures, Entry.Failed, stats), while a
// server/discover rejected after initialize stays one.
func TestIndexNegotiation(t *testing.T) {
	x := indexOf(t, tapeOf(
		`lifecycle s {"jsonrpc":"2.0","method":"$transport/start"}`,                            // 0
		`send s {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,               // 1
		`recv s {"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, // 2
		`send s {"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`,                    // 3
		`recv s {"jsonrpc":"2.0","id":2,"result":{}}`,                                          // 4
		`send s {"jsonrpc":"2.0","id":3,"method":"server/discover","params":{}}`,               // 5
		`recv s {"jsonrpc":"2.0","id":3,"error":{"code":-32601,"message":"Method not found"}}`, // 6
		`lifecycle s {"jsonrpc":"2.0","method":"$transport/start"}`,                            // 7: a new connection
		`send s {"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`,               // 8
		`recv s {"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`,   // 9
	))
	for i, want := range map[int]bool{1: true, 2: true, 5: false, 6: false, 8: false, 9: false} {
		if got := x.Negotiation(i); got != want {
			t.Errorf("Negotiation(%d) = %v, want %v", i, got, want)
		}
	}
	if f := x.Failure(2); f != NoFailure {
		t.Errorf("Failure(2), the rejected probe's answer = %v, want ok", f)
	}
	if f := x.Failure(1); f != NoFailure {
		t.Errorf("Failure(1), the probe = %v, want ok", f)
	}
	if e := x.Entry(2); !e.Negotiation || !e.Error || e.Failed() != NoFailure {
		t.Errorf("Entry(2) = Negotiation %v, Error %v, Failed %v; want true, true, ok", e.Negotiation, e.Error, e.Failed())
	}
	if f := x.Failure(6); f != RPCError {
		t.Errorf("Failure(6), server/discover rejected after initialize = %v, want error", f)
	}
	if i := x.NextFailure(0, 1); i != 6 {
		t.Errorf("NextFailure(0, 1) = %d, want 6 (the probe at 2 is negotiation)", i)
	}
	if i := x.NextFailure(5, -1); i != -1 {
		t.Errorf("NextFailure(5, -1) = %d, want -1", i)
	}
	if rpc, tool := x.Failures(); rpc != 2 || tool != 0 {
		t.Errorf("Failures() = %d, %d; want 2, 0 (lines 6 and 9, not the probe)", rpc, tool)
	}
	st := ComputeStats(x, "")
	if tot := st.Servers[0].Total; tot.Errors != 2 || tot.Negotiations != 1 {
		t.Errorf("stats: %d errors, %d negotiations; want 2, 1", tot.Errors, tot.Negotiations)
	}
	h, _ := st.Servers[0].Table()
	if !strings.Contains(strings.Join(h, " "), "negotiation") {
		t.Errorf("stats table header %q: no negotiation column", h)
	}
}

// An HTTP server rejects a probe it cannot read yet with "id":null and a
// 4xx status; a tape recorded before the proxy wrote _meta.inReplyTo
// pairs it with the request its POST carried, and it is negotiation. An
// initialize on a session-less POST opens a session of its own: a probe
// after it on the session-less connection is still before initialize.
func TestIndexNegotiationHTTP(t *testing.T) {
	http := func(dir, body, extra string) string {
		return body[:len(body)-1] + `,"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-05-16T12:00:00.000Z","http":"POST","transport":"http"` + extra + "}}\n"
	}
	text := http("send", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, "") +
		http("recv", `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`, `,"status":400`) +
		http("send", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{}}`, `,"exchange":1`) +
		http("recv", `{"jsonrpc":"2.0","id":2,"result":{}}`, `,"exchange":1,"status":200,"newSession":"A"`) +
		http("send", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, "") +
		http("recv", `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`, `,"status":400`)
	x := indexOf(t, text)
	for _, i := range []int{0, 1, 4, 5} {
		if !x.Negotiation(i) {
			t.Errorf("Negotiation(%d) = false, want true", i)
		}
	}
	if p := x.Pair(1); p.Partner != 0 || p.Orphan {
		t.Errorf("Pair(1) = %+v, want partner 0, not an orphan", p)
	}
	if rpc, _ := x.Failures(); rpc != 0 {
		t.Errorf("Failures() = %d JSON-RPC errors, want 0", rpc)
	}
	if n := x.WarningCount(); n != 0 {
		t.Errorf("%d warnings, want none (no orphan)", n)
	}
}

// TestListOf checks the table of list methods: every list method is found
// with its result member, item key and list_changed notification, and other
// methods are not lists.
func TestListOf(t *testing.T) {
	want := map[string][3]string{
		"tools/list":               {"tools", "name", "notifications/tools/list_changed"},
		"prompts/list":             {"prompts", "name", "notifications/prompts/list_changed"},
		"resources/list":           {"resources", "uri", "notifications/resources/list_changed"},
		"resources/templates/list": {"resourceTemplates", "uriTemplate", "notifications/resources/list_changed"},
	}
	if n := len(Lists()); n != len(want) {
		t.Fatalf("Lists() has %d entries, want %d", n, len(want))
	}
	for m, w := range want {
		l, ok := ListOf(m)
		if !ok || [3]string{l.Member, l.Key, l.Changed} != w {
			t.Errorf("ListOf(%q) = %+v, %v; want %v", m, l, ok, w)
		}
	}
	for _, m := range []string{"tools/call", "roots/list", ""} {
		if _, ok := ListOf(m); ok {
			t.Errorf("ListOf(%q) says it is a list method of a server", m)
		}
	}
	Lists()[0].Method = "changed"
	if Lists()[0].Method != "tools/list" {
		t.Error("changing what Lists returned changed the table")
	}
}

// TestTargetMethods checks that the methods that name a target, what they
// name, the Mcp-Name header's methods and Target agree.
func TestTargetMethods(t *testing.T) {
	kinds := map[string]string{
		"tools/call": TargetTool, "prompts/get": TargetPrompt, "resources/read": TargetResource,
		"resources/subscribe": TargetResource, "resources/unsubscribe": TargetResource, "completion/complete": TargetRef,
	}
	if got := TargetMethods(); len(got) != len(kinds) {
		t.Fatalf("TargetMethods() = %v, want the %d of %v", got, len(kinds), kinds)
	}
	for _, m := range TargetMethods() {
		if TargetKind(m) != kinds[m] || !NamesTarget(m) {
			t.Errorf("TargetKind(%q) = %q, want %q", m, TargetKind(m), kinds[m])
		}
	}
	for _, m := range []string{"tools/list", "initialize", ""} {
		if NamesTarget(m) || Target(m, []byte(`{"params":{"name":"x","uri":"y"}}`)) != "" {
			t.Errorf("%q names a target", m)
		}
	}
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"file:///a"}}`)
	if v, ok := NameHeader("resources/read", msg); !ok || v != "file:///a" {
		t.Errorf("NameHeader(resources/read) = %q, %v", v, ok)
	}
	if _, ok := NameHeader("resources/subscribe", msg); ok {
		t.Error("resources/subscribe has no Mcp-Name header")
	}
	if v := Target("completion/complete", []byte(`{"ref":{"type":"ref/prompt","name":"p"}}`)); v != "p" {
		t.Errorf("Target(completion/complete) = %q, want p", v)
	}
}

// TestParamsLine checks the one-line params summary: _meta dropped wherever
// it stands, compacted, control characters folded, cut with "…", empty
// params saying nothing.
func TestParamsLine(t *testing.T) {
	for _, c := range []struct {
		in   string
		max  int
		want string
	}{
		{`{"_meta":{"protocolVersion":"2026-07-28"}, "name": "echo",` + "\n" + `"arguments":{"a":1}}`, 200, `{"name":"echo","arguments":{"a":1}}`},
		{`{"name":"echo","_meta":{"x":1}}`, 200, `{"name":"echo"}`},
		{`{"_meta":{"x":1}}`, 200, ""},
		{` {} `, 200, ""},
		{``, 200, ""},
		{`{"text":"abcdefghij"}`, 10, `{"text":"a…`},
		{`{"a":1}`, 7, `{"a":1}`},
		{"not json\x1b[2J\nat all", 200, "not json [2J at all"},
	} {
		if got := ParamsLine([]byte(c.in), c.max); got != c.want {
			t.Errorf("ParamsLine(%q, %d) = %q, want %q", c.in, c.max, got, c.want)
		}
	}
}

// TestListenFilter reads the filter of subscriptions/listen and of its
// acknowledgement as the v2 SDK (2.4.0) writes them, and the subscription
// id the acknowledgement carries.
func TestListenFilter(t *testing.T) {
	for _, tt := range []struct {
		raw  string
		what []string
		sub  string
		ok   bool
	}{
		{`{"jsonrpc":"2.0","id":"listen:1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"promptsListChanged":false,"resourcesListChanged":true,"resourceSubscriptions":["demo://a","demo://b"]}}}`,
			[]string{"tools", "resources", "updates of demo://a", "updates of demo://b"}, "", true},
		{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"promptsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":7}}}`,
			[]string{"prompts"}, "7", true},
		{`{"notifications":{},"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:2"}}`, nil, `"listen:2"`, true},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`, nil, "", false},
		{`not json`, nil, "", false},
	} {
		what, sub, ok := ListenFilter([]byte(tt.raw))
		if strings.Join(what, "|") != strings.Join(tt.what, "|") || sub != tt.sub || ok != tt.ok {
			t.Errorf("ListenFilter(%s) = %q, %q, %v; want %q, %q, %v", tt.raw, what, sub, ok, tt.what, tt.sub, tt.ok)
		}
	}
}

// TestParamHeaders builds a tools/call's Mcp-Param-* headers from its
// tool's x-mcp-header declarations as the v2 SDK (2.4.0) does, and the
// tape keeps them in its HTTP metadata.
func TestParamHeaders(t *testing.T) {
	schema := `{"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},"n":{"type":"integer","x-mcp-header":"N"},"dry":{"type":"boolean","x-mcp-header":"Dry"},"opt":{"type":"string","x-mcp-header":"Opt"},"where":{"type":"object","properties":{"city":{"type":"string","x-mcp-header":"City"}}},"app":{"type":"string"}}}`
	got := ParamHeaders([]byte(schema), []byte(`{"region":"eu-west-1","n":42,"dry":false,"opt":null,"where":{"city":"Zürich"},"app":"x"}`))
	want := []MCPParam{{"City", "=?base64?WsO8cmljaA==?="}, {"Dry", "false"}, {"N", "42"}, {"Region", "eu-west-1"}}
	if len(got) != len(want) {
		t.Fatalf("ParamHeaders = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ParamHeaders = %v, want %v", got, want)
		}
	}
	line := HTTPMeta{HTTP: true, Method: "POST", MCPMethod: "tools/call", MCPName: "deploy", MCPParams: ParamsObject(want)}.AppendJSON([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00Z"`))
	line = append(line, "}}"...)
	back := ParseHTTPMeta(line).Params()
	if len(back) != len(want) || back[0] != want[0] || back[3] != want[3] {
		t.Fatalf("ParseHTTPMeta(%s).Params() = %v, want %v", line, back, want)
	}
}
