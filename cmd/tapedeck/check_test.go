package main

import (
	"encoding/json"
	"encoding/xml"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// check on a real recording: its JSON-RPC error and its failed tool call,
// each with the line; exit 1; a rule left out of --fail-on is a note.
func TestCheckFindings(t *testing.T) {
	path := fixture(t, "sdk-everything-2025-06-18.tape.jsonl")
	out, _, code := runCLI(t, "check", path)
	for _, want := range []string{
		"FAIL " + path + ":24: tool-error: tools/call no-such-tool failed: MCP error -32602: Tool no-such-tool not found",
		"FAIL " + path + ":26: error: resources/read: error -32602",
		"1 tape checked, 2 findings: fail (2 failing)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("check lacks %q:\n%s", want, out)
		}
	}
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	out, _, code = runCLI(t, "check", "--fail-on", "pending", "--expect-tool", "echo", path)
	if code != 0 || !strings.Contains(out, "note "+path+":24: tool-error") {
		t.Errorf("--fail-on pending: exit %d\n%s", code, out)
	}
	if out, _, code := runCLI(t, "check", "--expect-tool", "nowhere", "--forbid-tool", "echo", "--fail-on", "expect-tool,forbid-tool", path); code != 1 ||
		!strings.Contains(out, "expect-tool: the tool nowhere was never called") || !strings.Contains(out, "forbid-tool: the tool echo was called") {
		t.Errorf("expect/forbid: exit %d\n%s", code, out)
	}
	if _, errOut, code := runCLI(t, "check", "--fail-on", "bogus", path); code != 1 || !strings.Contains(errOut, `--fail-on "bogus": expected rules among error`) {
		t.Errorf("an unknown rule: exit %d %q", code, errOut)
	}
}

// The go-sdk client opens with a server/discover probe, which a 2025-era
// server rejects (-32601 over stdio, HTTP 400 and -32000 over HTTP):
// version negotiation, which check does not count, while the tapes' real
// failures still fail; stats counts it apart from the errors.
func TestCheckNegotiation(t *testing.T) {
	demo := filepath.Join(mcptest.RepoRoot(t), "assets", "demo.tape.jsonl")
	for _, tt := range []struct {
		path    string
		summary string
	}{
		{fixture(t, "sdk-everything-discover.tape.jsonl"), "1 tape checked, 2 findings: fail (2 failing)"},
		{fixture(t, "sdk-everything-http.tape.jsonl"), "1 tape checked, 2 findings: fail (2 failing)"},
		{fixture(t, "sdk-multi-server.tape.jsonl"), "1 tape checked, 4 findings: fail (4 failing)"},
		{demo, "1 tape checked, 4 findings: fail (4 failing)"},
	} {
		out, _, code := runCLI(t, "check", tt.path)
		if code != 1 || !strings.Contains(out, tt.summary) || strings.Contains(out, "server/discover") || strings.Contains(out, "orphan") {
			t.Errorf("check %s: exit %d, want 1, %q and no word of the server/discover probe:\n%s", tt.path, code, tt.summary, out)
		}
		out, _, code = runCLI(t, "check", "--fail-on", "error", "--format", "github", tt.path)
		if code != 1 || strings.Contains(out, "server/discover") {
			t.Errorf("check --fail-on error %s: exit %d\n%s", tt.path, code, out)
		}
	}
	out, _, code := runCLI(t, "stats", "--json", "--server", "everything", demo)
	var st tape.Stats
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("stats --json of the demo: exit %d, %v\n%s", code, err, out)
	}
	for _, m := range st.Servers[0].Methods {
		if m.Method == "server/discover" && (m.Errors != 0 || m.Negotiations != 1) {
			t.Errorf("stats of the demo's server/discover: %d errors, %d negotiations; want 0, 1", m.Errors, m.Negotiations)
		}
	}
	if tot := st.Servers[0].Total; tot.Errors != 1 || tot.ToolErrors != 1 || tot.Negotiations != 1 {
		t.Errorf("stats of the demo's everything: %d errors, %d tool errors, %d negotiations; want 1, 1, 1", tot.Errors, tot.ToolErrors, tot.Negotiations)
	}
}

// baseline save and check --baseline on sessions recorded through
// tapedeck record from the go-sdk server before and after a change to a
// tool's description (sdkserver variants A and C): drift, field by field.
func TestCheckBaselineDrift(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	record := func(variant string) string {
		path := filepath.Join(dir, variant+".jsonl")
		if out, err := exec.Command(client, "--steps=init,tools,answer", "--", bin, "record", "-o", path, "--", "env", "SDKSERVER_VARIANT="+variant, server).CombinedOutput(); err != nil {
			t.Fatalf("recording %s: %v\n%s", variant, err, out)
		}
		return path
	}
	before, after := record("A"), record("C")
	base := filepath.Join(dir, "tools.baseline.json")
	if _, errOut, code := runCLI(t, "baseline", "save", before, "-o", base); code != 0 {
		t.Fatalf("baseline save: exit %d: %s", code, errOut)
	}
	if out, _, code := runCLI(t, "check", "--baseline", base, before); code != 0 || !strings.Contains(out, "0 findings: pass") {
		t.Errorf("the baseline's own tape: exit %d\n%s", code, out)
	}
	out, _, code := runCLI(t, "check", "--baseline", base, after)
	want := `drift: tool answer changed (server sdkserver): /description: expected "Returns the answer (changes with --variant)", got "Returns the answer, revised (variant C)"; /inputSchema/properties: unexpected {"detail":{"description":"explain the answer","type":"boolean"}}`
	if code != 1 || !strings.Contains(out, want) {
		t.Errorf("after the change: exit %d\n%s\nwant %s", code, out, want)
	}
	// The same in SARIF 2.1.0, checked against its schema; JUnit; GitHub.
	sarif, _, _ := runCLI(t, "check", "--baseline", base, "--format", "sarif", after)
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	schema, err := c.Compile(filepath.Join(mcptest.RepoRoot(t), "testdata", "sarif-schema", "sarif-schema-2.1.0.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(sarif))
	if err != nil {
		t.Fatalf("SARIF is not JSON: %v", err)
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("the SARIF 2.1.0 schema refuses the report: %v\n%s", err, sarif)
	}
	if err := schema.Validate(map[string]any{"version": "2.1.0", "runs": []any{map[string]any{"results": []any{}}}}); err == nil {
		t.Error("the SARIF schema accepts a run without its tool: it checks nothing")
	}
	if !strings.Contains(sarif, `"ruleId": "drift"`) || !strings.Contains(sarif, `"level": "error"`) {
		t.Errorf("SARIF lacks the drift result:\n%s", sarif)
	}
	junit, _, _ := runCLI(t, "check", "--baseline", base, "--format", "junit", after)
	var suites struct {
		Suites []struct {
			Failures int `xml:"failures,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(junit), &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Failures != 1 {
		t.Errorf("JUnit: %v\n%s", err, junit)
	}
	gh, _, _ := runCLI(t, "check", "--baseline", base, "--format", "github", after)
	if !strings.HasPrefix(gh, "::error file="+after) || !strings.Contains(gh, "title=tapedeck drift::tool answer changed") {
		t.Errorf("GitHub annotations:\n%s", gh)
	}
}

// verify --baseline: the live server's definitions against a baseline.
func TestVerifyBaseline(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	golden := fixture(t, "sdk-sdkserver.tape.jsonl")
	base := filepath.Join(t.TempDir(), "b.json")
	if _, errOut, code := runCLI(t, "baseline", "save", golden, "-o", base); code != 0 {
		t.Fatalf("baseline save: %s", errOut)
	}
	if out, _, code := runCLI(t, "verify", "--baseline", base, golden, "--", server); code != 0 || strings.Contains(out, "DRIFT") {
		t.Errorf("the same server: exit %d\n%s", code, out)
	}
	out, errOut, code := runCLI(t, "verify", "--baseline", base, golden, "--", server, "--variant", "C")
	if code != 1 || !strings.Contains(out, `DRIFT tool answer changed (server sdk): /description: expected "Returns the answer (changes with --variant)", got "Returns the answer, revised (variant C)"; /inputSchema/properties: unexpected {"detail"`) || !strings.Contains(errOut, "drifted from") {
		t.Errorf("a revised description: exit %d\n%s%s", code, out, errOut)
	}
}

// check --baseline on an HTTP recording (named after its host, 127.0.0.1)
// with a baseline of the same server recorded over stdio (named
// everything): the baseline does not apply, and check fails saying which
// servers each has, until --baseline-server maps the names.
func TestCheckBaselineServerNames(t *testing.T) {
	const httpTape = "../../testdata/import/har/everything-http.tape.jsonl" // server 127.0.0.1
	const stdioTape = "../../testdata/sdk-everything-http.tape.jsonl"       // server everything, the same tools
	base := filepath.Join(t.TempDir(), "tools.baseline.json")
	if _, errOut, code := runCLI(t, "baseline", "save", stdioTape, "-o", base); code != 0 {
		t.Fatalf("baseline save: exit %d: %s", code, errOut)
	}
	out, _, code := runCLI(t, "check", "--fail-on", "drift", "--baseline", base, httpTape)
	want := "FAIL " + httpTape + `: drift: the baseline does not apply: it has server "everything", the tape has server "127.0.0.1"; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER`
	if code != 1 || !strings.Contains(out, want+"\n") {
		t.Errorf("a baseline of another server: exit %d\n%s\nwant exit 1 and %s", code, out, want)
	}
	for _, flag := range []string{"127.0.0.1=everything", "everything"} {
		out, _, code := runCLI(t, "check", "--fail-on", "drift", "--baseline", base, "--baseline-server", flag, httpTape)
		if code != 0 || !strings.HasSuffix(out, ": pass\n") || strings.Contains(out, "drift") {
			t.Errorf("--baseline-server %s: exit %d\n%s", flag, code, out)
		}
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--baseline-server", "a=b", httpTape}, "--baseline-server: expected --baseline FILE as well"},
		{[]string{"--baseline", base, "--baseline-server", "127.0.0.1=nope", httpTape}, `--baseline-server "127.0.0.1=nope": the baseline has no server "nope"; it has "everything"`},
		{[]string{"--baseline", base, "--baseline-server", "=everything", httpTape}, `--baseline-server "=everything": expected TAPE_SERVER=BASELINE_SERVER or BASELINE_SERVER`},
	} {
		_, errOut, code := runCLI(t, append([]string{"check"}, tt.args...)...)
		if code != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("check %s: exit %d, %q; want %q", strings.Join(tt.args, " "), code, errOut, tt.want)
		}
	}
}
