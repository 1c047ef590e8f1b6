package check

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tapedeck/tapedeck/tape"
)

// TestSpecRealPeers: check --spec on every tape testdata holds from real
// peers finds only what those peers really break. One finding is true:
// server-everything (on the TypeScript SDK it pins) answers a resources/read
// of an unknown resource with -32602 where MCP's resources section gives
// -32002 (the TypeScript SDK changed it since, "per the MCP specification",
// in its changeset fix-unknown-tool-protocol-error). Any other finding would
// be a false positive.
func TestSpecRealPeers(t *testing.T) {
	known := map[string][]string{ // tape → "rule@line" expected
		"sdk-everything-2025-06-18.tape.jsonl": {SpecErrorCode + "@26"},
		"sdk-everything-discover.tape.jsonl":   {SpecErrorCode + "@28"},
		"sdk-everything-http.tape.jsonl":       {SpecErrorCode + "@35"},
		"sdk-multi-server.tape.jsonl":          {SpecErrorCode + "@57"},
	}
	paths, err := filepath.Glob("../../testdata/*.tape.jsonl")
	if err != nil || len(paths) < 5 {
		t.Fatalf("testdata tapes: %v, %v", paths, err)
	}
	for _, p := range paths {
		t.Run(filepath.Base(p), func(t *testing.T) {
			x, err := tape.OpenIndex(p)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			var got []string
			for _, f := range mustTape(t, p, x, Options{Spec: true, FailOn: []string{RuleSpec}}) {
				if isSpecRule(f.Rule) {
					got = append(got, fmt.Sprintf("%s@%d", f.Rule, f.Line))
					if f.Rule == SpecErrorCode && !strings.Contains(f.Message, "resources/read of an unknown resource answered -32602") {
						t.Errorf("line %d: %s", f.Line, f.Message)
					}
				}
			}
			if !slices.Equal(got, known[filepath.Base(p)]) {
				t.Errorf("got findings %q, want %q", got, known[filepath.Base(p)])
			}
		})
	}
}

// TestSpecRules: each rule fires on a small tape made to break it, and
// only it.
func TestSpecRules(t *testing.T) {
	modernMeta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	modernCall := func(id, tool, http string) string {
		return strings.Replace(rec("send", 20, `"id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`",`+modernMeta+`}`), `"server":"s"`, `"server":"s"`+http, 1)
	}
	listWith := func(version, tools string) []string {
		return lines(handshake(version), rec("send", 20, `"id":1,"method":"tools/list"`), rec("recv", 30, `"id":1,"result":{"tools":[`+tools+`]}`))
	}
	sumTool := `{"name":"add","inputSchema":{"type":"object"},"outputSchema":{"type":"object","properties":{"sum":{"type":"number"}},"required":["sum"]}}`
	cases := []struct {
		name  string
		rule  string
		lines []string
		want  string // in the message
	}{
		{"result type missing", SpecResultType, lines(
			modernCall("1", "echo", ""),
			rec("recv", 30, `"id":1,"result":{"content":[{"type":"text","text":"hi"}]}`)), "no resultType"},
		{"Mcp-Method disagrees", SpecHeaders, lines(
			modernCall("1", "echo", `,"transport":"http","http":"POST","mcpMethod":"tools/list","mcpName":"echo"`),
			rec("recv", 30, `"id":1,"result":{"resultType":"complete","content":[]}`)), `Mcp-Method "tools/list"`},
		{"Mcp-Name disagrees", SpecHeaders, lines(
			modernCall("1", "echo", `,"transport":"http","http":"POST","mcpMethod":"tools/call","mcpName":"add"`),
			rec("recv", 30, `"id":1,"result":{"resultType":"complete","content":[]}`)), `Mcp-Name "add"`},
		{"structuredContent off its schema", SpecOutputSchema, lines(listWith("2025-06-18", sumTool),
			call("2", "add", 40), rec("recv", 50, `"id":2,"result":{"content":[],"structuredContent":{"sum":"five"}}`)), "does not match its outputSchema"},
		{"structuredContent missing", SpecOutputSchema, lines(listWith("2025-06-18", sumTool),
			call("2", "add", 40), rec("recv", 50, `"id":2,"result":{"content":[]}`)), "no structuredContent"},
		{"isError without content", SpecToolError, lines(handshake("2025-06-18"),
			call("1", "echo", 40), rec("recv", 50, `"id":1,"result":{"isError":true,"content":[]}`)), "no content"},
		{"client sends a server notification", SpecNotification, lines(handshake("2025-06-18"),
			rec("send", 30, `"method":"notifications/tools/list_changed"`)), "the client sent the notification notifications/tools/list_changed"},
		{"notification before its version", SpecNotification, lines(handshake("2025-06-18"),
			rec("recv", 30, `"method":"notifications/elicitation/complete","params":{}`)), "it came in 2025-11-25"},
		{"server calls a client method", SpecServerReq, lines(handshake("2025-06-18"),
			rec("recv", 30, `"id":"s1","method":"tools/call","params":{"name":"x"}`)), "the server sent the request tools/call"},
		{"elicitation before 2025-06-18", SpecServerReq, lines(handshake("2025-03-26"),
			rec("recv", 30, `"id":"s1","method":"elicitation/create","params":{}`)), "it came in 2025-06-18"},
		{"batch after 2025-06-18", SpecDeprecated, lines(handshake("2025-06-18"),
			`[{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:01.000Z"}}]`), "removed batches"},
		{"includeContext in 2025-11-25", SpecDeprecated, lines(handshake("2025-11-25"),
			rec("recv", 30, `"id":"s1","method":"sampling/createMessage","params":{"includeContext":"allServers","messages":[]}`)), `includeContext "allServers"`},
		{"server request in 2026-07-28", SpecDeprecated, lines(modernCall("1", "echo", ""),
			rec("recv", 25, `"id":"s1","method":"roots/list"`)), "input_required"},
		{"HTTP+SSE in 2025-03-26", SpecDeprecated, lines(
			rec("lifecycle", 0, `"method":"$http/endpoint","params":{"url":"/messages"}`), handshake("2025-03-26")), "HTTP+SSE"},
		{"-32002 off resources/read", SpecErrorCode, lines(handshake("2025-06-18"),
			call("1", "echo", 40), rec("recv", 50, `"id":1,"error":{"code":-32002,"message":"nope"}`)), "-32002 (ResourceNotFound)"},
		{"unknown resource as -32602", SpecErrorCode, lines(handshake("2025-06-18"),
			rec("send", 30, `"id":1,"method":"resources/read","params":{"uri":"x://y"}`), rec("recv", 50, `"id":1,"error":{"code":-32602,"message":"Resource x://y not found"}`)), "-32602 (InvalidParams)"},
		{"-32042 before 2025-11-25", SpecErrorCode, lines(handshake("2025-06-18"),
			call("1", "echo", 40), rec("recv", 50, `"id":1,"error":{"code":-32042,"message":"go there"}`)), "URLElicitationRequired"},
		{"-32020 before 2026-07-28", SpecErrorCode, lines(handshake("2025-11-25"),
			call("1", "echo", 40), rec("recv", 50, `"id":1,"error":{"code":-32020,"message":"bad header"}`)), "HeaderMismatch"},
		{"tool name outside the guidance", SpecToolName, listWith("2025-11-25", `{"name":"look up","inputSchema":{"type":"object"}}`), `"look up"`},
		{"duplicate id in flight", SpecDuplicateID, lines(handshake("2025-06-18"),
			call("1", "echo", 40), call("1", "echo", 41), rec("recv", 50, `"id":1,"result":{"content":[]}`), rec("recv", 51, `"id":1,"result":{"content":[]}`)), "reused id 1"},
		{"client answers an unknown id", SpecUnknownID, lines(handshake("2025-06-18"),
			rec("send", 40, `"id":"s9","result":{}`)), "the client answered id \"s9\""},
		{"challenge without resource_metadata", RuleChallenge, lines(
			rec("lifecycle", 0, `"method":"$http/exchange","params":{"method":"POST","status":401,"wwwAuthenticate":["Bearer realm=\"x\""]}`)), "resource_metadata"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs := mustTape(t, "t", index(t, c.lines...), Options{Spec: true, FailOn: []string{RuleSpec}})
			var got []string
			hit := false
			for _, f := range fs {
				if !isSpecRule(f.Rule) {
					continue
				}
				got = append(got, f.Rule+": "+f.Message)
				if f.Rule == c.rule && strings.Contains(f.Message, c.want) && f.Fail {
					hit = true
				}
			}
			if !hit || len(got) != 1 {
				t.Errorf("got %q, want one failing %s finding saying %q", got, c.rule, c.want)
			}
		})
	}
	// Every rule has a case.
	for _, r := range SpecRules {
		if !slices.ContainsFunc(cases, func(c struct {
			name  string
			rule  string
			lines []string
			want  string
		}) bool {
			return c.rule == r.ID
		}) {
			t.Errorf("rule %s has no case", r.ID)
		}
	}
}

// TestSpecOff: without Spec, no spec rule runs.
func TestSpecOff(t *testing.T) {
	x := index(t, lines(handshake("2025-06-18"), rec("send", 30, `"method":"notifications/tools/list_changed"`))...)
	for _, f := range mustTape(t, "t", x, Options{}) {
		if isSpecRule(f.Rule) {
			t.Errorf("without Spec: %s: %s", f.Rule, f.Message)
		}
	}
}

// TestSpecSARIF: the SARIF log lists every spec rule with its section as
// helpUri and a help text, and stays valid SARIF 2.1.0.
func TestSpecSARIF(t *testing.T) {
	var b bytes.Buffer
	fs := mustTape(t, "t.jsonl", index(t, lines(handshake("2025-06-18"), rec("send", 30, `"method":"notifications/tools/list_changed"`))...), Options{Spec: true, FailOn: []string{RuleSpec}})
	if err := WriteSARIF(&b, fs, "v1"); err != nil {
		t.Fatal(err)
	}
	schema, err := jsonschema.NewCompiler().Compile("../../testdata/sarif-schema/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("the SARIF 2.1.0 schema refuses the log: %v", err)
	}
	var log struct {
		Runs []struct {
			Tool struct {
				Driver struct {
					Rules []struct {
						ID, HelpURI string
						Help        struct{ Text string }
					}
				}
			}
			Results []struct{ RuleID, Level string }
		}
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	rules := map[string]string{}
	for _, r := range log.Runs[0].Tool.Driver.Rules {
		if r.HelpURI != "" && strings.Contains(r.Help.Text, r.HelpURI) {
			rules[r.ID] = r.HelpURI
		}
	}
	for _, r := range SpecRules {
		if rules[r.ID] != r.URL() {
			t.Errorf("rule %s: helpUri %q, want %q with it in the help text", r.ID, rules[r.ID], r.URL())
		}
	}
	if res := log.Runs[0].Results; len(res) != 1 || res[0].RuleID != SpecNotification || res[0].Level != "error" {
		t.Errorf("results %+v, want one failing %s", res, SpecNotification)
	}
}
