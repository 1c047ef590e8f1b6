package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

func TestRecordDefaultLocationAndAppend(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n"
	var stdout, stderr bytes.Buffer
	// The server answers one ping and exits 4: tapedeck exits 4 too.
	script := `read l; echo '{"jsonrpc":"2.0","id":1,"result":{}}'; exit 4`
	err := run(context.Background(), []string{"record", "--server", "pinger", "--", "sh", "-c", script}, strings.NewReader(in), &stdout, &stderr)
	var ee *exitError
	if !errors.As(err, &ee) || ee.code != 4 {
		t.Fatalf("got %v, want exit status 4", err)
	}
	if stdout.String() != `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n" {
		t.Errorf("stdout %q", stdout.String())
	}
	dir := filepath.Join(state, "tapedeck", "tapes")
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 1 {
		t.Fatalf("tapes dir: %v, %d files", err, len(entries))
	}
	path := filepath.Join(dir, entries[0].Name())
	if !strings.HasPrefix(entries[0].Name(), "pinger-") || !strings.Contains(stderr.String(), path) {
		t.Errorf("tape %s; stderr %q should name it", path, stderr.String())
	}
	if fi, _ := os.Stat(dir); fi.Mode().Perm() != 0o700 {
		t.Errorf("dir mode %v, want 0700", fi.Mode().Perm())
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
		t.Errorf("tape mode %v, want 0600", fi.Mode().Perm())
	}

	// An existing tape is refused without --append, and appended to with it.
	err = run(context.Background(), []string{"record", "-o", path, "--", "true"}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("recording over an existing tape: %v, want an already-exists error", err)
	}
	if err := run(context.Background(), []string{"record", "-o", path, "--append", "--", "true"}, strings.NewReader(""), &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path, tape.Strict())
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	starts := 0
	for i := 0; i < x.Len(); i++ {
		if x.Entry(i).Method == tape.MethodStart {
			starts++
		}
	}
	if starts != 2 || x.Len() != 6 {
		t.Errorf("appended tape: %d records, %d starts; want 6 and 2", x.Len(), starts)
	}
}

func TestRecordUsageErrors(t *testing.T) {
	t.Setenv("XDG_STATE_HOME", t.TempDir()) // nothing may be written elsewhere, even by mistake
	for _, args := range [][]string{
		{"record"},
		{"record", "--upstream", "http://127.0.0.1:1/mcp", "--", "cat"},
		{"record", "--upstream", "ftp://x"},
		{"record", "--redact-value", "(", "--", "cat"},
		// a non-loopback listener without --allow-remote
		{"record", "--upstream", "http://127.0.0.1:1/mcp", "--listen", "0.0.0.0:0", "-o", filepath.Join(t.TempDir(), "t.jsonl")},
	} {
		var out bytes.Buffer
		if err := run(context.Background(), args, strings.NewReader(""), &out, &out); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
}

// A server message with a top-level _meta of its own survives the round
// trip: recorded under it (the tape's record under _tapedeck), replayed as
// the server sent it. It was recorded with two _meta keys and replayed with
// the tape's {dir,server,ts} in place of the server's own.
func TestRecordReplayOwnMeta(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	const answer = `{"jsonrpc":"2.0","id":1,"result":{"ok":true},"_meta":{"trace":"abc"}}`
	script := `while read l; do echo '` + answer + `'; done`
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"record", "-o", path, "--", "sh", "-c", script}, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"), &stdout, &stderr); err != nil {
		t.Fatalf("record: %v\n%s", err, stderr.String())
	}
	if strings.TrimSpace(stdout.String()) != answer {
		t.Fatalf("the client got %s through the shim", stdout.String())
	}
	stdout.Reset()
	if err := run(context.Background(), []string{"replay", path}, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"ping"}`+"\n"), &stdout, &stderr); err != nil {
		t.Fatalf("replay: %v\n%s", err, stderr.String())
	}
	if got, want := strings.TrimSpace(stdout.String()), strings.Replace(answer, `"id":1`, `"id":7`, 1); got != want {
		t.Errorf("replay answered %s, want %s", got, want)
	}
}

// Two recorders on one tape at once, the first made without --append (a
// shim still in its shutdown grace) and the second with it (the client run
// again): every line of both sessions reads back whole. The first used to
// write at its own offset, over the second's lines.
func TestRecordConcurrentAppend(t *testing.T) {
	path := filepath.Join(t.TempDir(), "shared.jsonl")
	const n = 300
	script := `while read l; do echo "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}"; done`
	line := func(i int) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping","params":{"pad":"%s"}}`+"\n", i, strings.Repeat("x", i%50))
	}
	pr, pw := io.Pipe()
	first := make(chan error, 1)
	go func() {
		var stdout, stderr bytes.Buffer
		first <- run(context.Background(), []string{"record", "-o", path, "--", "sh", "-c", script}, pr, &stdout, &stderr)
	}()
	for i := range n / 2 {
		io.WriteString(pw, line(i))
	}
	var in strings.Builder
	for i := range n {
		in.WriteString(line(i))
	}
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"record", "-o", path, "--append", "--", "sh", "-c", script}, strings.NewReader(in.String()), &stdout, &stderr); err != nil {
		t.Fatalf("second recorder: %v\n%s", err, stderr.String())
	}
	for i := n / 2; i < n; i++ {
		io.WriteString(pw, line(i))
	}
	pw.Close()
	if err := <-first; err != nil {
		t.Fatalf("first recorder: %v", err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := tape.NewReader(f)
	counts := map[tape.Kind]int{}
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		counts[e.Kind]++
	}
	if len(r.Warnings()) > 0 || counts[tape.KindInvalid] > 0 {
		t.Fatalf("the shared tape has damaged lines: %v", r.Warnings())
	}
	if counts[tape.KindRequest] != 2*n || counts[tape.KindResponse] != 2*n || counts[tape.KindLifecycle] != 4 {
		t.Errorf("read back %v; want %d requests, %d responses and 4 lifecycle records", counts, 2*n, 2*n)
	}
}

// The upstream URL's query values are secrets as often as not (private_key,
// pwd, jwt...): none is printed, on stdout (the URL a client is given) or
// stderr, and none is written to the tape.
func TestRecordUpstreamQueryNotPrinted(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	tapePath := filepath.Join(t.TempDir(), "t.jsonl")
	cmd := exec.Command(tapedeck, "record", "--upstream", "http://user:PW-S3CRET@127.0.0.1:1/mcp?private_key=K3Y-S3CRET&pwd=PWD-S3CRET&jwt=JWT-S3CRET", "--listen", "127.0.0.1:0", "-o", tapePath)
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
	waitFor(t, 10*time.Second, printed(&stdout, "http://"), "record to print the proxy's URL")
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	tapeBytes, _ := os.ReadFile(tapePath)
	for _, out := range []string{stdout.String(), stderr.String(), string(tapeBytes)} {
		if strings.Contains(out, "S3CRET") {
			t.Errorf("a secret of the upstream URL was printed or recorded:\n%s", out)
		}
	}
	if !strings.Contains(stderr.String(), "private_key=") {
		t.Errorf("stderr does not name the upstream's query parameters:\n%s", stderr.String())
	}
}

// A server's grandchild that left with setsid does not outlive tapedeck
// record (it kept running after the shim exited).
func TestRecordKillsSetsidGrandchild(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	marker := fmt.Sprintf("%d.%d", os.Getpid(), time.Now().UnixNano()%1000000)
	script := `setsid sleep 1` + marker + ` >/dev/null 2>&1 < /dev/null & sleep 0.2; echo '{"jsonrpc":"2.0","method":"hi"}'`
	cmd := exec.Command(tapedeck, "record", "-o", filepath.Join(t.TempDir(), "t.jsonl"), "--", "sh", "-c", script)
	cmd.Stdin = strings.NewReader("")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	running := func() bool { return exec.Command("pgrep", "-f", "sleep 1"+marker).Run() == nil }
	if running() {
		exec.Command("pkill", "-f", "sleep 1"+marker).Run()
		t.Fatal("the setsid grandchild is still running after tapedeck record exited")
	}
}
