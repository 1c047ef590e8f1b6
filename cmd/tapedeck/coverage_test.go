package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
	"github.com/tapedeck/tapedeck/upstream"
)

// mcpMethods are the methods and notifications of MCP 2025-06-18,
// 2025-11-25 and 2026-07-28 (with the tasks extension), and in which
// versions each is: "y" in it, "n" not (removed or replaced), "?" where
// the sources do not say. Sources: the specifications' method lists for
// 2025-06-18 and 2025-11-25; for 2026-07-28 the v2 TypeScript SDK 2.4.0
// (pinned to 2026-07-28): its 2026-era method registry
// (core-internal/src/wire/rev2026-07-28/registry.ts, bundled in
// @modelcontextprotocol/client and /server: a spec method outside it is
// answered -32601, or dropped when a notification) and the names it lets
// the tasks extension (SEP-2663) re-define on that era
// (isExtensionReusedRequestMethod: tasks/get, tasks/cancel), which
// TestCoverageVersions2026 checks this table against; and, for the methods
// of the tasks extension no registry names (tasks/update,
// notifications/tasks), /work/shared/MCP-NOTES.md and issue 21.
var mcpMethods = []struct {
	method string
	in     [3]string // 2025-06-18, 2025-11-25, 2026-07-28
}{
	{"initialize", [3]string{"y", "y", "n"}},
	{"notifications/initialized", [3]string{"y", "y", "n"}},
	{"server/discover", [3]string{"n", "n", "y"}},
	{"ping", [3]string{"y", "y", "n"}},
	{"tools/list", [3]string{"y", "y", "y"}},
	{"tools/call", [3]string{"y", "y", "y"}},
	{"prompts/list", [3]string{"y", "y", "y"}},
	{"prompts/get", [3]string{"y", "y", "y"}},
	{"resources/list", [3]string{"y", "y", "y"}},
	{"resources/templates/list", [3]string{"y", "y", "y"}},
	{"resources/read", [3]string{"y", "y", "y"}},
	{"resources/subscribe", [3]string{"y", "y", "n"}},
	{"resources/unsubscribe", [3]string{"y", "y", "n"}},
	{"subscriptions/listen", [3]string{"n", "n", "y"}},
	{"notifications/subscriptions/acknowledged", [3]string{"n", "n", "y"}},
	{"logging/setLevel", [3]string{"y", "y", "n"}},
	{"completion/complete", [3]string{"y", "y", "y"}},
	{"sampling/createMessage", [3]string{"y", "y", "n"}},
	{"roots/list", [3]string{"y", "y", "n"}},
	{"elicitation/create", [3]string{"y", "y", "n"}},
	{"tasks/get", [3]string{"n", "y", "y"}},
	{"tasks/result", [3]string{"n", "y", "n"}},
	{"tasks/list", [3]string{"n", "y", "n"}},
	{"tasks/cancel", [3]string{"n", "y", "y"}},
	{"tasks/update", [3]string{"n", "n", "y"}},
	{"notifications/cancelled", [3]string{"y", "y", "y"}},
	{"notifications/progress", [3]string{"y", "y", "y"}},
	{"notifications/message", [3]string{"y", "y", "y"}},
	{"notifications/resources/updated", [3]string{"y", "y", "y"}},
	{"notifications/resources/list_changed", [3]string{"y", "y", "y"}},
	{"notifications/tools/list_changed", [3]string{"y", "y", "y"}},
	{"notifications/prompts/list_changed", [3]string{"y", "y", "y"}},
	{"notifications/roots/list_changed", [3]string{"y", "y", "n"}},
	{"notifications/tasks/status", [3]string{"n", "y", "n"}},
	{"notifications/tasks", [3]string{"n", "n", "y"}},
	{"notifications/elicitation/complete", [3]string{"n", "y", "n"}},
}

// TestCoverageVersions2026 checks the table's 2026-07-28 column against the
// v2 TypeScript SDK installed in .peers: a method of its 2025-era or
// 2026-era registry is in 2026-07-28 when the 2026-era registry holds it or
// the SDK lets the tasks extension re-define it there, and not otherwise;
// every method of those registries is a row of the table.
func TestCoverageVersions2026(t *testing.T) {
	dist := filepath.Join(mcptest.Peers(t).V2Client, "dist")
	files, err := filepath.Glob(filepath.Join(dist, "*.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	region := func(name string) string {
		start := "//#region ../core-internal/src/wire/" + name + "\n"
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			if i := strings.Index(src, start); i >= 0 {
				src = src[i+len(start):]
				if j := strings.Index(src, "//#endregion"); j >= 0 {
					return src[:j]
				}
			}
		}
		t.Fatalf("no module %s in %s (the SDK's layout changed: find its method registry)", name, dist)
		return ""
	}
	keys := func(src, object string) []string {
		i := strings.Index(src, "const "+object+" = {\n")
		if i < 0 {
			t.Fatalf("no %s in the registry", object)
		}
		body := src[i:]
		body = body[:strings.Index(body, "};")]
		var out []string
		for _, m := range registryKey.FindAllStringSubmatch(body, -1) {
			out = append(out, m[1])
		}
		if len(out) == 0 {
			t.Fatalf("%s names no method", object)
		}
		return out
	}
	r2026 := region("rev2026-07-28/registry.ts")
	r2025 := region("rev2025-11-25/registry.ts")
	in2026 := append(keys(r2026, "requestMethodKeys"), keys(r2026, "notificationMethodKeys")...)
	spec := append(keys(r2025, "requestMethodKeys$1"), keys(r2025, "notificationMethodKeys$1")...)
	spec = append(spec, in2026...)
	codec := region("codec.ts")
	i := strings.Index(codec, "function isExtensionReusedRequestMethod(method) {")
	if i < 0 {
		t.Fatal("no isExtensionReusedRequestMethod in the SDK's codec")
	}
	fn := codec[i:]
	fn = fn[:strings.Index(fn, "}")]
	var reused []string
	for _, m := range methodEquals.FindAllStringSubmatch(fn, -1) {
		reused = append(reused, m[1])
	}
	if len(reused) == 0 {
		t.Fatal("isExtensionReusedRequestMethod names no method")
	}
	t.Logf("2026-era registry: %v; re-defined by the tasks extension: %v", in2026, reused)
	rows := map[string]string{}
	for _, m := range mcpMethods {
		rows[m.method] = m.in[2]
	}
	for _, m := range spec {
		got, ok := rows[m]
		if !ok {
			t.Errorf("the SDK's registries name %s, which the table lacks", m)
			continue
		}
		want := "n"
		if slices.Contains(in2026, m) || slices.Contains(reused, m) {
			want = "y"
		}
		if got != want {
			t.Errorf("%s: the table's 2026-07-28 column says %q, the SDK's registry %q", m, got, want)
		}
	}
}

var (
	registryKey  = regexp.MustCompile(`(?m)^\s*"?([\w/]+)"?: null,?$`)
	methodEquals = regexp.MustCompile(`method === "([^"]+)"`)
)

// unspoken are the methods no peer installed here sends, and what was
// searched to say so: the table says so in their row instead of leaving
// the cells empty. TestCoverageTable fails when a tape records one.
var unspoken = map[string]string{
	"tasks/update":        peersChecked,
	"notifications/tasks": peersChecked,
}

// peersChecked names the peers searched for a method's name (their dist
// code, .peers/node_modules/@modelcontextprotocol/{sdk,client,server,core,
// server-everything}): tasks/update appears only in the v2 packages'
// Mcp-Name header table, notifications/tasks nowhere.
const peersChecked = "no peer here sends it: checked server-everything 2026.8.31, SDK 1.32.2, @modelcontextprotocol/client/server 2.4.0"

// coverageTests names, for each tape of testdata, the tests that replay
// it whole to a client (its transcript or its answers compared with the
// live run's) and those that verify it against a live server.
// TestCoverageTable checks that each named test exists and names the tape.
var coverageTests = []struct {
	tape               string
	replayed, verified []string
}{
	{"mcporter-echo", []string{"TestReplayMcporter"}, nil},
	{"mcporter-sum", []string{"TestReplayMcporter"}, nil},
	{"mcporter-unknown-tool", nil, nil},
	{"sdk-everything-2025-06-18", []string{"TestReplaySDKClient", "TestReplayHTTPSDKClient"}, nil},
	{"sdk-everything-discover", []string{"TestReplaySDKClient", "TestReplayHTTPSDKClient"}, []string{"TestVerifyNegotiation"}},
	{"sdk-everything-http", []string{"TestReplaySDKClient", "TestReplayHTTPSDKClient"}, []string{"TestVerifyHTTPEverything"}},
	{"sdk-multi-server", nil, nil},
	{"sdk-sdkserver", []string{"TestReplaySDKClient", "TestReplayHTTPSDKClient"}, []string{"TestVerifySDKServer"}},
	{"sdk-sdkserver-http-stateless", []string{"TestReplayHTTPSDKClient"}, []string{"TestVerifyHTTP"}},
	{"ts-everything-task", []string{"TestEngineTaskPolls"}, []string{"TestVerifyTask"}},
	{"ts-everything-task-sampling", []string{"TestEngineClientTask"}, nil},
	{"ts-everything-coverage", []string{"TestReplayCoverageClient"}, []string{"TestVerifyCoverage"}},
	{"ts-v2-http", []string{"TestReplayV2HTTP"}, []string{"TestVerifyV2HTTP"}},
	{"ts-sdk-url-elicitation", []string{"TestReplayURLElicitation"}, []string{"TestVerifyURLElicitation"}},
}

// stateMethods are the methods the debugger's state pane accounts for
// beyond the summary column: the handshake, the lists and their
// list_changed (tape.Lists), and the messages tape.Tasks reads.
func stateMethods() []string {
	m := []string{"initialize", "tasks/get", "tasks/result", "tasks/cancel", "notifications/tasks/status"}
	for _, l := range tape.Lists() {
		m = append(m, l.Method, l.Changed)
	}
	return m
}

// TestCoverageTable writes docs/coverage.md: each MCP method and
// notification of the three versions with whether the tapes of testdata
// record it, tests replay and verify such a tape, and the debugger shows it
// by meaning. It fails when the file is stale; -update rewrites it.
func TestCoverageTable(t *testing.T) {
	root := mcptest.RepoRoot(t)
	sources := testSources(t, root)
	type cover struct {
		tapes              []string
		replayed, verified map[string]bool
		shown              bool
	}
	covers := map[string]*cover{}
	for _, m := range mcpMethods {
		covers[m.method] = &cover{replayed: map[string]bool{}, verified: map[string]bool{}}
	}
	state := stateMethods()
	tapes, err := filepath.Glob(filepath.Join(root, "testdata", "*.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, ct := range coverageTests {
		listed = append(listed, ct.tape)
	}
	for _, p := range tapes {
		if name := strings.TrimSuffix(filepath.Base(p), ".tape.jsonl"); !slices.Contains(listed, name) {
			t.Errorf("testdata/%s is not in coverageTests: add it (with the tests that replay or verify it)", filepath.Base(p))
		}
	}
	var unknown []string
	for _, ct := range coverageTests {
		for _, names := range [][]string{ct.replayed, ct.verified} {
			for _, name := range names {
				body, ok := sources[name]
				if !ok {
					t.Fatalf("coverageTests: %s (for %s) is no test of cmd/tapedeck or replay", name, ct.tape)
				}
				if !namesTape(sources, body, ct.tape) {
					t.Fatalf("coverageTests: %s does not name the tape %s", name, ct.tape)
				}
			}
		}
		x, err := tape.OpenIndex(filepath.Join(root, "testdata", ct.tape+".tape.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		server := "" // the server verify checks: the tape's only one
		if len(ct.verified) > 0 {
			if server, err = replay.PickServer(x, ""); err != nil {
				t.Fatalf("coverageTests: %s is verified, but verify needs --server for it: %v", ct.tape, err)
			}
		}
		for i := range x.Len() {
			e := x.Entry(i)
			if e.Kind != tape.KindRequest && e.Kind != tape.KindNotification {
				continue
			}
			c, ok := covers[e.Method]
			if !ok {
				if !slices.Contains(unknown, e.Method) && !strings.HasPrefix(e.Method, "$") {
					unknown = append(unknown, e.Method)
				}
				continue
			}
			if !slices.Contains(c.tapes, ct.tape) {
				c.tapes = append(c.tapes, ct.tape)
			}
			for _, n := range ct.replayed {
				c.replayed[n] = true
			}
			for _, n := range ct.verified {
				// By verify's own rule: a request it sends and whose
				// recorded answer it compares the live one with.
				if upstream.Compared(x, server, i) {
					c.verified[n] = true
				}
			}
			if !c.shown {
				c.shown = slices.Contains(state, e.Method) || shownByMeaning(x, i)
			}
		}
		x.Close()
	}
	for m := range unspoken {
		if c, ok := covers[m]; !ok || len(c.tapes) > 0 {
			t.Errorf("unspoken names %s, which is recorded (on %v) or no method of the table: drop it", m, c.tapes)
		}
	}
	if len(unknown) > 0 {
		t.Errorf("testdata tapes hold methods the table lacks: %v", unknown)
	}

	var b strings.Builder
	b.WriteString(`# MCP coverage

Generated by TestCoverageTable (cmd/tapedeck/coverage_test.go) from the tapes in testdata/; ` + "`go test ./cmd/tapedeck -run TestCoverageTable -update`" + ` rewrites it.

What counts:
- **versions**: ✓ in that version, – not in it, ? not stated by the sources the test names: the specifications for
  2025-06-18 and 2025-11-25; for 2026-07-28 (with the tasks extension), the v2 TypeScript SDK 2.4.0's 2026-era method
  registry (` + "`core-internal/src/wire/rev2026-07-28/registry.ts`" + `, bundled in @modelcontextprotocol/client and
  /server: a spec method outside it is answered -32601, or dropped when a notification) and the methods it lets the
  tasks extension (SEP-2663) re-define there (` + "`isExtensionReusedRequestMethod`" + `: tasks/get, tasks/cancel),
  checked against the installed SDK by TestCoverageVersions2026; for tasks/update and notifications/tasks, which no
  registry names, the project's MCP notes and issue 21.
- **recorded**: a tape in testdata/ (recorded from real peers) holds a request or notification of the method; the
  number of such tapes.
- **replayed**: a test replays such a tape whole to a client (a real one, or the engine tests' scripted one) and
  checks what it got against the recording (tests named below, checked to exist and to name the tape).
- **verified**: a test runs ` + "`tapedeck verify`" + ` with such a tape against a live server (named below, checked the same
  way), and verify compares the live answer to a recorded request of the method with the recorded one, by verify's
  own rule (` + "`upstream.Compared`" + `): a request the client sent, with a recorded answer. Not counted: requests
  verify skips (never answered on the tape, cancelled by the recorded client, refused by an authorization
  challenge), a server/discover the recorded server rejected (version negotiation passes whatever the live server
  says), the server's own requests (answered from the tape), notifications (sent, not compared).
- **shown**: ` + "`open`" + ` shows it by meaning: the summary column describes a recorded message of it otherwise than its
  params or result as JSON, or the state pane accounts for it (handshake, lists and list_changed, tasks).
- A row no tape records says, where it was checked, that no peer here sends it.

| method | 2025-06-18 | 2025-11-25 | 2026-07-28 | recorded | replayed | verified | shown |
|---|---|---|---|---|---|---|---|
`)
	mark := map[string]string{"y": "✓", "n": "–", "?": "?"}
	yes := func(ok bool) string {
		if ok {
			return "✓"
		}
		return ""
	}
	var nRec, nRep, nVer, nShown int
	for _, m := range mcpMethods {
		c := covers[m.method]
		rec := ""
		if len(c.tapes) > 0 {
			rec = fmt.Sprint(len(c.tapes))
			nRec++
		}
		if len(c.replayed) > 0 {
			nRep++
		}
		if len(c.verified) > 0 {
			nVer++
		}
		if c.shown {
			nShown++
		}
		if why, ok := unspoken[m.method]; ok {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | – | – | – |\n", m.method, mark[m.in[0]], mark[m.in[1]], mark[m.in[2]], why)
			continue
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s | %s | %s | %s |\n", m.method, mark[m.in[0]], mark[m.in[1]], mark[m.in[2]],
			rec, yes(len(c.replayed) > 0), yes(len(c.verified) > 0), yes(c.shown))
	}
	fmt.Fprintf(&b, "\n%d methods and notifications: %d recorded, %d replayed, %d verified, %d shown. (Issue 21 counts 36 in the union.)\n", len(mcpMethods), nRec, nRep, nVer, nShown)
	b.WriteString("\n## Tapes and the tests that replay or verify them\n\n| tape | replayed by | verified by |\n|---|---|---|\n")
	for _, ct := range coverageTests {
		fmt.Fprintf(&b, "| `%s` | %s | %s |\n", ct.tape, strings.Join(ct.replayed, ", "), strings.Join(ct.verified, ", "))
	}
	got := b.String()

	path := filepath.Join(root, "docs", "coverage.md")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/tapedeck -run TestCoverageTable -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("docs/coverage.md is stale (go test ./cmd/tapedeck -run TestCoverageTable -update rewrites it)\ngot:\n%s", got)
	}
}

// shownByMeaning reports whether the debugger's summary of message i says
// something other than its params (or its answer's result) as JSON.
func shownByMeaning(x *tape.Index, i int) bool {
	e := x.Entry(i)
	m, err := x.Message(i)
	if err != nil {
		return false
	}
	raw := tape.StripMeta(m.Raw)
	if tui.Summary(e, raw, e.Method) != generic(raw, "params") {
		return true
	}
	if p := x.Pair(i).Partner; p >= 0 {
		if a, err := x.Message(p); err == nil {
			ar := tape.StripMeta(a.Raw)
			return tui.Summary(x.Entry(p), ar, e.Method) != generic(ar, "result")
		}
	}
	return false
}

// generic is the summary column's fallback: a member as one line of JSON.
func generic(raw []byte, member string) string {
	m := gjson.GetBytes(raw, member)
	if !m.Exists() {
		return ""
	}
	return tape.ParamsLine([]byte(m.Raw), tui.SummaryMax)
}

// namesTape reports whether a test's body names tape, itself or in a
// function of the test sources it calls (one level: taskTape(t)).
func namesTape(sources map[string]string, body, tape string) bool {
	if strings.Contains(body, tape) {
		return true
	}
	for _, call := range callee.FindAllStringSubmatch(body, -1) {
		if h, ok := sources[call[1]]; ok && !strings.HasPrefix(call[1], "Test") && strings.Contains(h, tape) {
			return true
		}
	}
	return false
}

var (
	testFunc = regexp.MustCompile(`(?m)^func (\w+)\(`)
	callee   = regexp.MustCompile(`\b(\w+)\(`)
)

// testSources returns the bodies of the functions in the test files of
// cmd/tapedeck and replay by name.
func testSources(t *testing.T, root string) map[string]string {
	out := map[string]string{}
	for _, dir := range []string{"cmd/tapedeck", "replay"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			src := string(b)
			locs := testFunc.FindAllStringSubmatchIndex(src, -1)
			for k, l := range locs {
				end := len(src)
				if k+1 < len(locs) {
					end = locs[k+1][0]
				}
				out[src[l[2]:l[3]]] = src[l[0]:end]
			}
		}
	}
	return out
}
