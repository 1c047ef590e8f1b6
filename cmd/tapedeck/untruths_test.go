package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// A reader of stdout that goes away (stats TAPE | head) ends the run
// quietly with status 0, as it does cat's; it used to print "write
// /dev/stdout: broken pipe" and exit 1.
func TestStdoutReaderGone(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i, i%50)
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z"}}`+"\n", i)
	}
	path := writeFile(t, "big.jsonl", big.String())
	for _, args := range [][]string{
		{"stats", path},
		{"stats", "--json", path},
		{"export", path, "--format", "json"},
		{"export", path, "--format", "html"},
	} {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		r.Close() // the reader is gone before the first write
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = w, &stderr
		err = cmd.Run()
		w.Close()
		if err != nil || stderr.Len() != 0 {
			t.Errorf("%s with stdout's reader gone: %v, stderr %q; want status 0 and nothing said", strings.Join(args, " "), err, stderr.String())
		}
	}
}

// tapedeck version says which build it is from the build information, not
// "(devel)" alone.
func TestDescribeBuild(t *testing.T) {
	vcs := []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "6781ccfa8f14bd1d4e4ddb74556a2e2a2d484d70"}, {Key: "vcs.time", Value: "2026-11-25T23:45:02Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tc := range []struct {
		name, ldflags string
		bi            *debug.BuildInfo
		short, long   string
	}{
		{"checkout with vcs", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v0.0.0-20261125234502-6781ccfa8f14+dirty"}, Settings: vcs},
			"v0.0.0-20261125234502-6781ccfa8f14+dirty", "v0.0.0-20261125234502-6781ccfa8f14+dirty, revision 6781ccfa8f14bd1d4e4ddb74556a2e2a2d484d70 of 2026-11-25T23:45:02Z, modified, go1.26.8"},
		{"devel with vcs", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}, Settings: vcs},
			"(devel) 6781ccfa8f14+dirty", "(devel) 6781ccfa8f14+dirty, revision 6781ccfa8f14bd1d4e4ddb74556a2e2a2d484d70 of 2026-11-25T23:45:02Z, modified, go1.26.8"},
		{"devel without vcs", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"}},
			"(devel)", "(devel), no VCS revision (built with -buildvcs=false or outside a git checkout), go1.26.8"},
		{"release", "", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"}},
			"v1.2.3", "v1.2.3, no VCS revision (built with -buildvcs=false or outside a git checkout), go1.26.8"},
		{"ldflags", "v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: vcs[:2]},
			"v9.9.9", "v9.9.9, revision 6781ccfa8f14bd1d4e4ddb74556a2e2a2d484d70"},
	} {
		short, long := describeBuild(tc.ldflags, tc.bi)
		if short != tc.short || long != tc.long {
			t.Errorf("%s: got %q / %q, want %q / %q", tc.name, short, long, tc.short, tc.long)
		}
	}
	out, _, code := runCLI(t, "version")
	if code != 0 || !strings.Contains(out, "go1.") {
		t.Errorf("version: exit %d, %q; want the Go version among the build's facts", code, out)
	}
}

// A line the server wrote on stderr is a finding named once: "stderr: the
// server wrote: ...", not "stderr: stderr: ...".
func TestCheckStderrPrefix(t *testing.T) {
	path := writeFile(t, "e.jsonl", `{"jsonrpc":"2.0","method":"$transport/stderr","params":{"text":"listening on 3000\n"},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-05-16T12:00:00.000Z"}}
`)
	out, _, _ := runCLI(t, "check", "--fail-on", "stderr", path)
	if want := path + ":1: stderr: the server wrote: listening on 3000\n"; !strings.Contains(out, want) || strings.Contains(out, "stderr: stderr:") {
		t.Errorf("check says:\n%s\nwant a line ending %q", out, want)
	}
}
