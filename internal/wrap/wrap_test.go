package wrap

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tailscale/hujson"
)

const exe = "/opt/tapedeck/bin/tapedeck"

// fixtures are client configurations written from each client's documented
// format, with the stdio servers each holds.
var fixtures = []struct {
	file    string
	client  Client
	cwd     string
	servers []string // stdio servers
	urls    []string // HTTP servers
}{
	{"claude_desktop_config.json", ClaudeDesktop, "", []string{"filesystem", "github", "time", "sqlite"}, nil},
	{"claude.json", ClaudeCode, "/home/me/app", []string{"memory", "postgres", "airtable"}, []string{"sentry"}},
	{"mcp.json", ClaudeCode, "/home/me/app", []string{"shared-server", "local-tools"}, []string{"api-server"}},
	{"cursor/mcp.json", Cursor, "", []string{"server-name", "python-server"}, []string{"remote-server"}},
	{"vscode/mcp.json", VSCode, "", []string{"Perplexity", "fetch"}, []string{"github"}},
	{"windsurf/mcp_config.json", Windsurf, "", []string{"github", "puppeteer"}, []string{"figma"}},
	{"compact.json", ClaudeDesktop, "", []string{"time", "echo"}, nil},
	{"crlf.json", ClaudeDesktop, "", []string{"weather"}, nil},
}

// copyFixture copies a fixture into a fresh directory and returns its path
// and its bytes.
func copyFixture(t *testing.T, name string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.WriteFile(path, data, 0o640); err != nil {
		t.Fatal(err)
	}
	return path, data
}

// decode reads a JSONC document as plain Go values.
func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	std, err := hujson.Standardize(bytes.Clone(data))
	if err != nil {
		t.Fatalf("the file does not parse: %v\n%s", err, data)
	}
	var v map[string]any
	if err := json.Unmarshal(std, &v); err != nil {
		t.Fatalf("the file does not decode: %v\n%s", err, data)
	}
	return v
}

func entryOf(t *testing.T, doc map[string]any, where []string, name string) map[string]any {
	t.Helper()
	var v any = doc
	for _, k := range append(slices.Clone(where), name) {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("no %v/%s in the document", where, name)
		}
		v = m[k]
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("%v/%s: not an object: %v", where, name, v)
	}
	return m
}

// dirNames lists a directory, to see that nothing was left behind.
func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// Every stdio server of every fixture: wrap makes the entry run tapedeck
// record with the original command after "--", keeps the rest of the entry
// and the rest of the file, and unwrap gives the original bytes back.
func TestWrapUnwrapRoundTrip(t *testing.T) {
	for _, f := range fixtures {
		for _, name := range f.servers {
			t.Run(f.file+"/"+name, func(t *testing.T) {
				path, orig := copyFixture(t, f.file)
				res, err := WrapFile(path, f.client, f.cwd, name, exe)
				if err != nil {
					t.Fatal(err)
				}
				wrapped, _ := os.ReadFile(path)
				if bytes.Equal(wrapped, orig) {
					t.Fatal("the file did not change")
				}
				before, after := decode(t, orig), decode(t, wrapped)
				old, neu := entryOf(t, before, res.Where, name), entryOf(t, after, res.Where, name)
				if neu["command"] != exe {
					t.Errorf("command: %v, want %s", neu["command"], exe)
				}
				want := []any{"record", "--server", name, "--", old["command"]}
				if a, ok := old["args"].([]any); ok {
					want = append(want, a...)
				}
				if !reflect.DeepEqual(neu["args"], want) {
					t.Errorf("args: %v\nwant %v", neu["args"], want)
				}
				var wantCmd []string
				wantCmd = append(wantCmd, exe)
				for _, a := range want {
					wantCmd = append(wantCmd, a.(string))
				}
				if !slices.Equal(res.Command, wantCmd) {
					t.Errorf("Result.Command %q, want %q", res.Command, wantCmd)
				}
				for k, v := range old {
					if k != "command" && k != "args" && !reflect.DeepEqual(neu[k], v) {
						t.Errorf("member %s: %v, was %v", k, neu[k], v)
					}
				}
				if len(neu) != len(old) && !(len(neu) == len(old)+1 && old["args"] == nil) {
					t.Errorf("members: %v, were %v", neu, old)
				}
				// Only that entry changed: the documents without it are equal.
				delete(entryOf(t, before, res.Where[:len(res.Where)-1], res.Where[len(res.Where)-1]), name)
				delete(entryOf(t, after, res.Where[:len(res.Where)-1], res.Where[len(res.Where)-1]), name)
				if !reflect.DeepEqual(before, after) {
					t.Errorf("more than the entry changed")
				}
				// Each comment is still there.
				for _, line := range strings.Split(string(orig), "\n") {
					if i := strings.Index(line, "//"); i >= 0 && !strings.Contains(line, "://") {
						if !bytes.Contains(wrapped, []byte(strings.TrimSpace(line[i:]))) {
							t.Errorf("the comment %q was lost", line[i:])
						}
					}
				}
				fi, _ := os.Stat(path)
				if fi.Mode().Perm() != 0o640 {
					t.Errorf("mode %v, want the file's own 0640", fi.Mode().Perm())
				}
				if fi, err := os.Stat(SidecarPath(path)); err != nil || fi.Mode().Perm() != 0o600 {
					t.Errorf("sidecar: %v %v", fi, err)
				}

				if _, err := UnwrapFile(path, f.client, f.cwd, name, false); err != nil {
					t.Fatal(err)
				}
				back, _ := os.ReadFile(path)
				if !bytes.Equal(back, orig) {
					t.Errorf("unwrapped file differs from the original:\n%s\nwant:\n%s\nwrapped was:\n%s", back, orig, wrapped)
				}
				if names := dirNames(t, filepath.Dir(path)); !slices.Equal(names, []string{filepath.Base(path)}) {
					t.Errorf("left in the directory: %v", names)
				}
			})
		}
	}
}

// Several servers of one file wrapped, then unwrapped in another order:
// the file is the original again; the sidecar lives until the last.
func TestWrapSeveral(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.file, func(t *testing.T) {
			path, orig := copyFixture(t, f.file)
			for _, name := range f.servers {
				if _, err := WrapFile(path, f.client, f.cwd, name, exe); err != nil {
					t.Fatal(err)
				}
			}
			wrapped, _ := os.ReadFile(path)
			for _, name := range f.servers {
				if !bytes.Contains(wrapped, []byte(`"--server", "`+name+`"`)) && !bytes.Contains(wrapped, []byte(`"--server","`+name+`"`)) && !bytes.Contains(wrapped, []byte(name)) {
					t.Errorf("%s not wrapped", name)
				}
			}
			for i, name := range slices.Backward(f.servers) {
				if _, err := UnwrapFile(path, f.client, f.cwd, name, false); err != nil {
					t.Fatal(err)
				}
				_, err := os.Stat(SidecarPath(path))
				if (i == 0) != errors.Is(err, os.ErrNotExist) {
					t.Errorf("after unwrapping %s: sidecar %v", name, err)
				}
			}
			if back, _ := os.ReadFile(path); !bytes.Equal(back, orig) {
				t.Errorf("after unwrapping all:\n%s\nwant:\n%s", back, orig)
			}
		})
	}
}

// The wrapped entry keeps the file's layout: an args array one element a
// line stays so, a one-line array stays on one line, a missing args is
// added after command, comments stay where they were.
func TestWrapLayout(t *testing.T) {
	cases := []struct{ in, name, want string }{
		{`{"mcpServers": {"a": {"command": "x", "args": ["1", "2"]}}}`, "a",
			`{"mcpServers": {"a": {"command": "` + exe + `", "args": ["record", "--server", "a", "--", "x", "1", "2"]}}}`},
		{`{"mcpServers":{"a":{"command":"x"}}}`, "a",
			`{"mcpServers":{"a":{"command":"` + exe + `","args":["record","--server","a","--","x"]}}}`},
		{"{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\",\n      \"args\": [\n        \"1\"\n      ]\n    }\n  }\n}\n", "a",
			"{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"" + exe + "\",\n      \"args\": [\n        \"record\",\n        \"--server\",\n        \"a\",\n        \"--\",\n        \"x\",\n        \"1\"\n      ]\n    }\n  }\n}\n"},
		{"{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"x\", // run x\n    },\n  },\n}\n", "a",
			"{\n  \"mcpServers\": {\n    \"a\": {\n      \"command\": \"" + exe + "\",\n      \"args\": [\"record\", \"--server\", \"a\", \"--\", \"x\"], // run x\n    },\n  },\n}\n"},
		{"{\"servers\": {\"a\": {\"command\": \"x\", \"args\": [ /* first */ \"1\",]}}}", "a",
			"{\"servers\": {\"a\": {\"command\": \"" + exe + "\", \"args\": [ \"record\", \"--server\", \"a\", \"--\", \"x\", /* first */ \"1\",]}}}"},
		{`{"mcpServers": {"a": {"command": "x", "args": []}}}`, "a",
			`{"mcpServers": {"a": {"command": "` + exe + `", "args": ["record", "--server", "a", "--", "x"]}}}`},
		// An escaped command is carried over as it was written.
		{`{"mcpServers": {"a b": {"command": "C:\\bin\\x \u00e9.exe"}}}`, "a b",
			`{"mcpServers": {"a b": {"command": "` + exe + `", "args": ["record", "--server", "a b", "--", "C:\\bin\\x \u00e9.exe"]}}}`},
	}
	for _, c := range cases {
		cfg, err := Parse("c.json", "", "", []byte(c.in))
		if err != nil {
			t.Fatal(err)
		}
		e, err := cfg.Wrap(c.name, exe)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if string(e.Data) != c.want {
			t.Errorf("wrap of\n%s\ngot\n%s\nwant\n%s", c.in, e.Data, c.want)
		}
		back, err := mustParse(t, e.Data).Unwrap(Backup{Server: c.name, Where: e.Where, Original: string(e.Original), Wrapped: string(e.Wrapped)}, false)
		if err != nil || string(back) != c.in {
			t.Errorf("unwrap: %v\n%s\nwant\n%s", err, back, c.in)
		}
	}
}

func mustParse(t *testing.T, data []byte) *Config {
	t.Helper()
	cfg, err := Parse("c.json", "", "", data)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// JSONC as VS Code writes it: comments, trailing commas, a byte order mark.
func TestJSONC(t *testing.T) {
	in := "\xef\xbb\xbf{\n\t// my servers\n\t\"servers\": {\n\t\t/* the one */ \"x\": {\"type\": \"stdio\", \"command\": \"run\", \"args\": [\"a\",],}, // done\n\t},\n\t\"inputs\": [],\n}\n"
	dir := t.TempDir()
	path := filepath.Join(dir, "mcp.json")
	os.WriteFile(path, []byte(in), 0o600)
	if _, err := WrapFile(path, VSCode, "", "x", exe); err != nil {
		t.Fatal(err)
	}
	got, _ := os.ReadFile(path)
	for _, keep := range []string{"\xef\xbb\xbf{", "// my servers", "/* the one */", "// done", `"a",]`, "\"inputs\": [],\n}"} {
		if !bytes.Contains(got, []byte(keep)) {
			t.Errorf("lost %q:\n%s", keep, got)
		}
	}
	if !bytes.Contains(got, []byte(`"args": ["record", "--server", "x", "--", "run", "a",]`)) {
		t.Errorf("wrapped:\n%s", got)
	}
	if _, err := UnwrapFile(path, VSCode, "", "x", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != in {
		t.Errorf("unwrapped:\n%q\nwant\n%q", got, in)
	}
}

// A configuration that cannot be read as one is refused, saying which file,
// what was expected and what was found, and nothing is written.
func TestUnparseableRefused(t *testing.T) {
	cases := []struct{ name, data, found string }{
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\"\n  }\n", "syntax error at line"},
		{"array", `[{"mcpServers": {}}]`, "found an array"},
		{"empty", "", "found an empty file"},
		{"utf8", "{\"mcpServers\": {\"a\": {\"command\": \"\xff\"}}}", "found invalid UTF-8"},
		{"entry", `{"mcpServers": {"a": "npx server"}}`, "found a string"},
		{"command", `{"mcpServers": {"a": {"command": ["npx"]}}}`, "found an array"},
		{"args", `{"mcpServers": {"a": {"command": "npx", "args": "-y x"}}}`, "found a string"},
		{"nothing", `{"mcpServers": {"a": {"env": {}}}}`, `found members "env"`},
		{"no servers", `{"mcp": 1, "other": {}}`, "found no such object (top-level members: mcp, other)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "claude_desktop_config.json")
			os.WriteFile(path, []byte(c.data), 0o600)
			fi0, _ := os.Stat(path)
			_, err := WrapFile(path, ClaudeDesktop, "", "a", exe)
			if err == nil {
				t.Fatal("wrapped")
			}
			msg := err.Error()
			for _, want := range []string{path, "expected", c.found} {
				if !strings.Contains(msg, want) {
					t.Errorf("message lacks %q: %s", want, msg)
				}
			}
			_, err = UnwrapFile(path, ClaudeDesktop, "", "a", false)
			if err == nil || !strings.Contains(err.Error(), path) {
				t.Errorf("unwrap: %v", err)
			}
			got, _ := os.ReadFile(path)
			fi1, _ := os.Stat(path)
			if string(got) != c.data || !fi1.ModTime().Equal(fi0.ModTime()) {
				t.Error("the file was touched")
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Errorf("left in the directory: %v", names)
			}
		})
	}
}

// A configuration reached through a symbolic link stays a link: its target
// is rewritten, and so is it on unwrap.
func TestSymlinkStaysSymlink(t *testing.T) {
	real, orig := copyFixture(t, "claude_desktop_config.json")
	linkDir := t.TempDir()
	link := filepath.Join(linkDir, "claude_desktop_config.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	check := func(stage string) {
		fi, err := os.Lstat(link)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			t.Fatalf("%s: %s is no longer a symbolic link: %v %v", stage, link, fi, err)
		}
		if dst, _ := os.Readlink(link); dst != real {
			t.Errorf("%s: the link points to %s", stage, dst)
		}
	}
	if _, err := WrapFile(link, ClaudeDesktop, "", "time", exe); err != nil {
		t.Fatal(err)
	}
	check("wrap")
	if got, _ := os.ReadFile(real); !bytes.Contains(got, []byte(exe)) {
		t.Errorf("the link's target was not wrapped:\n%s", got)
	}
	if _, err := UnwrapFile(link, ClaudeDesktop, "", "time", false); err != nil {
		t.Fatal(err)
	}
	check("unwrap")
	if got, _ := os.ReadFile(real); !bytes.Equal(got, orig) {
		t.Errorf("target after unwrap:\n%s", got)
	}
	if names := dirNames(t, filepath.Dir(real)); len(names) != 1 {
		t.Errorf("left next to the target: %v", names)
	}
	if names := dirNames(t, linkDir); len(names) != 1 {
		t.Errorf("left next to the link: %v", names)
	}
}

// A server that is not there: the message lists those that are.
func TestMissingServerListsNames(t *testing.T) {
	path, orig := copyFixture(t, "claude_desktop_config.json")
	for _, op := range []func() error{
		func() error { _, err := WrapFile(path, ClaudeDesktop, "", "fs", exe); return err },
		func() error { _, err := UnwrapFile(path, ClaudeDesktop, "", "fs", false); return err },
	} {
		err := op()
		if !errors.Is(err, ErrNoServer) {
			t.Fatalf("%v, want ErrNoServer", err)
		}
		if want := `no such server "fs": the servers there are "filesystem", "github", "time", "sqlite"`; !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nwant it to say %s", err, want)
		}
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Error("the file was touched")
	}
	// claude-code: the project's servers and the user's.
	path, _ = copyFixture(t, "claude.json")
	_, err := WrapFile(path, ClaudeCode, "/home/me/app", "nope", exe)
	if err == nil || !strings.Contains(err.Error(), `"postgres", "memory", "sentry", "airtable"`) {
		t.Errorf("claude-code: %v", err)
	}
}

// Wrapping a wrapped entry is refused, whether tapedeck wrapped it or a
// person did by hand; the file is left alone.
func TestDoubleWrapRefused(t *testing.T) {
	path, _ := copyFixture(t, "cursor/mcp.json")
	if _, err := WrapFile(path, Cursor, "", "server-name", exe); err != nil {
		t.Fatal(err)
	}
	wrapped, _ := os.ReadFile(path)
	side, _ := os.ReadFile(SidecarPath(path))
	_, err := WrapFile(path, Cursor, "", "server-name", exe)
	if !errors.Is(err, ErrWrapped) || !strings.Contains(err.Error(), "tapedeck unwrap server-name") {
		t.Errorf("second wrap: %v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, wrapped) {
		t.Error("the second wrap touched the file")
	}
	if got, _ := os.ReadFile(SidecarPath(path)); !bytes.Equal(got, side) {
		t.Error("the second wrap touched the backup")
	}
	// By hand, no sidecar: still refused; unwrap says there is no backup.
	hand := `{"mcpServers": {"x": {"command": "/usr/bin/tapedeck", "args": ["record", "--", "node", "x.js"]}}}`
	dir := t.TempDir()
	p := filepath.Join(dir, "mcp.json")
	os.WriteFile(p, []byte(hand), 0o600)
	if _, err := WrapFile(p, Cursor, "", "x", exe); !errors.Is(err, ErrWrapped) {
		t.Errorf("hand-wrapped: %v", err)
	}
	if _, err := UnwrapFile(p, Cursor, "", "x", false); err == nil || !strings.Contains(err.Error(), "holds no backup") {
		t.Errorf("unwrap without a backup: %v", err)
	}
	if _, err := UnwrapFile(path, Cursor, "", "python-server", false); !errors.Is(err, ErrNotWrapped) {
		t.Errorf("unwrap of an entry never wrapped: %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != hand || len(dirNames(t, dir)) != 1 {
		t.Error("touched")
	}
}

// HTTP entries cannot run through a command: refused, saying how to record
// them with the proxy.
func TestURLEntryRefused(t *testing.T) {
	for _, f := range fixtures {
		for _, name := range f.urls {
			path, orig := copyFixture(t, f.file)
			_, err := WrapFile(path, f.client, f.cwd, name, exe)
			if !errors.Is(err, ErrURL) || !strings.Contains(err.Error(), "tapedeck record --upstream ") {
				t.Errorf("%s %s: %v", f.file, name, err)
			}
			if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
				t.Error("touched")
			}
		}
	}
}

// An entry edited after wrap is not overwritten by unwrap unless --force.
func TestUnwrapChangedEntry(t *testing.T) {
	path, orig := copyFixture(t, "windsurf/mcp_config.json")
	if _, err := WrapFile(path, Windsurf, "", "puppeteer", exe); err != nil {
		t.Fatal(err)
	}
	wrapped, _ := os.ReadFile(path)
	edited := bytes.Replace(wrapped, []byte(`"DOCKER_CONTAINER=true"`), []byte(`"DOCKER_CONTAINER=false"`), 1)
	os.WriteFile(path, edited, 0o600)
	_, err := UnwrapFile(path, Windsurf, "", "puppeteer", false)
	if !errors.Is(err, ErrChanged) || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("%v", err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, edited) {
		t.Error("touched")
	}
	if _, err := UnwrapFile(path, Windsurf, "", "puppeteer", true); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, orig) {
		t.Errorf("forced unwrap:\n%s", got)
	}
	// An edit elsewhere in the file is kept by unwrap.
	if _, err := WrapFile(path, Windsurf, "", "github", exe); err != nil {
		t.Fatal(err)
	}
	wrapped, _ = os.ReadFile(path)
	os.WriteFile(path, bytes.Replace(wrapped, []byte("figma.example.com"), []byte("figma.example.org"), 1), 0o600)
	if _, err := UnwrapFile(path, Windsurf, "", "github", false); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); !bytes.Equal(got, bytes.Replace(orig, []byte("figma.example.com"), []byte("figma.example.org"), 1)) {
		t.Errorf("the other edit was lost:\n%s", got)
	}
}

// Without --client, the first configuration holding the server is chosen;
// none holding it lists what was tried.
func TestFind(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	env := Env{Home: home, Cwd: cwd, GOOS: "linux"}
	write := func(path, name string) {
		data, _ := os.ReadFile(filepath.Join("testdata", name))
		os.MkdirAll(filepath.Dir(path), 0o700)
		os.WriteFile(path, data, 0o600)
	}
	write(DefaultPaths(ClaudeDesktop, env)[0], "claude_desktop_config.json")
	write(DefaultPaths(Windsurf, env)[0], "windsurf/mcp_config.json")
	write(DefaultPaths(VSCode, env)[0], "vscode/mcp.json")
	var cands []Candidate
	for _, c := range Clients() {
		for _, p := range DefaultPaths(c, env) {
			cands = append(cands, Candidate{c, p})
		}
	}
	if got, err := Find(cands, cwd, "puppeteer"); err != nil || got.Client != Windsurf {
		t.Errorf("puppeteer: %v %v", got, err)
	}
	if got, err := Find(cands, cwd, "github"); err != nil || got.Client != ClaudeDesktop {
		t.Errorf("github: %v %v", got, err)
	}
	if got, err := Find(cands, cwd, "fetch"); err != nil || got.Client != VSCode || got.Path != filepath.Join(cwd, ".vscode", "mcp.json") {
		t.Errorf("fetch: %v %v", got, err)
	}
	_, err := Find(cands, cwd, "nope")
	for _, want := range []string{
		"claude-desktop " + filepath.Join(home, ".config/Claude/claude_desktop_config.json") + `: servers "filesystem", "github", "time", "sqlite"`,
		"claude-code " + filepath.Join(home, ".claude.json") + ": no such file",
		"cursor " + filepath.Join(home, ".cursor/mcp.json") + ": no such file",
		"windsurf ", "vscode ",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%v\nlacks %q", err, want)
		}
	}
}

func TestDefaultPaths(t *testing.T) {
	env := Env{Home: "/h", Cwd: "/p", GOOS: "linux"}
	want := map[Client][]string{
		ClaudeDesktop: {"/h/.config/Claude/claude_desktop_config.json"},
		ClaudeCode:    {"/h/.claude.json", "/p/.mcp.json"},
		Cursor:        {"/p/.cursor/mcp.json", "/h/.cursor/mcp.json"},
		VSCode:        {"/p/.vscode/mcp.json"},
		Windsurf:      {"/h/.codeium/windsurf/mcp_config.json"},
	}
	for c, w := range want {
		if got := DefaultPaths(c, env); !slices.Equal(got, w) {
			t.Errorf("%s: %v, want %v", c, got, w)
		}
		if g := GuessClient(w[len(w)-1]); g != c {
			t.Errorf("GuessClient(%s) = %q", w[len(w)-1], g)
		}
	}
	env.GOOS = "darwin"
	if got := DefaultPaths(ClaudeDesktop, env)[0]; got != "/h/Library/Application Support/Claude/claude_desktop_config.json" {
		t.Errorf("darwin: %s", got)
	}
	env.GOOS, env.ConfigDir = "linux", "/xdg"
	if got := DefaultPaths(ClaudeDesktop, env)[0]; got != "/xdg/Claude/claude_desktop_config.json" {
		t.Errorf("XDG_CONFIG_HOME: %s", got)
	}
}

// The write is atomic: a failure leaves the file as it was and no
// temporary file behind.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.json")
	os.WriteFile(path, []byte("old"), 0o644)
	if err := WriteFileAtomic(path, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	if got, _ := os.ReadFile(path); string(got) != "new" || fi.Mode().Perm() != 0o644 {
		t.Errorf("%q %v", got, fi.Mode())
	}
	if err := WriteFileAtomic(filepath.Join(dir, "missing", "c.json"), []byte("x"), 0o600); err == nil {
		t.Error("wrote into a missing directory")
	}
	dangling := filepath.Join(dir, "dangling.json")
	os.Symlink(filepath.Join(dir, "gone"), dangling)
	if err := WriteFileAtomic(dangling, []byte("x"), 0o600); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("dangling link: %v", err)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"c.json", "dangling.json"}) {
		t.Errorf("left: %v", names)
	}
}

// claude-code: the current project's servers, the user's, then another
// project's, each wrapped where it is.
func TestClaudeCodePlaces(t *testing.T) {
	path, _ := copyFixture(t, "claude.json")
	for name, want := range map[string]string{
		"postgres": `projects["/home/me/app"].mcpServers`,
		"memory":   "mcpServers",
		"airtable": `projects["/home/me/other"].mcpServers`,
	} {
		res, err := WrapFile(path, ClaudeCode, "/home/me/app", name, exe)
		if err != nil {
			t.Fatal(err)
		}
		if got := Place(res.Where); got != want {
			t.Errorf("%s wrapped under %s, want %s", name, got, want)
		}
	}
}

// TestConcurrentWraps: wraps of different entries of one configuration at
// once each take the edit lock in turn, so none loses another's edit or
// backup; unwraps at once then restore the original bytes exactly, and
// leave neither sidecar nor lock file.
func TestConcurrentWraps(t *testing.T) {
	const n = 8
	var b strings.Builder
	b.WriteString("{\n  \"mcpServers\": {\n")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%d", i)
		sep := ","
		if i == n-1 {
			sep = ""
		}
		fmt.Fprintf(&b, "    %q: { \"command\": \"node\", \"args\": [\"server-%d.js\"] }%s\n", names[i], i, sep)
	}
	b.WriteString("  }\n}\n")
	orig := []byte(b.String())
	for round := range 5 {
		dir := t.TempDir()
		path := filepath.Join(dir, "claude_desktop_config.json")
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			t.Fatal(err)
		}
		all := func(do func(name string) error) {
			var wg sync.WaitGroup
			errs := make([]error, n)
			for i, name := range names {
				wg.Go(func() { errs[i] = do(name) })
			}
			wg.Wait()
			if err := errors.Join(errs...); err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
		}
		all(func(name string) error { _, err := WrapFile(path, ClaudeDesktop, "", name, exe); return err })
		data, _ := os.ReadFile(path)
		side, err := os.ReadFile(SidecarPath(path))
		if err != nil {
			t.Fatal(err)
		}
		backups, err := ParseBackups(SidecarPath(path), side)
		if err != nil {
			t.Fatal(err)
		}
		doc := decode(t, data)
		for i, name := range names {
			e := entryOf(t, doc, []string{"mcpServers"}, name)
			if e["command"] != exe {
				t.Errorf("round %d: %s not wrapped: %v", round, name, e)
			}
			if b, ok := backups.Servers[name]; !ok || !strings.Contains(b.Original, fmt.Sprintf("server-%d.js", i)) {
				t.Errorf("round %d: backup of %s: %+v, want its original", round, name, b)
			}
		}
		all(func(name string) error { _, err := UnwrapFile(path, ClaudeDesktop, "", name, false); return err })
		if back, _ := os.ReadFile(path); !bytes.Equal(back, orig) {
			t.Fatalf("round %d: after unwrapping all:\n%s\nwant:\n%s", round, back, orig)
		}
		if left := dirNames(t, dir); !slices.Equal(left, []string{"claude_desktop_config.json"}) {
			t.Errorf("round %d: left beside the configuration: %v", round, left)
		}
	}
}

// TestWrapLockHeld: while another edit holds the lock, wrap waits; it
// fails, touching neither the configuration nor the sidecar, only when
// the lock is held past lockWait (here: a lock file a test holds).
func TestWrapLockHeld(t *testing.T) {
	path, orig := copyFixture(t, "claude_desktop_config.json")
	unlock, err := lockConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := WrapFile(path, ClaudeDesktop, "", "time", exe); done <- err }()
	select {
	case err := <-done:
		t.Fatalf("wrap did not wait for the lock: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	if now, _ := os.ReadFile(path); !bytes.Equal(now, orig) {
		t.Error("the configuration changed while the lock was held")
	}
	if _, err := os.Stat(SidecarPath(path)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the sidecar was written while the lock was held: %v", err)
	}
	unlock()
	if err := <-done; err != nil {
		t.Fatalf("wrap after the lock was released: %v", err)
	}
}
