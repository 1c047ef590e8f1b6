package mcpserver

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/tape"
)

// fixture is a library of two fixture tapes in a temporary directory and a
// go-sdk client connected to the server over it in process.
type fixture struct {
	dir     string // the library's directory
	a, b    string // two tapes in it
	session *mcp.ClientSession
	schemas map[string]*jsonschema.Schema // each tool's outputSchema, compiled
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func openLibrary(t *testing.T, dir string) *library.Library {
	t.Helper()
	l, err := library.Open(library.Options{Path: filepath.Join(t.TempDir(), "index.db"), DefaultDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, a: filepath.Join(dir, "everything.jsonl"), b: filepath.Join(dir, "sdkserver.jsonl")}
	copyFile(t, "../../testdata/sdk-everything-2025-06-18.tape.jsonl", f.a)
	copyFile(t, "../../testdata/sdk-sdkserver.tape.jsonl", f.b)
	srv := New(Options{Library: openLibrary(t, dir), Version: "test"})
	ct, st := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	if f.session, err = client.Connect(ctx, ct, nil); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.session.Close() })
	f.schemas = outputSchemas(t, f.session)
	return f
}

// outputSchemas lists the tools and compiles each one's outputSchema with
// santhosh-tekuri/jsonschema (not the go-sdk's own validator, which made
// the results).
func outputSchemas(t *testing.T, s *mcp.ClientSession) map[string]*jsonschema.Schema {
	t.Helper()
	res, err := s.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*jsonschema.Schema{}
	for _, tool := range res.Tools {
		if tool.OutputSchema == nil {
			t.Errorf("tool %s has no outputSchema", tool.Name)
			continue
		}
		if tool.Annotations == nil || !tool.Annotations.ReadOnlyHint {
			t.Errorf("tool %s is not annotated read-only", tool.Name)
		}
		b, err := json.Marshal(tool.OutputSchema)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
		if err != nil {
			t.Fatal(err)
		}
		c := jsonschema.NewCompiler()
		url := "mem://" + tool.Name + ".json"
		if err := c.AddResource(url, doc); err != nil {
			t.Fatalf("%s's outputSchema: %v", tool.Name, err)
		}
		if out[tool.Name], err = c.Compile(url); err != nil {
			t.Fatalf("%s's outputSchema does not compile: %v\n%s", tool.Name, err, b)
		}
	}
	return out
}

// call calls a tool, requires a result that is no error, validates its
// structuredContent against the tool's outputSchema, and decodes it into
// out.
func (f *fixture) call(t *testing.T, name string, args map[string]any, out any) {
	t.Helper()
	res, err := f.session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		t.Fatalf("%s(%v): tool error: %s", name, args, resultText(res))
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structuredContent", name)
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	sch := f.schemas[name]
	if sch == nil {
		t.Fatalf("%s: no tool of that name listed", name)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s: structuredContent does not validate against its outputSchema: %v\n%s", name, err, b)
	}
	if text := resultText(res); !json.Valid([]byte(text)) {
		t.Errorf("%s: text content is not the JSON of the result: %.200s", name, text)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
}

// callErr calls a tool that must fail and returns its error text.
func (f *fixture) callErr(t *testing.T, name string, args map[string]any) string {
	t.Helper()
	res, err := f.session.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return err.Error()
	}
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded, expected an error", name, args)
	}
	return resultText(res)
}

func resultText(res *mcp.CallToolResult) string {
	var sb strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			sb.WriteString(tc.Text)
		}
	}
	return sb.String()
}

// progressCall finds the tools/call request of path followed by progress
// notifications, and its answer.
func progressCall(t *testing.T, path string) (req, resp int) {
	t.Helper()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := range x.Len() {
		if e := x.Entry(i); e.Kind == tape.KindNotification && e.Method == "notifications/progress" {
			for j := i - 1; j >= 0; j-- {
				if r := x.Entry(j); r.Kind == tape.KindRequest && r.Method == "tools/call" {
					return j, x.Pair(j).Partner
				}
			}
		}
	}
	t.Fatal("no progress notification on the fixture")
	return -1, -1
}

// Every tool, called through the go-sdk client, answers with
// structuredContent valid against its outputSchema, and says what the
// tapes hold.
func TestTools(t *testing.T) {
	f := newFixture(t)
	if len(f.schemas) != 8 {
		t.Errorf("got %d tools, expected 8: %v", len(f.schemas), f.schemas)
	}

	var list ListOutput
	f.call(t, "list_tapes", nil, &list)
	if len(list.Tapes) != 2 || list.Directories[0] != f.dir {
		t.Fatalf("list_tapes: %+v, expected the 2 tapes of %s", list, f.dir)
	}
	for _, tp := range list.Tapes {
		if tp.URI != "tape://"+tp.Path || tp.Calls == 0 {
			t.Errorf("list_tapes: %+v", tp)
		}
	}

	var found SearchOutput
	f.call(t, "search_tapes", map[string]any{"query": "fast", "tool": "echo"}, &found)
	tapes := map[string]int{}
	for _, h := range found.Hits {
		if h.Target != "echo" || h.Method != "tools/call" {
			t.Errorf("search_tapes fast, tool echo: hit %+v", h)
		}
		tapes[h.Tape]++
	}
	if len(found.Hits) != 4 || tapes[f.a] != 2 || tapes[f.b] != 2 {
		t.Fatalf("search_tapes fast, tool echo: %+v; expected the request and answer of each tape", found)
	}

	req, resp := progressCall(t, f.a)
	var call CallOutput
	f.call(t, "get_call", map[string]any{"tape": f.a, "seq": resp}, &call)
	if call.Request == nil || call.Request.Seq != req || call.Response == nil || call.Response.Seq != resp {
		t.Fatalf("get_call %d: request %+v, response %+v; expected seqs %d and %d", resp, call.Request, call.Response, req, resp)
	}
	if call.Method != "tools/call" || call.Target != "trigger-long-running-operation" || call.Status != "ok" || call.LatencyMS == nil || *call.LatencyMS <= 0 {
		t.Errorf("get_call: %s %s %s latency %v", call.Method, call.Target, call.Status, call.LatencyMS)
	}
	if len(call.Notifications) != 3 || call.Notifications[0].Method != "notifications/progress" {
		t.Errorf("get_call: %d notifications %+v, expected the 3 progress notifications", len(call.Notifications), call.Notifications)
	}
	if m, ok := call.Request.Message.(map[string]any); !ok || m["method"] != "tools/call" || m["_meta"] != nil {
		t.Errorf("get_call: request message %v, expected the wire message without the tape's _meta", call.Request.Message)
	}
	if !strings.Contains(f.callErr(t, "get_call", map[string]any{"tape": f.a, "seq": req + 1}), "not a request or an answer") {
		t.Error("get_call on a notification: expected an error saying it is none")
	}

	var st StatsOutput
	f.call(t, "tape_stats", map[string]any{"tape": f.a}, &st)
	if st.Stats.Messages != 35 || !strings.Contains(st.Summary, "35 messages") || st.Stats.Servers[0].Server != "everything" {
		t.Errorf("tape_stats: %d messages, summary %q", st.Stats.Messages, st.Summary)
	}

	var ck CheckOutput
	f.call(t, "check_tape", map[string]any{"tape": f.a, "expect_tools": []string{"no-such"}}, &ck)
	rules := map[string]bool{}
	for _, fd := range ck.Findings {
		rules[fd.Rule] = true
	}
	if !ck.Failed || !rules["tool-error"] || !rules["expect-tool"] {
		t.Errorf("check_tape: failed %v, findings %+v; expected tool-error and expect-tool", ck.Failed, ck.Findings)
	}

	var df DiffOutput
	f.call(t, "diff_tapes", map[string]any{"a": f.a, "b": f.b}, &df)
	if df.Differences == 0 || len(df.Servers) == 0 || df.Text == "" {
		t.Errorf("diff_tapes of two servers' tapes: %d differences, %q", df.Differences, df.Text)
	}
	var same DiffOutput
	f.call(t, "diff_tapes", map[string]any{"a": f.a, "b": filepath.Base(f.a)}, &same)
	if same.Differences != 0 {
		t.Errorf("diff_tapes of a tape with itself: %d differences\n%s", same.Differences, same.Text)
	}

	var op OpenOutput
	f.call(t, "open_at", map[string]any{"tape": f.a, "seq": req}, &op)
	want := "tapedeck open " + f.a + ":" + itoa(req)
	if op.Command != want || len(op.Argv) != 3 || op.Argv[2] != f.a+":"+itoa(req) {
		t.Errorf("open_at: %+v, expected %q", op, want)
	}
	if msg := f.callErr(t, "open_at", map[string]any{"tape": f.a, "seq": 999}); !strings.Contains(msg, "seq 0 to 34") {
		t.Errorf("open_at beyond the tape: %q", msg)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// explain_report reads a replay's report and says what each divergence
// means, with the command that opens the tape where it happened.
func TestExplainReport(t *testing.T) {
	f := newFixture(t)
	req, _ := progressCall(t, f.a)
	rep := debug.Report{Tape: f.a, Server: "everything", Mode: "strict", Requests: 3, Matched: 2,
		Divergences: []debug.Divergence{{ID: 1, Server: "everything", Reason: debug.ReasonMismatch, Method: "tools/call",
			Params: json.RawMessage(`{"name":"trigger-long-running-operation","arguments":{"duration":1}}`), Expected: req, ExpectedLine: req + 1,
			ExpectedMethod: "tools/call", ExpectedParams: json.RawMessage(`{"name":"trigger-long-running-operation","arguments":{"duration":0.3}}`),
			Diff:    []tape.DiffOp{{Op: "replace", Path: "/params/arguments/duration", Expected: 0.3, Actual: 1}},
			Message: "tapedeck replay: request does not match the tape", Resolution: debug.SendError}},
		Unused: []debug.Unused{{Seq: req + 5, Line: req + 6, Method: "tools/call"}},
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(f.dir, "report.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var ex ExplainOutput
	f.call(t, "explain_report", map[string]any{"report": path}, &ex)
	if ex.Verdict != "diverged" || ex.Tape != f.a || len(ex.Divergences) != 1 || len(ex.Unused) != 1 {
		t.Fatalf("explain_report: %+v", ex)
	}
	d := ex.Divergences[0]
	if !strings.Contains(d.Meaning, "next one on the tape") || !strings.Contains(d.Hint, "--ignore params.arguments.duration") || d.Open != "tapedeck open "+f.a+":"+itoa(req) {
		t.Errorf("explain_report: %+v", d)
	}
	if msg := f.callErr(t, "explain_report", map[string]any{"report": f.a}); !strings.Contains(msg, "expected a tapedeck replay --report JSON file") {
		t.Errorf("explain_report of a tape: %q", msg)
	}
}

// Nothing outside the library's directories is read: an absolute path, a
// relative one that climbs out, a symbolic link in the library to a file
// outside, a file in a subdirectory; each refused, saying so, and the
// file's existence never told.
func TestOutsideRefused(t *testing.T) {
	f := newFixture(t)
	outside := filepath.Join(t.TempDir(), "secret.jsonl")
	copyFile(t, f.a, outside)
	link := filepath.Join(f.dir, "link.jsonl")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(f.dir, "sub")
	if err := os.Mkdir(sub, 0o700); err != nil {
		t.Fatal(err)
	}
	copyFile(t, f.a, filepath.Join(sub, "nested.jsonl"))
	rel, err := filepath.Rel(f.dir, outside)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{outside, rel, link, filepath.Join(sub, "nested.jsonl"), "/etc/passwd", filepath.Join(filepath.Dir(outside), "none.jsonl")} {
		for _, c := range []struct {
			tool string
			args map[string]any
		}{
			{"tape_stats", map[string]any{"tape": p}},
			{"get_call", map[string]any{"tape": p, "seq": 0}},
			{"diff_tapes", map[string]any{"a": f.a, "b": p}},
			{"explain_report", map[string]any{"report": p}},
		} {
			msg := f.callErr(t, c.tool, c.args)
			if !strings.Contains(msg, "outside the library") || !strings.Contains(msg, f.dir) {
				t.Errorf("%s(%s): %q, expected a refusal naming the library's directory", c.tool, p, msg)
			}
		}
	}
	_, err = f.session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "tape://" + outside})
	if err == nil || !strings.Contains(err.Error(), "outside the library") {
		t.Errorf("reading tape://%s: %v, expected a refusal", outside, err)
	}
}

// tape://PATH reads a tape's summary and stats.
func TestTapeResource(t *testing.T) {
	f := newFixture(t)
	tmpl, err := f.session.ListResourceTemplates(context.Background(), nil)
	if err != nil || len(tmpl.ResourceTemplates) != 1 || tmpl.ResourceTemplates[0].URITemplate != "tape://{+path}" {
		t.Fatalf("resource templates: %+v, %v", tmpl, err)
	}
	res, err := f.session.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: TapeURI(f.a)})
	if err != nil {
		t.Fatal(err)
	}
	var st StatsOutput
	if len(res.Contents) != 1 || json.Unmarshal([]byte(res.Contents[0].Text), &st) != nil || st.Stats.Messages != 35 || st.Tape != f.a {
		t.Errorf("tape://%s: %+v", f.a, res.Contents)
	}
}

// --listen serves Streamable HTTP on a loopback address only, and refuses
// a request for another host (DNS rebinding).
func TestListen(t *testing.T) {
	dir := t.TempDir()
	copyFile(t, "../../testdata/sdk-sdkserver.tape.jsonl", filepath.Join(dir, "a.jsonl"))
	srv := New(Options{Library: openLibrary(t, dir)})
	if _, err := Listen("0.0.0.0:0", srv); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
		t.Errorf("Listen on 0.0.0.0: %v, expected a refusal", err)
	}
	ln, err := Listen("127.0.0.1:0", srv)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- ln.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Second)
	defer ccancel()
	s, err := client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: ln.URL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.CallTool(cctx, &mcp.CallToolParams{Name: "list_tapes"})
	if err != nil || res.IsError || !strings.Contains(resultText(res), "a.jsonl") {
		t.Fatalf("list_tapes over HTTP: %v %v", res, err)
	}
	r, _ := http.NewRequest(http.MethodPost, ln.URL(), strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	r.Host = "attacker.example"
	hr, err := http.DefaultClient.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	hr.Body.Close()
	if hr.StatusCode != http.StatusForbidden {
		t.Errorf("a request for Host attacker.example: status %d, expected 403", hr.StatusCode)
	}
}
