package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// runCLI runs the command line in-process and returns stdout, stderr and
// the exit code main would use.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), args, strings.NewReader(""), &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const session = `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"everything","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":0,"method":"initialize","params":{},"_meta":{"dir":"send","server":"everything","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":0,"result":{},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T12:00:00.010Z"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"everything","ts":"2026-05-16T12:00:00.020Z"}}
{"jsonrpc":"2.0","method":"notifications/message","params":{},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T12:00:00.030Z"}}
{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T12:00:00.120Z"}}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"other","ts":"2026-05-16T12:00:00.200Z"}}
`

func TestStatsText(t *testing.T) {
	out, errOut, code := runCLI(t, "stats", writeFile(t, "s.jsonl", session))
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	for _, want := range []string{"7 messages (1 lifecycle, 0 invalid), 0 warnings", "server everything", "server other", "tools/call", "100.0ms", "notifications/message"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestStatsJSON(t *testing.T) {
	out, _, code := runCLI(t, "stats", "--json", "--server", "everything", writeFile(t, "s.jsonl", session))
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	var st tape.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(st.Servers) != 1 || st.Servers[0].Server != "everything" {
		t.Fatalf("servers: %+v", st.Servers)
	}
	tot := st.Servers[0].Total
	if tot.Requests != 2 || tot.Errors != 1 || tot.Notifications != 1 || tot.Latency.Max.Milliseconds() != 100 {
		t.Errorf("totals: %+v", tot)
	}
	_, errOut, code := runCLI(t, "stats", "--server", "nope", writeFile(t, "s.jsonl", session))
	if code != 1 || !strings.Contains(errOut, `stats --server "nope": not on the tape; it holds "everything", "other"`) {
		t.Errorf("unknown server: exit %d, %q", code, errOut)
	}
}

// TestStatsHostile runs stats on every kind of bad input the issue lists:
// each gets a one-line error (exit 1) or warnings naming lines (exit 0),
// and never a panic or a stack trace.
func TestStatsHostile(t *testing.T) {
	deep := `{"jsonrpc":"2.0","id":1,"method":"m","params":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + "}\n"
	tests := []struct {
		name, content string
		code          int
		stderr        []string // fragments; each must appear
	}{
		{"empty", "", 0, nil},
		{"only lifecycle", `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s"}}` + "\n", 0, nil},
		{"not json", "hello\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\n", 0, []string{"warning: line 1: malformed tape line: expected a JSON-RPC object or batch"}},
		{"no jsonrpc", `{"id":1,"method":"m"}` + "\n", 0, []string{`warning: line 1: malformed tape line: expected "jsonrpc":"2.0"`}},
		{"ids of every type", `{"jsonrpc":"2.0","id":0,"method":"m"}
{"jsonrpc":"2.0","id":-1,"method":"m"}
{"jsonrpc":"2.0","id":"s","method":"m"}
{"jsonrpc":"2.0","id":18446744073709551617,"method":"m"}
{"jsonrpc":"2.0","id":1.5,"method":"m"}
{"jsonrpc":"2.0","id":18446744073709551617,"result":{}}
`, 0, nil},
		{"duplicate ids", `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n", 0, []string{"line 2: request id 1 reused while the request at line 1 is unanswered"}},
		{"response first", `{"jsonrpc":"2.0","id":1,"result":{}}` + "\n" + `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n", 0, []string{"line 2: request id 1 recorded after its response (line 1)"}},
		{"invalid utf-8", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":\"\xff\"}\n", 0, []string{"line 1: malformed tape line: invalid UTF-8"}},
		{"deep nesting", deep, 0, nil},
		{"torn last line", `{"jsonrpc":"2.0","id":1,"method":"m"}` + "\n" + `{"jsonrpc":"2.0","id":1,"res`, 0, []string{"line 2: torn last line"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, "stats", writeFile(t, "t.jsonl", tt.content))
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errOut)
			}
			for _, f := range tt.stderr {
				if !strings.Contains(errOut, f) {
					t.Errorf("stderr lacks %q:\n%s", f, errOut)
				}
			}
			if strings.Contains(errOut, "goroutine") || strings.Contains(errOut, "panic") {
				t.Errorf("stack trace:\n%s", errOut)
			}
		})
	}
	for _, tt := range []struct{ name, path, want string }{
		{"missing", filepath.Join(t.TempDir(), "nope.jsonl"), "no such file or directory"},
		{"directory", t.TempDir(), "is a directory, expected a tape file"},
	} {
		_, errOut, code := runCLI(t, "stats", tt.path)
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 1 and one line with %q", tt.name, code, errOut, tt.want)
		}
	}
	_, errOut, code := runCLI(t, "stats", "--strict", writeFile(t, "t.jsonl", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"}\nnope\n"))
	if code != 1 || !strings.Contains(errOut, "line 2: malformed tape line") {
		t.Errorf("strict: exit %d, %q", code, errOut)
	}
}

func TestVersionAndHelp(t *testing.T) {
	out, _, code := runCLI(t, "version")
	if code != 0 || !strings.HasPrefix(out, "tapedeck ") {
		t.Errorf("version: %d %q", code, out)
	}
	out, _, code = runCLI(t, "stats", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") || !strings.Contains(out, "--strict") {
		t.Errorf("stats --help: %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "completion", "--help")
	if code != 0 || !strings.Contains(out, "Examples:") {
		t.Errorf("completion --help: %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "completion", "bash")
	if code != 0 || !strings.Contains(out, "bash completion") {
		t.Errorf("completion bash: %d, %d bytes", code, len(out))
	}
	_, errOut, code := runCLI(t, "stats")
	if code != 1 || !strings.Contains(errOut, "accepts 1 arg(s), received 0") {
		t.Errorf("stats without a tape: %d %q", code, errOut)
	}
}

// TestImportRules checks the one-way import flow (ARCHITECTURE.md, rule 1):
// tape imports no other tapedeck package; record and replay import tape and
// internal/ packages but not each other; none of them imports Bubble Tea;
// tui depends on no network package, even indirectly (the debugger's
// services are debug/serve and debug/intercept), and not on the library's
// index; debug, their shared vocabulary, imports neither them nor tui;
// rules imports only tape; the go-sdk reaches only vcr and
// internal/mcpserver.
func TestImportRules(t *testing.T) {
	const mod = "github.com/tapedeck/tapedeck/"
	ui := func(dep string) bool {
		return strings.Contains(dep, "bubbletea") || strings.Contains(dep, "lipgloss") ||
			strings.Contains(dep, "charm.land/bubbles") || dep == mod+"tui"
	}
	rules := []struct {
		pkg    string
		forbid func(dep string) bool
	}{
		{"tape/...", func(dep string) bool {
			return ui(dep) || (strings.HasPrefix(dep, mod) && !strings.HasPrefix(dep, mod+"tape"))
		}},
		// record launches its server through internal/proc, not upstream.
		{"record/...", func(dep string) bool {
			return ui(dep) || strings.HasPrefix(dep, mod+"replay") || strings.HasPrefix(dep, mod+"upstream")
		}},
		// internal/proc launches processes: no tapedeck package of its own.
		{"internal/proc", func(dep string) bool { return strings.HasPrefix(dep, mod) && dep != mod+"internal/proc" }},
		// replay serves tapes; talking to live servers is upstream's, and
		// recording record's.
		{"replay/...", func(dep string) bool {
			return ui(dep) || strings.HasPrefix(dep, mod+"record") || strings.HasPrefix(dep, mod+"upstream")
		}},
		// rules serves record and replay alike: it may import tape only.
		{"rules", func(dep string) bool {
			return ui(dep) || (strings.HasPrefix(dep, mod) && dep != mod+"rules" && !strings.HasPrefix(dep, mod+"tape"))
		}},
		{"internal/sse", func(dep string) bool { return strings.HasPrefix(dep, mod) && dep != mod+"internal/sse" }},
		// tui is given rows and functions (debug.Live, SessionSearch), not
		// the library's index, and holds no network code, even through a
		// dependency: the debugger's services are debug/serve and
		// debug/intercept, reached through debug's interfaces.
		{"tui", func(dep string) bool {
			return dep == "net" || dep == "net/http" || dep == mod+"internal/library" ||
				strings.HasPrefix(dep, mod+"debug/") || strings.HasPrefix(dep, mod+"replay") || strings.HasPrefix(dep, mod+"record")
		}},
		// debug is the vocabulary the services and the UI share: neither's.
		{"debug", func(dep string) bool {
			return ui(dep) || dep == "net" || dep == "net/http" || strings.HasPrefix(dep, mod+"debug/") || strings.HasPrefix(dep, mod+"replay") || strings.HasPrefix(dep, mod+"record")
		}},
		{"debug/serve", func(dep string) bool { return ui(dep) }},
		{"debug/intercept", func(dep string) bool { return ui(dep) }},
		// The library of tapes reads them through tape only.
		{"internal/library", func(dep string) bool {
			return ui(dep) || (strings.HasPrefix(dep, mod) && !strings.HasPrefix(dep, mod+"tape") && dep != mod+"internal/library")
		}},
		// The go-sdk in vcr and internal/mcpserver (and the test helpers):
		// the binary carries it for tapedeck mcp only, through
		// internal/mcpserver (TestImportRulesSDKOnlyInMCPServer), which
		// reads the library and serves no tape, records nothing and holds
		// no UI.
		{"internal/mcpserver", func(dep string) bool {
			return ui(dep) || strings.HasPrefix(dep, mod+"cmd") || strings.HasPrefix(dep, mod+"record") ||
				strings.HasPrefix(dep, mod+"upstream") || strings.HasPrefix(dep, mod+"debug/") || dep == mod+"vcr"
		}},
		// vcr records through record's Session, and talks to no live
		// server but through the go-sdk's transport.
		{"vcr", func(dep string) bool {
			return ui(dep) || strings.HasPrefix(dep, mod+"cmd") || strings.HasPrefix(dep, mod+"upstream")
		}},
		// upstream talks to live servers and records what they answer
		// through record; it is no UI and knows nothing of the debugger.
		{"upstream", func(dep string) bool {
			return ui(dep) || strings.HasPrefix(dep, mod+"cmd") || strings.HasPrefix(dep, mod+"replay/live")
		}},
	}
	for _, r := range rules {
		format := "{{.ImportPath}}"
		args := []string{"list", "-deps", "-f", format, "../../" + r.pkg}
		out, err := exec.Command("go", args...).CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", r.pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list %s printed nothing", r.pkg)
		}
		for _, dep := range deps {
			if r.forbid(dep) {
				t.Errorf("%s depends on %s", r.pkg, dep)
			}
		}
	}
}

// The debug command only wires: its files start no goroutine, open no
// listener and handle no JSON; debug/serve and debug/intercept do.
func TestImportRulesDebugCommandWiresOnly(t *testing.T) {
	for _, name := range []string{"debug.go", "intercept.go"} {
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			if p := strings.Trim(im.Path.Value, `"`); p == "encoding/json" || p == "net/http" {
				t.Errorf("%s imports %s", name, p)
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.GoStmt:
				t.Errorf("%s starts a goroutine (line %d)", name, bytes.Count(src[:n.Pos()], []byte("\n"))+1)
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && x.Name == "net" && strings.HasPrefix(n.Sel.Name, "Listen") {
					t.Errorf("%s opens a listener (net.%s)", name, n.Sel.Name)
				}
			}
			return true
		})
	}
}

// The binary needs no C compiler: no package outside the standard library
// has cgo files (SQLite comes as Go, modernc.org/sqlite).
func TestNoCgo(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if .CgoFiles}}{{if not .Standard}}{{.ImportPath}}{{end}}{{end}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if s := strings.TrimSpace(string(out)); s != "" {
		t.Errorf("packages that need cgo: %s", s)
	}
}

// Every flag that takes a value shows a named placeholder in --help
// (--junit FILE), never pflag's type name (--junit string).
func TestHelpPlaceholders(t *testing.T) {
	typeName := regexp.MustCompile(`--[a-z-]+ (string|stringArray|int|float|float64|uint)\b`)
	root := newRootCmd(streams{strings.NewReader(""), io.Discard, io.Discard})
	if len(root.Commands()) < 8 {
		t.Fatalf("found %d subcommands, expected record, replay, verify and the rest", len(root.Commands()))
	}
	for _, c := range root.Commands() {
		if c.Hidden || c.Name() == "help" || c.Name() == "completion" {
			continue
		}
		help, _, code := runCLI(t, c.Name(), "--help")
		if code != 0 {
			t.Errorf("tapedeck %s --help: exit %d", c.Name(), code)
			continue
		}
		for _, m := range typeName.FindAllString(help, -1) {
			t.Errorf("tapedeck %s --help shows a type instead of a placeholder: %q", c.Name(), m)
		}
	}
}

// Escape sequences in a tape reach the terminal as text: a method name that
// sets the window title, a server that clears the screen, an OSC 52
// clipboard write in an error message.
func TestTextOutputEscapesTerminalSequences(t *testing.T) {
	evil := "\x1b]0;PWNED\x07"
	tapeText := strings.Join([]string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/call\u001b]0;PWNED\u0007","params":{"name":"x\u001b[2J"},"_meta":{"dir":"send","server":"s\u001b]52;c;aGk=\u0007","ts":"2026-05-16T12:00:00.000Z"}}`,
		`{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s\u001b]52;c;aGk=\u0007","ts":"2026-05-16T12:00:00.100Z"}}`,
		"garbage " + evil,
	}, "\n") + "\n"
	path := writeFile(t, "evil.jsonl", tapeText)
	for _, args := range [][]string{{"stats", path}, {"stats", "--server", "nope", path}, {"replay", path}} {
		out, errOut, _ := runCLI(t, args...)
		var b bytes.Buffer
		exitCode(errors.New("server "+evil), &b)
		for _, s := range []string{out, errOut, b.String()} {
			if strings.ContainsAny(s, "\x1b\x07") {
				t.Errorf("%v printed a raw escape sequence: %q", args, s)
			}
		}
	}
}

// The go-sdk reaches the binary only through internal/mcpserver (tapedeck
// mcp): no other package the binary holds imports it.
func TestImportRulesSDKOnlyInMCPServer(t *testing.T) {
	const mod = "github.com/tapedeck/tapedeck/"
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "../../cmd/tapedeck").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	seen := false
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || strings.Contains(fields[0], "modelcontextprotocol/go-sdk") {
			continue
		}
		for _, im := range fields[1:] {
			if !strings.Contains(im, "modelcontextprotocol/go-sdk") {
				continue
			}
			if fields[0] != mod+"internal/mcpserver" {
				t.Errorf("%s imports %s: the go-sdk reaches the binary only through internal/mcpserver", fields[0], im)
			}
			seen = true
		}
	}
	if !seen {
		t.Error("go list found no import of the go-sdk in the binary: expected internal/mcpserver's")
	}
}
