package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// A reader of stdout that goes away (stats TAPE | head) ends the run
// quietly, killed by SIGPIPE, as it does cat's: it used to print "write
// /dev/stdout: broken pipe" and exit 1, then exited 0, which told a
// pipeline with pipefail that `diff --exit-code` of two different tapes
// (status 1 when read whole) had found them equal.
func TestStdoutReaderGone(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	var big, other strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i, i%50)
		fmt.Fprintf(&big, `{"jsonrpc":"2.0","id":%d,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z"}}`+"\n", i)
		fmt.Fprintf(&other, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"t%d"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`+"\n", i, i%50)
		fmt.Fprintf(&other, `{"jsonrpc":"2.0","id":%d,"result":{"n":%d},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.010Z"}}`+"\n", i, i)
	}
	path := writeFile(t, "big.jsonl", big.String())
	path2 := writeFile(t, "other.jsonl", other.String())
	if err := exec.Command(bin, "diff", "--exit-code", path, path2).Run(); err == nil {
		t.Fatal("diff --exit-code of the two tapes read whole: status 0, want 1 (they differ)")
	}
	for _, args := range [][]string{
		{"stats", path},
		{"stats", "--json", path},
		{"export", path, "--format", "json"},
		{"export", path, "--format", "html"},
		{"diff", "--exit-code", path, path2},
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
		ws, _ := cmd.ProcessState.Sys().(syscall.WaitStatus)
		if !ws.Signaled() || ws.Signal() != syscall.SIGPIPE || stderr.Len() != 0 {
			t.Errorf("%s with stdout's reader gone: %v, stderr %q; want killed by SIGPIPE and nothing said", strings.Join(args, " "), err, stderr.String())
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

// ls DIR says on stderr that it adds DIR to the library for good, once,
// and how to undo it; ls --forget DIR takes it out (its files stay).
func TestLsSaysItAdds(t *testing.T) {
	libraryState(t)
	other := t.TempDir()
	elsewhere := putTape(t, other, "elsewhere.jsonl", libraryTape("2025-06-01", "initech"), time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC))
	out, errOut, code := runCLI(t, "ls", other)
	if code != 0 || !strings.Contains(out, elsewhere) || !strings.Contains(errOut, "added "+other+" to the library for good") || !strings.Contains(errOut, "tapedeck ls --forget "+other) {
		t.Errorf("ls DIR: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if _, errOut, _ = runCLI(t, "ls", other); strings.Contains(errOut, "added") {
		t.Errorf("ls DIR a second time says again that it adds: %q", errOut)
	}
	if out, _, _ = runCLI(t, "ls"); !strings.Contains(out, elsewhere) {
		t.Errorf("ls after ls DIR lacks its tape:\n%s", out)
	}
	if _, errOut, code = runCLI(t, "ls", "--forget", other); code != 0 || !strings.Contains(errOut, "took "+other+" out of the library") {
		t.Errorf("ls --forget: exit %d, stderr %q", code, errOut)
	}
	if out, _, _ = runCLI(t, "ls"); strings.Contains(out, elsewhere) {
		t.Errorf("ls after --forget still lists its tape:\n%s", out)
	}
	if _, err := os.Stat(elsewhere); err != nil {
		t.Errorf("--forget removed the file: %v", err)
	}
	if _, errOut, code = runCLI(t, "ls", "--forget", other); code != 1 || !strings.Contains(errOut, "1 of 1 path not in the library") {
		t.Errorf("ls --forget of a path not added: exit %d, stderr %q", code, errOut)
	}
}

// prune names the tapes it skipped because they were written to in the
// last 30 s, instead of a bare "removed 0 tapes".
func TestPruneSaysWhatItSkipped(t *testing.T) {
	tapes := libraryState(t)
	busy := putTape(t, tapes, "busy.jsonl", libraryTape("2025-01-10", "acme"), time.Now())
	out, _, code := runCLI(t, "prune", "--older-than", "30d")
	if code != 0 || !strings.Contains(out, "skipped "+busy+" (last message ") || !strings.Contains(out, "written to in the last 30s") ||
		!strings.Contains(out, "removed 0 tapes, 0 B, older than ") || !strings.Contains(out, "; skipped 1 tape written to in the last 30s") {
		t.Errorf("prune with a busy tape: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("prune removed the busy tape: %v", err)
	}
}

// record --upstream stopped by SIGINT or SIGTERM says what it wrote: the
// tape, its messages, requests and failures.
func TestRecordHTTPSummary(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		id := gjson.GetBytes(body, "id").Raw
		w.Header().Set("Content-Type", "application/json")
		if gjson.GetBytes(body, "method").String() == "tools/call" {
			fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32602,"message":"no such tool"}}`, id)
			return
		}
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%s,"result":{}}`, id)
	}))
	defer upstream.Close()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		path := filepath.Join(t.TempDir(), "http.jsonl")
		cmd := exec.Command(bin, "record", "--upstream", upstream.URL+"/mcp", "-o", path)
		var stdout, stderr mcptest.SyncBuffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			cmd.Process.Kill()
			cmd.Wait()
			if t.Failed() {
				t.Logf("record's stderr: %s", stderr.String())
			}
		})
		waitFor(t, 10*time.Second, printed(&stdout, "\n"), "record to print the proxy's URL")
		proxy := strings.TrimSpace(stdout.String())
		for _, msg := range []string{`{"jsonrpc":"2.0","id":1,"method":"ping"}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`} {
			resp, err := http.Post(proxy, "application/json", strings.NewReader(msg))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		cmd.Process.Signal(sig)
		if err := cmd.Wait(); err != nil {
			t.Errorf("%v: record exited %v", sig, err)
		}
		if want := "tapedeck: recorded 4 messages (2 requests, 1 failed) to " + path + "\n"; !strings.Contains(stderr.String(), want) {
			t.Errorf("%v: stderr lacks %q:\n%s", sig, want, stderr.String())
		}
	}
}

// replay TAPE run by hand in a terminal says that it serves the tape on
// stdio and how to point a client at it, instead of looking hung; a client
// on a pipe hears nothing of it.
func TestReplayInTerminalSaysHow(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	path := writeFile(t, "s.jsonl", session)
	tt := startTmuxSize(t, 200, 20, bin, "replay", "--server", "everything", path)
	tt.waitFor(5*time.Second, "serving "+path+" on stdio", `"tapedeck replay `+path+`" its server command`, "--listen 127.0.0.1:8808 "+path)
	tt.keys("C-c")
	tt.waitExit(5 * time.Second)

	cmd := exec.Command(bin, "replay", "--server", "everything", path)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Run()
	if strings.Contains(stderr.String(), "on stdio") {
		t.Errorf("replay from a pipe prints the terminal's hint:\n%s", stderr.String())
	}
}

// A record whose server cannot start leaves a library tape that says so:
// stats names the failed start, ls counts it as an error.
func TestRecordFailedStartIsAnError(t *testing.T) {
	tapes := libraryState(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"record", "--", filepath.Join(t.TempDir(), "no-such-server")}, strings.NewReader(""), &stdout, &stderr)
	if err == nil {
		t.Fatalf("record of a server that cannot start succeeded:\n%s", stderr.String())
	}
	made, _ := filepath.Glob(filepath.Join(tapes, "*.jsonl"))
	if len(made) != 1 {
		t.Fatalf("want one library tape, found %v", made)
	}
	out, _, code := runCLI(t, "stats", made[0])
	if code != 0 || !strings.Contains(out, "; the server failed to start") {
		t.Errorf("stats: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "ls", "--json")
	var listed []struct {
		Path   string `json:"path"`
		Errors int    `json:"errors"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || len(listed) != 1 || listed[0].Errors != 1 {
		t.Errorf("ls --json: %v %+v; want the tape with 1 error", err, listed)
	}
	out, _, _ = runCLI(t, "ls")
	if fields := strings.Fields(strings.Split(strings.TrimSpace(out), "\n")[1]); len(fields) < 6 || fields[len(fields)-2] != "1" {
		t.Errorf("ls does not count the failed start in ERRORS:\n%s", out)
	}
}
