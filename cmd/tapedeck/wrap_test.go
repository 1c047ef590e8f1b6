package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// wrap then a real session: tapedeck wrap rewrites a Claude Desktop
// configuration whose server is the go-sdk test server; the go-sdk client
// then runs the wrapped entry as Claude Desktop would (its command, its
// args, its env), the session works (the env reached the server: variant
// B answers 43) and lands on a tape in $XDG_STATE_HOME; unwrap gives the
// configuration's original bytes back.
func TestWrapRecordsRealSession(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	dir, home, state := t.TempDir(), t.TempDir(), t.TempDir()
	config := filepath.Join(dir, "claude_desktop_config.json")
	serverJSON, _ := json.Marshal(server)
	orig := []byte(`{
  "mcpServers": {
    "notes": {
      "command": "node",
      "args": ["/srv/notes/build/index.js"]
    },
    "sdk": {
      "command": ` + string(serverJSON) + `,
      "args": ["--name", "wrapped-sdkserver"],
      "env": {
        "SDKSERVER_VARIANT": "B"
      }
    }
  },
  "globalShortcut": ""
}
`)
	if err := os.WriteFile(config, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "XDG_STATE_HOME="+state, "XDG_CONFIG_HOME=")
	tapedeckRun := func(args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, tapedeck, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := tapedeckRun("wrap", "sdk", "--client", "claude-desktop", "--config", config)
	if err != nil {
		t.Fatalf("wrap: %v\n%s", err, out)
	}
	if !strings.Contains(out, `wrapped "sdk" (under mcpServers) in `+config+` (claude-desktop)`) || !strings.Contains(out, "tapedeck unwrap sdk") {
		t.Errorf("wrap said:\n%s", out)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command string            `json:"command"`
			Args    []string          `json:"args"`
			Env     map[string]string `json:"env"`
		} `json:"mcpServers"`
	}
	wrapped, _ := os.ReadFile(config)
	if err := json.Unmarshal(wrapped, &doc); err != nil {
		t.Fatalf("the wrapped configuration is not JSON: %v\n%s", err, wrapped)
	}
	entry := doc.MCPServers["sdk"]
	wantArgs := []string{"record", "--server", "sdk", "--", server, "--name", "wrapped-sdkserver"}
	if entry.Command != tapedeck || !slices.Equal(entry.Args, wantArgs) || entry.Env["SDKSERVER_VARIANT"] != "B" {
		t.Fatalf("wrapped entry: %+v\nwant command %s, args %q and the env kept", entry, tapedeck, wantArgs)
	}
	if n := doc.MCPServers["notes"]; n.Command != "node" {
		t.Errorf("the other server changed: %+v", n)
	}

	// The client runs the entry as the client application would.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	argv := append([]string{"--protocol", "2025-06-18", "--steps", "init,tools,echo,answer", "--", entry.Command}, entry.Args...)
	cmd := exec.CommandContext(ctx, client, argv...)
	cmd.Env = append(slices.Clone(env), "SDKSERVER_VARIANT="+entry.Env["SDKSERVER_VARIANT"])
	transcript, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the go-sdk client through the wrapped entry: %v\n%s", err, transcript)
	}
	for _, want := range []string{"wrapped-sdkserver", "Echo: hi", "the answer is 43"} {
		if !bytes.Contains(transcript, []byte(want)) {
			t.Errorf("the transcript lacks %q:\n%s", want, transcript)
		}
	}

	tapes, _ := filepath.Glob(filepath.Join(state, "tapedeck", "tapes", "sdk-*.jsonl"))
	if len(tapes) != 1 {
		all, _ := filepath.Glob(filepath.Join(state, "*", "*", "*"))
		t.Fatalf("tapes %v, want one sdk-*.jsonl in $XDG_STATE_HOME/tapedeck/tapes (found %v)", tapes, all)
	}
	f, err := os.Open(tapes[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var sent []string
	answered := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var rec struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
			Result struct {
				Content []struct{ Text string } `json:"content"`
			} `json:"result"`
			Meta struct{ Dir, Server string } `json:"_meta"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("tape line %q: %v", sc.Text(), err)
		}
		if rec.Meta.Server != "sdk" {
			t.Errorf("a record of server %q, want sdk (--server): %s", rec.Meta.Server, sc.Text())
		}
		if rec.Meta.Dir == "send" && rec.Method != "" {
			sent = append(sent, strings.TrimSuffix(rec.Method+" "+rec.Params.Name, " "))
		}
		if rec.Meta.Dir == "recv" && len(rec.Result.Content) > 0 && rec.Result.Content[0].Text == "the answer is 43" {
			answered = true
		}
	}
	if !slices.Contains(sent, "initialize") || !slices.Contains(sent, "tools/call echo") || !slices.Contains(sent, "tools/call answer") || !answered {
		t.Errorf("the tape holds the client's %q (answered: %v); want its initialize and tools/calls of echo and answer, answered", sent, answered)
	}

	// Wrapping it again is refused; unwrap puts the bytes back.
	if out, err := tapedeckRun("wrap", "sdk", "--config", config); err == nil || !strings.Contains(out, "already wrapped") {
		t.Errorf("a second wrap: %v\n%s", err, out)
	}
	out, err = tapedeckRun("unwrap", "sdk", "--client", "claude-desktop", "--config", config)
	if err != nil {
		t.Fatalf("unwrap: %v\n%s", err, out)
	}
	if back, _ := os.ReadFile(config); !bytes.Equal(back, orig) {
		t.Errorf("after unwrap:\n%s\nwant the original:\n%s", back, orig)
	}
	if names, _ := os.ReadDir(dir); len(names) != 1 {
		t.Errorf("left next to the configuration: %v", names)
	}
}

// Without --config the client's default configuration under $HOME is
// edited; without --client the first configuration holding the server.
// Refusals say what they found.
func TestWrapCLI(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("APPDATA", "")
	desktop := filepath.Join(home, ".config", "Claude", "claude_desktop_config.json")
	windsurf := filepath.Join(home, ".codeium", "windsurf", "mcp_config.json")
	for path, data := range map[string]string{
		desktop:  `{"mcpServers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}`,
		windsurf: "{\n  \"mcpServers\": {\n    \"fetch\": {\"command\": \"uvx\", \"args\": [\"mcp-server-fetch\"]},\n    \"figma\": {\"serverUrl\": \"https://figma.example.com/mcp\"}\n  }\n}\n",
	} {
		os.MkdirAll(filepath.Dir(path), 0o700)
		os.WriteFile(path, []byte(data), 0o600)
	}
	before, _ := os.ReadFile(windsurf)
	out, errOut, code := runCLI(t, "wrap", "fetch")
	if code != 0 || !strings.Contains(out, `wrapped "fetch" (under mcpServers) in `+windsurf+" (windsurf)") {
		t.Fatalf("wrap fetch: %d\n%s%s", code, out, errOut)
	}
	if after, _ := os.ReadFile(windsurf); !bytes.Contains(after, []byte(`"args": ["record", "--server", "fetch", "--", "uvx", "mcp-server-fetch"]`)) {
		t.Errorf("wrapped:\n%s", after)
	}
	if _, errOut, code := runCLI(t, "unwrap", "fetch", "--client", "windsurf"); code != 0 {
		t.Fatalf("unwrap: %s", errOut)
	}
	if after, _ := os.ReadFile(windsurf); !bytes.Equal(after, before) {
		t.Errorf("unwrapped:\n%s", after)
	}

	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"wrap", "nope"}, []string{`no such server "nope" in any client's configuration; tried:`, desktop + `: servers "time"`, windsurf + `: servers "fetch", "figma"`, "claude-code " + filepath.Join(home, ".claude.json") + ": no such file"}},
		{[]string{"wrap", "nope", "--client", "claude-desktop"}, []string{desktop, `no such server "nope": the servers there are "time"`}},
		{[]string{"wrap", "figma"}, []string{"is an HTTP server (https://figma.example.com/mcp)", "tapedeck record --upstream https://figma.example.com/mcp --listen 127.0.0.1:7777"}},
		{[]string{"wrap", "x", "--client", "cursor", "--config", filepath.Join(home, "missing.json")}, []string{"missing.json: no such file: expected cursor's MCP configuration there"}},
		{[]string{"wrap", "x", "--client", "zed"}, []string{`unknown client "zed": expected one of claude-desktop, claude-code, cursor, vscode, windsurf`}},
		{[]string{"unwrap", "time"}, []string{`server "time" is not wrapped`}},
	} {
		_, errOut, code := runCLI(t, c.args...)
		if code != 1 {
			t.Errorf("%v: exit %d", c.args, code)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: stderr lacks %q:\n%s", c.args, w, errOut)
			}
		}
	}
	if names, _ := os.ReadDir(filepath.Dir(desktop)); len(names) != 1 {
		t.Errorf("left: %v", names)
	}
}
