package check

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tapedeck/tapedeck/tape"
)

// rec is one tape line of server s: body is the message's members without
// the closing brace, ms the milliseconds after noon.
func rec(dir string, ms int, body string) string {
	ts := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC).Add(time.Duration(ms) * time.Millisecond).Format("2006-01-02T15:04:05.000Z")
	return fmt.Sprintf(`{"jsonrpc":"2.0",%s,"_meta":{"dir":%q,"server":"s","ts":%q}}`, body, dir, ts)
}

func index(t *testing.T, lines ...string) *tape.Index {
	t.Helper()
	data := strings.Join(lines, "\n") + "\n"
	x := tape.NewIndex(strings.NewReader(data))
	if err := x.Extend(int64(len(data)), nil); err != nil {
		t.Fatal(err)
	}
	return x
}

// handshake is an initialize that negotiated version.
func handshake(version string) []string {
	return []string{
		rec("send", 0, `"id":0,"method":"initialize","params":{"protocolVersion":"`+version+`"}`),
		rec("recv", 10, `"id":0,"result":{"protocolVersion":"`+version+`","capabilities":{}}`),
	}
}

func call(id, tool string, ms int) string {
	return rec("send", ms, `"id":`+id+`,"method":"tools/call","params":{"name":"`+tool+`"}`)
}

func lines(parts ...any) []string {
	var out []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			out = append(out, p)
		case []string:
			out = append(out, p...)
		}
	}
	return out
}

// short is a finding as the table states it.
type short struct {
	Rule string
	Line int
	Msg  string
	Fail bool
}

func TestTapeFindings(t *testing.T) {
	ok := handshake("2025-06-18")
	tests := []struct {
		name  string
		lines []string
		opts  Options
		want  []short
	}{
		{
			name:  "a clean session finds nothing",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"result":{"content":[]}`)),
			opts:  Options{FailOn: DefaultFailOn},
		},
		{
			name:  "a JSON-RPC error fails",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"error":{"code":-32602,"message":"bad params"}`)),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RuleError, 4, "tools/call: error -32602 bad params", true}},
		},
		{
			name:  "a tool's isError fails with its first line of text",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"result":{"isError":true,"content":[{"type":"text","text":"boom\nstack"}]}`)),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RuleToolError, 4, "tools/call echo failed: boom", true}},
		},
		{
			name:  "a rule outside --fail-on is a note",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"error":{"code":-32000,"message":"x"}`)),
			opts:  Options{FailOn: []string{RuleToolError}},
			want:  []short{{RuleError, 4, "tools/call: error -32000 x", false}},
		},
		{
			name:  "a call over --max-duration is slow",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 1520, `"id":1,"result":{}`)),
			opts:  Options{FailOn: DefaultFailOn, MaxDuration: time.Second},
			want:  []short{{RuleSlow, 3, "tools/call echo took 1.50s, over 1s", true}},
		},
		{
			name:  "a call under --max-duration is not",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 1520, `"id":1,"result":{}`)),
			opts:  Options{FailOn: DefaultFailOn, MaxDuration: 2 * time.Second},
		},
		{
			name:  "an expected tool never called",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"result":{}`)),
			opts:  Options{FailOn: DefaultFailOn, ExpectTools: []string{"echo", "add"}},
			want:  []short{{RuleExpectTool, 0, "the tool add was never called", true}},
		},
		{
			name:  "a forbidden tool called",
			lines: lines(ok, call("1", "echo", 20), rec("recv", 30, `"id":1,"result":{}`)),
			opts:  Options{FailOn: DefaultFailOn, ForbidTools: []string{"echo", "rm"}},
			want:  []short{{RuleForbidTool, 0, "the tool echo was called", true}},
		},
		{
			name:  "a deprecated protocol is a note by default",
			lines: handshake("2024-11-05"),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RuleDeprecated, 2, "the session negotiated protocol 2024-11-05, older than 2025-06-18", false}},
		},
		{
			name:  "a deprecated protocol fails when --fail-on names it",
			lines: handshake("2025-03-26"),
			opts:  Options{FailOn: []string{RuleDeprecated}},
			want:  []short{{RuleDeprecated, 2, "the session negotiated protocol 2025-03-26, older than 2025-06-18", true}},
		},
		{
			name:  "a request never answered",
			lines: lines(ok, call("1", "echo", 20)),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RulePending, 3, "tools/call echo: no answer on the tape", false}},
		},
		{
			name:  "a line that is not JSON-RPC",
			lines: lines(ok, "not json"),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RuleInvalid, 3, "not a JSON-RPC message", true}},
		},
		{
			name:  "the server's stderr",
			lines: lines(rec("lifecycle", 0, `"method":"$transport/stderr","params":{"text":"warming up\nmore"}`), ok),
			opts:  Options{FailOn: DefaultFailOn},
			want:  []short{{RuleStderr, 1, "the server wrote: warming up", false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := mustTape(t, "t.jsonl", index(t, tt.lines...), tt.opts)
			var got []short
			for _, f := range fs {
				if f.Tape != "t.jsonl" {
					t.Errorf("finding names tape %q, want t.jsonl", f.Tape)
				}
				msg := f.Message
				if f.Rule == RuleInvalid { // the classifier's reason follows
					msg, _, _ = strings.Cut(msg, ":")
				}
				got = append(got, short{f.Rule, f.Line, msg, f.Fail})
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("findings:\n got %+v\nwant %+v", got, tt.want)
			}
			if Failed(fs) != (len(tt.want) > 0 && anyFail(tt.want)) {
				t.Errorf("Failed = %v for %+v", Failed(fs), got)
			}
		})
	}
}

func anyFail(s []short) bool {
	for _, f := range s {
		if f.Fail {
			return true
		}
	}
	return false
}

// listing is a tools/list exchange of server s answering tools (a JSON
// array), at lines n and n+1.
func listing(id string, tools string) []string {
	return []string{
		rec("send", 100, `"id":`+id+`,"method":"tools/list"`),
		rec("recv", 110, `"id":`+id+`,"result":{"tools":`+tools+`}`),
	}
}

func TestBaselineDrift(t *testing.T) {
	const echo = `{"name":"echo","description":"says it back","inputSchema":{"type":"object"}}`
	const add = `{"name":"add","description":"adds","inputSchema":{"type":"object"}}`
	base := NewBaseline(index(t, lines(handshake("2025-06-18"), listing("1", "["+echo+","+add+"]"))...))
	// Through Write and ReadBaseline, as baseline save and check do.
	var buf bytes.Buffer
	if err := base.Write(&buf); err != nil {
		t.Fatal(err)
	}
	read, err := ReadBaseline(&buf)
	if err != nil {
		t.Fatalf("ReadBaseline of what Write wrote: %v\n%s", err, buf.String())
	}
	tests := []struct {
		name  string
		lines []string
		want  []string
	}{
		{"the same definitions", lines(handshake("2025-06-18"), listing("1", "["+add+","+echo+"]")), nil},
		{"member order is not drift", lines(handshake("2025-06-18"), listing("1", `[{"inputSchema":{"type":"object"},"description":"says it back","name":"echo"},`+add+"]")), nil},
		{"no listing: nothing to compare", handshake("2025-06-18"), nil},
		{"a changed description", lines(handshake("2025-06-18"), listing("1", `[{"name":"echo","description":"echoes","inputSchema":{"type":"object"}},`+add+"]")),
			[]string{`4: tool echo changed (server s): /description: expected "says it back", got "echoes"`}},
		{"a removed and an added tool", lines(handshake("2025-06-18"), listing("1", `[`+echo+`,{"name":"mul"}]`)),
			[]string{"4: tool add removed (server s)", "4: tool mul added (server s)"}},
		{"the last listing counts", lines(handshake("2025-06-18"), listing("1", "[]"), listing("2", "["+echo+","+add+"]")), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := index(t, tt.lines...)
			var got []string
			for _, d := range read.Drift(x, nil) {
				got = append(got, fmt.Sprintf("%d: %s", d.Line, d))
			}
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("drift:\n got %q\nwant %q", got, tt.want)
			}
			// check --baseline: each drift item is a drift finding.
			fs := mustTape(t, "t.jsonl", x, Options{FailOn: DefaultFailOn, Baseline: read})
			if len(fs) != len(tt.want) {
				t.Fatalf("Tape with the baseline: %d findings %+v, want %d drift", len(fs), fs, len(tt.want))
			}
			for i, f := range fs {
				if f.Rule != RuleDrift || !f.Fail || fmt.Sprintf("%d: %s", f.Line, f.Message) != tt.want[i] {
					t.Errorf("finding %d: %+v, want a failing drift %q", i, f, tt.want[i])
				}
			}
		})
	}
	// verify --baseline: the answers of a live server.
	got := read.DriftOfAnswers("s", map[string][]byte{"tools/list": []byte(`{"jsonrpc":"2.0","id":1,"result":{"tools":[` + echo + `]}}`)})
	if len(got) != 1 || got[0].String() != "tool add removed (server s)" {
		t.Errorf("DriftOfAnswers: %v, want tool add removed", got)
	}
}

func TestReadBaselineRefusesGarbage(t *testing.T) {
	if _, err := ReadBaseline(strings.NewReader("not json")); err == nil {
		t.Error("ReadBaseline accepted a file that is not JSON")
	}
}

// findings is a report's input: one failing finding with a line, one note
// without, over two tapes (the second clean), with characters each format
// must escape.
var findings = []Finding{
	{Rule: RuleError, Tape: "a.jsonl", Line: 4, Seq: 3, Server: "s", Message: "tools/call: error -32602 bad, params: 100%\nsecond line", Fail: true},
	{Rule: RuleDeprecated, Tape: "a.jsonl", Line: 0, Seq: -1, Message: "the session negotiated protocol 2024-11-05 <old>", Fail: false},
}
var tapes = []string{"a.jsonl", "b.jsonl"}

func TestWriteText(t *testing.T) {
	tests := []struct {
		name string
		fs   []Finding
		want string
	}{
		{"findings", findings, "FAIL a.jsonl:4: error: tools/call: error -32602 bad, params: 100%\nsecond line\n" +
			"note a.jsonl: deprecated-protocol: the session negotiated protocol 2024-11-05 <old>\n" +
			"2 tapes checked, 2 findings: fail (1 failing)\n"},
		{"notes only pass", findings[1:], "note a.jsonl: deprecated-protocol: the session negotiated protocol 2024-11-05 <old>\n" +
			"2 tapes checked, 1 finding: pass\n"},
		{"nothing", nil, "2 tapes checked, 0 findings: pass\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteText(&b, tt.fs, tapes); err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("got:\n%s\nwant:\n%s", b.String(), tt.want)
			}
		})
	}
}

func TestWriteGitHub(t *testing.T) {
	var b bytes.Buffer
	fs := append([]Finding{{Rule: RuleStderr, Tape: "dir:x,y.jsonl", Line: 2, Message: "m"}}, findings...)
	if err := WriteGitHub(&b, fs); err != nil {
		t.Fatal(err)
	}
	want := "::notice file=dir%3Ax%2Cy.jsonl,line=2,title=tapedeck stderr::m\n" +
		"::error file=a.jsonl,line=4,title=tapedeck error::tools/call: error -32602 bad, params: 100%25%0Asecond line\n" +
		"::notice file=a.jsonl,title=tapedeck deprecated-protocol::the session negotiated protocol 2024-11-05 <old>\n"
	if b.String() != want {
		t.Errorf("got:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestWriteJUnit(t *testing.T) {
	var b bytes.Buffer
	fs := append(findings, Finding{Rule: RuleError, Tape: "a.jsonl", Line: 9, Message: "again", Fail: true})
	if err := WriteJUnit(&b, fs, tapes); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Suites []struct {
			Name     string `xml:"name,attr"`
			Tests    int    `xml:"tests,attr"`
			Failures int    `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
					Text    string `xml:",chardata"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if len(doc.Suites) != 2 {
		t.Fatalf("%d suites, want one a tape (2)\n%s", len(doc.Suites), b.String())
	}
	a, clean := doc.Suites[0], doc.Suites[1]
	// a.jsonl: one failing case for the error rule with both findings; the
	// deprecated-protocol note is no failure.
	if a.Name != "a.jsonl" || a.Tests != 1 || a.Failures != 1 || len(a.Cases) != 1 || a.Cases[0].Name != RuleError || a.Cases[0].Failure == nil {
		t.Fatalf("suite a.jsonl: %+v\n%s", a, b.String())
	}
	if f := a.Cases[0].Failure; f.Message != "2 error findings" || f.Text != "line 4: tools/call: error -32602 bad, params: 100%\nsecond line\nline 9: again" {
		t.Errorf("failure: message %q, text %q", f.Message, f.Text)
	}
	if clean.Name != "b.jsonl" || clean.Tests != 1 || clean.Failures != 0 || len(clean.Cases) != 1 || clean.Cases[0].Name != "check" || clean.Cases[0].Failure != nil {
		t.Errorf("suite b.jsonl, a clean tape: %+v, want one passing case", clean)
	}
}

func TestWriteSARIF(t *testing.T) {
	var b bytes.Buffer
	if err := WriteSARIF(&b, findings, "v1.2.3"); err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	schema, err := c.Compile("../../testdata/sarif-schema/sarif-schema-2.1.0.json")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b.Bytes()))
	if err != nil {
		t.Fatalf("not JSON: %v\n%s", err, b.String())
	}
	if err := schema.Validate(doc); err != nil {
		t.Errorf("the SARIF 2.1.0 schema refuses the log: %v", err)
	}
	var log struct {
		Version string
		Runs    []struct {
			Tool struct {
				Driver struct {
					Name, Version string
					Rules         []struct{ ID string }
				}
			}
			Results []struct {
				RuleID, Level string
				Message       struct{ Text string }
				Locations     []struct {
					PhysicalLocation struct {
						ArtifactLocation struct{ URI string }
						Region           *struct{ StartLine int }
					}
				}
			}
		}
	}
	if err := json.Unmarshal(b.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	if log.Version != "2.1.0" || len(log.Runs) != 1 {
		t.Fatalf("version %q, %d runs; want 2.1.0, 1", log.Version, len(log.Runs))
	}
	r := log.Runs[0]
	if r.Tool.Driver.Name != "tapedeck" || r.Tool.Driver.Version != "v1.2.3" || len(r.Tool.Driver.Rules) != len(Rules)+len(SpecRules)-1 { // auth-challenge in both
		t.Errorf("driver %+v, want tapedeck v1.2.3 with %d rules", r.Tool.Driver, len(Rules)+len(SpecRules)-1)
	}
	if len(r.Results) != 2 {
		t.Fatalf("%d results, want 2", len(r.Results))
	}
	e, n := r.Results[0], r.Results[1]
	if e.RuleID != RuleError || e.Level != "error" || e.Message.Text != findings[0].Message ||
		e.Locations[0].PhysicalLocation.ArtifactLocation.URI != "a.jsonl" || e.Locations[0].PhysicalLocation.Region == nil || e.Locations[0].PhysicalLocation.Region.StartLine != 4 {
		t.Errorf("the failing finding: %+v", e)
	}
	if n.RuleID != RuleDeprecated || n.Level != "note" || n.Locations[0].PhysicalLocation.Region != nil {
		t.Errorf("the note without a line: %+v, want level note and no region", n)
	}
	// No findings: results is an empty array, not null.
	b.Reset()
	if err := WriteSARIF(&b, nil, ""); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `"results": []`) {
		t.Errorf("no findings: results is not []:\n%s", b.String())
	}
}

// EncodeJUnit is the one JUnit writer (check's and verify's reports): a
// skipped case, times and failures survive a round trip.
func TestEncodeJUnit(t *testing.T) {
	var b bytes.Buffer
	suites := []JUnitSuite{{Name: "tapedeck verify t.jsonl (s)", Tests: 3, Failures: 1, Skipped: 1, Time: 1.5, Cases: []JUnitCase{
		{Name: "line 3 ping", Classname: "s", Time: 0.5},
		{Name: "line 5 tools/call echo", Classname: "s", Time: 1, Failure: &JUnitFailure{Message: "1 differences", Text: "a & <b>"}},
		{Name: "line 7 tools/call slow", Classname: "s", Skipped: &JUnitSkipped{Message: "no answer on the tape"}},
	}}}
	if err := EncodeJUnit(&b, suites); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), xml.Header+"<testsuites>") || !strings.HasSuffix(b.String(), "</testsuites>\n") {
		t.Errorf("expected an XML header and a <testsuites> root ending in a newline:\n%s", b.String())
	}
	var doc struct {
		Suites []JUnitSuite `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("not XML: %v\n%s", err, b.String())
	}
	if len(doc.Suites) != 1 {
		t.Fatalf("%d suites, expected 1\n%s", len(doc.Suites), b.String())
	}
	got := doc.Suites[0]
	if got.Tests != 3 || got.Failures != 1 || got.Skipped != 1 || got.Time != 1.5 || len(got.Cases) != 3 {
		t.Fatalf("suite read back as %+v", got)
	}
	if f := got.Cases[1].Failure; f == nil || f.Text != "a & <b>" || got.Cases[2].Skipped == nil || got.Cases[2].Skipped.Message != "no answer on the tape" || got.Cases[0].Time != 0.5 {
		t.Errorf("cases read back as %+v", got.Cases)
	}
}

// mustTape is Tape of a tape that reads whole: its findings.
func mustTape(tb testing.TB, name string, x *tape.Index, o Options) []Finding {
	tb.Helper()
	fs, err := Tape(name, x, o)
	if err != nil {
		tb.Fatalf("check %s: %v", name, err)
	}
	return fs
}
