package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/assets"
	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// TestForeignFiles gives every command that reads a tape a file that is
// none: a Go source file, a real mcpsnoop log, a HAR file and an MCP
// Inspector history export. Each exits 1 with one line that names the
// file and says it holds no tape records;
// for another tool's log, which importer and the command that imports it.
// No command reads such a file as a tape of invalid lines.
func TestForeignFiles(t *testing.T) {
	const snoop = "../../testdata/import/mcpsnoop/everything-stdio.jsonl"
	const har = "../../testdata/import/har/everything-http.har"
	const insp = "../../testdata/import/inspector/everything-protocol.json"
	const real = "../../testdata/sdk-everything-2025-06-18.tape.jsonl"
	files := []struct{ path, want string }{
		{"main.go", `main.go holds no tape records: line 1 is "// Command tapedeck records MCP sessions to tapes, replays t"…: expected a JSON-RPC object or batch at column 1, found '/'`},
		{snoop, snoop + ` holds no tape records: it is an mcpsnoop log; run "tapedeck import --from mcpsnoop ` + snoop + ` -o TAPE" to make a tape of it`},
		{har, har + ` holds no tape records: it is a HAR file; run "tapedeck import --from har ` + har + ` -o TAPE" to make a tape of it`},
		{insp, insp + ` holds no tape records: it is an MCP Inspector history export; run "tapedeck import --from inspector ` + insp + ` -o TAPE" to make a tape of it`},
	}
	out := filepath.Join(t.TempDir(), "out")
	commands := []func(f string) []string{
		func(f string) []string { return []string{"stats", f} },
		func(f string) []string { return []string{"stats", "--json", f} },
		func(f string) []string { return []string{"check", f} },
		func(f string) []string { return []string{"check", real, f} },
		func(f string) []string { return []string{"open", f} },
		func(f string) []string { return []string{"open", "--follow", f} },
		func(f string) []string { return []string{"open", "--diff", f, real} },
		func(f string) []string { return []string{"replay", f} },
		func(f string) []string { return []string{"export", "--format", "json", f} },
		func(f string) []string { return []string{"diff", real, f} },
		func(f string) []string { return []string{"verify", f, "--", "true"} },
		func(f string) []string { return []string{"baseline", "save", f, "-o", out} },
		func(f string) []string { return []string{"debug", f} },
	}
	for _, f := range files {
		for _, c := range commands {
			args := c(f.path)
			stdout, stderr, code := runCLIFor(t, 10*time.Second, args...)
			if code != 1 || stderr != "tapedeck: "+f.want+"\n" {
				t.Errorf("tapedeck %s: exit %d, stderr:\n%s\nwant exit 1 and:\ntapedeck: %s", strings.Join(args, " "), code, stderr, f.want)
			}
			if stdout != "" {
				t.Errorf("tapedeck %s: stdout %q, want nothing", strings.Join(args, " "), stdout)
			}
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("baseline save wrote %s for a file that is no tape (%v)", out, err)
	}
}

// runCLIFor is runCLI with a context that ends after d (the debugger
// runs until then).
func runCLIFor(t *testing.T, d time.Duration, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	var out, errb bytes.Buffer
	err := run(ctx, args, strings.NewReader(""), &out, &errb)
	code := exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// TestEmptyTapeStillATape: an empty tape (a recording that has just
// started) and one whose only line is half written, when followed, are not
// refused as foreign files.
func TestEmptyTapeStillATape(t *testing.T) {
	empty := writeFile(t, "empty.jsonl", "")
	half := writeFile(t, "half.jsonl", `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"life`)
	for _, args := range [][]string{
		{"stats", empty},
		{"check", empty},
		{"export", "--format", "json", empty},
	} {
		_, stderr, code := runCLI(t, args...)
		if code != 0 {
			t.Errorf("tapedeck %s: exit %d, stderr %q; want 0", strings.Join(args, " "), code, stderr)
		}
	}
	// The debugger runs until the context ends it: the tape passed the
	// check.
	for _, args := range [][]string{{"open", empty}, {"open", "--follow", empty}, {"open", "--follow", half}} {
		stdout, stderr, code := runCLIFor(t, 500*time.Millisecond, args...)
		title := "tapedeck — " + filepath.Base(args[len(args)-1]) // set by the debugger's first view
		if code != 0 || stderr != "" || !strings.Contains(stdout, title) {
			t.Errorf("tapedeck %s: exit %d, stderr %q, output %q; want the debugger's title %q", strings.Join(args, " "), code, stderr, stdout, title)
		}
	}
	// Not followed, a half-written line is all the file is: no tape.
	_, stderr, code := runCLIFor(t, 10*time.Second, "open", half)
	if code != 1 || !strings.Contains(stderr, "half.jsonl holds no tape records: line 1 is") {
		t.Errorf("open of a lone half line: exit %d, stderr %q", code, stderr)
	}
}

// TestTmuxFollowFromNothing: open --follow on a tape whose recording has
// just started, holding half of its first line (which is no record yet),
// shows it and follows it as lines come, in a real terminal.
func TestTmuxFollowFromNothing(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	path := filepath.Join(t.TempDir(), "live.jsonl")
	lines := bytes.SplitAfter(assets.DemoTape, []byte("\n"))
	half := lines[0][:len(lines[0])/2]
	if err := os.WriteFile(path, half, 0o600); err != nil {
		t.Fatal(err)
	}
	tt := startTmux(t, bin, "open", "--follow", path)
	tt.waitFor(5*time.Second, "0 messages", "following")
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(append(lines[0][len(half):], lines[1]...)); err != nil {
		t.Fatal(err)
	}
	tt.waitFor(3*time.Second, "2 messages")
	tt.keys("q")
	tt.waitExit(5 * time.Second)
}
