package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/internal/proc"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/upstream"
)

// TestVerifySDKServer drives the real sdkserver with a tape recorded from
// it: the same server passes; a variant whose answer changed fails with the
// diff and a JUnit failure, unless the changed field is ignored.
func TestVerifySDKServer(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	tapePath := fixture(t, "sdk-sdkserver.tape.jsonl")
	verify := func(flags []string, serverArgs ...string) (string, string, error) {
		args := append([]string{"verify"}, flags...)
		args = append(append(args, tapePath, "--", server), serverArgs...)
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
		return stdout.String(), stderr.String(), err
	}

	out, stderr, err := verify(nil)
	if err != nil || !strings.Contains(out, "13 calls, 13 passed, 0 failed") {
		t.Fatalf("verify against the same server: %v\n%s%s", err, out, stderr)
	}

	junit := filepath.Join(t.TempDir(), "verify.xml")
	out, _, err = verify([]string{"--junit", junit, "--color=never"}, "--variant", "B")
	if !errors.Is(err, replay.ErrDiverged) || exitCode(err, &bytes.Buffer{}) != 1 {
		t.Fatalf("verify against the changed server: error %v, want ErrDiverged and exit status 1\n%s", err, out)
	}
	for _, want := range []string{"FAIL tools/call answer (line 30)", "/result/content/0/text:\n      - \"the answer is 42\"\n      + \"the answer is 43\"", "13 calls, 12 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[") {
		t.Errorf("--color=never output has escape codes")
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `tests="13" failures="1"`) || !strings.Contains(string(x), `<failure message="1 differences from the recorded response">`) {
		t.Fatalf("JUnit report:\n%s", x)
	}

	out, _, err = verify([]string{"--ignore", "result.content[0].text", "--color=always"}, "--variant", "B")
	if err != nil || !strings.Contains(out, "\x1b[32mPASS\x1b[0m tools/call answer") {
		t.Fatalf("verify with --ignore of the changed field: %v\n%s", err, out)
	}
}

// logConn records the order of what is sent and received.
type logConn struct {
	upstream.Conn
	mu  sync.Mutex
	log []string
}

func (c *logConn) Send(ctx context.Context, msg []byte) error {
	c.mu.Lock()
	c.log = append(c.log, "send "+string(msg))
	c.mu.Unlock()
	return c.Conn.Send(ctx, msg)
}

func (c *logConn) Recv(ctx context.Context) ([]byte, error) {
	msg, err := c.Conn.Recv(ctx)
	c.mu.Lock()
	c.log = append(c.log, "recv "+string(msg))
	c.mu.Unlock()
	return msg, err
}

// index returns the position of the first entry holding all of parts.
func (c *logConn) index(parts ...string) int {
	for i, l := range c.log {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(l, p)
		}
		if all {
			return i
		}
	}
	return -1
}

// TestVerifyConcurrent drives the real sdkserver with its tape, whose
// client called slow and then echo "fast" before slow answered: with
// --concurrent the echo goes out before slow's answer comes back, and
// every call still passes; by default it waits.
func TestVerifyConcurrent(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	tapePath := fixture(t, "sdk-sdkserver.tape.jsonl")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--concurrent", "--color=never", tapePath, "--", server}, strings.NewReader(""), &stdout, &stderr)
	if err != nil || !strings.Contains(stdout.String(), "13 calls, 13 passed, 0 failed") {
		t.Fatalf("verify --concurrent: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if i, j := strings.Index(stdout.String(), "tools/call slow (line 20)"), strings.Index(stdout.String(), "tools/call echo (line 21)"); i < 0 || j < 0 {
		t.Fatalf("verify --concurrent output lacks the concurrent calls:\n%s", stdout.String())
	}

	x, err := tape.OpenIndex(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for _, concurrent := range []bool{true, false} {
		p, err := proc.Start(proc.Spec{Command: server})
		if err != nil {
			t.Fatal(err)
		}
		stdio := upstream.NewStdioConn(p.Stdin, p.Stdout)
		conn := &logConn{Conn: stdio}
		rep, err := upstream.Verify(context.Background(), x, conn, upstream.VerifyOptions{Concurrent: concurrent, Timeout: 10 * time.Second}, nil)
		stdio.Close()
		p.Stop(2*time.Second, 2*time.Second)
		if err != nil || rep.Err() != nil {
			t.Fatalf("concurrent=%v: %v %v", concurrent, err, rep.Err())
		}
		sentFast := conn.index("send ", `"message":"fast"`)
		slowDone := conn.index("recv ", "slept 400 ms")
		if sentFast < 0 || slowDone < 0 {
			t.Fatalf("concurrent=%v: the exchange lacks echo fast or slow's answer:\n%s", concurrent, strings.Join(conn.log, "\n"))
		}
		if (sentFast < slowDone) != concurrent {
			t.Errorf("concurrent=%v: echo fast sent at %d, slow answered at %d:\n%s", concurrent, sentFast, slowDone, strings.Join(conn.log, "\n"))
		}
	}
}

// A server that exits at once is reported as such: its exit status and the
// last lines of its stderr, not "broken pipe" or "EOF". The server writes
// far more stderr than is kept, while verify reads it (a data race on an
// unguarded buffer under -race).
func TestVerifyServerExits(t *testing.T) {
	tapePath := fixture(t, "sdk-sdkserver.tape.jsonl")
	script := `i=0; while [ $i -lt 3000 ]; do echo "starting: line $i of the banner" >&2; i=$((i+1)); done; echo "fatal: no config file" >&2; exit 3`
	out, errOut, code := runCLI(t, "verify", tapePath, "--", "sh", "-c", script)
	if code != 1 {
		t.Fatalf("exit status %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{"the server exited (exit status 3)", "the last lines of its stderr:", "starting: line 2999 of the banner", "fatal: no config file"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	for _, bad := range []string{"broken pipe", "EOF", "starting: line 0 of"} {
		if strings.Contains(errOut, bad) {
			t.Errorf("stderr holds %q:\n%.2000s", bad, errOut)
		}
	}
}

// A tape with no client requests for the chosen server is an error naming
// the servers that have some, not "0 calls, 0 passed".
func TestVerifyNoRequestsForServer(t *testing.T) {
	rec, err := os.ReadFile(fixture(t, "sdk-sdkserver.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	quiet := `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"quiet","ts":"2026-05-16T12:00:00.000Z"}}` + "\n"
	both := writeFile(t, "both.jsonl", quiet+string(rec))
	out, errOut, code := runCLI(t, "verify", "--server", "quiet", both, "--", "true")
	if code != 1 || !strings.Contains(errOut, `the tape holds no client requests for server 'quiet': it holds requests for "sdk" (13)`) {
		t.Errorf("--server quiet: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if strings.Contains(out, "0 calls") {
		t.Errorf("--server quiet printed a summary of nothing:\n%s", out)
	}
	alone := writeFile(t, "quiet.jsonl", quiet)
	out, errOut, code = runCLI(t, "verify", alone, "--", "true")
	if code != 1 || !strings.Contains(errOut, `the tape holds no client requests for server 'quiet': it holds none for any server`) {
		t.Errorf("a tape of one quiet server: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// Calls the tape holds no answer to (cancelled by the recorded client, or
// never answered) are sent but not checked: SKIP with the reason, and
// <skipped> in JUnit, where they printed PASS "0s, recorded 0s".
func TestVerifySkipsUnansweredCalls(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	b, err := os.ReadFile(fixture(t, "sdk-sdkserver.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	call := func(id int, msg string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"message":%q}},"_meta":{"dir":"send","server":"sdk","ts":"2026-11-22T14:43:05.000Z"}}`, id, msg)
	}
	extra := []string{
		call(100, "cancelled"),
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":100,"reason":"user"},"_meta":{"dir":"send","server":"sdk","ts":"2026-11-22T14:43:05.001Z"}}`,
		call(101, "unanswered"),
	}
	last := len(lines) - 1 // $transport/close
	lines = append(lines[:last:last], append(extra, lines[last])...)
	path := writeFile(t, "skips.jsonl", strings.Join(lines, "\n")+"\n")
	junit := filepath.Join(t.TempDir(), "verify.xml")
	var stdout, stderr bytes.Buffer
	err = run(context.Background(), []string{"verify", "--junit", junit, "--color=never", path, "--", server}, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	if err != nil {
		t.Fatalf("verify: %v\n%s%s", err, out, stderr.String())
	}
	for _, want := range []string{
		"SKIP tools/call echo (line 36)  the recorded client cancelled it: nothing to compare",
		"SKIP tools/call echo (line 38)  the recorded server never answered it: nothing to compare",
		"15 calls, 13 passed, 0 failed, 2 skipped",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(x), `skipped="2"`) || strings.Count(string(x), "<skipped message=") != 2 {
		t.Errorf("JUnit report lacks the skipped calls:\n%s", x)
	}
}

// verify --update writes the live answers that differed into a new tape,
// every other byte as recorded; --in-place does it to the tape and keeps
// a .bak. The new tape then verifies clean against the changed server.
func TestVerifyUpdate(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	orig, err := os.ReadFile(fixture(t, "sdk-sdkserver.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	tapePath := filepath.Join(dir, "golden.jsonl")
	if err := os.WriteFile(tapePath, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	updated := filepath.Join(dir, "updated.jsonl")
	_, errOut, code := runCLI(t, "verify", "--update", updated, tapePath, "--", server, "--variant", "B")
	if code != 0 || !strings.Contains(errOut, "with 1 new answer from the live server") {
		t.Fatalf("--update: exit %d: %s", code, errOut)
	}
	got, _ := os.ReadFile(updated)
	a, b := strings.Split(string(orig), "\n"), strings.Split(string(got), "\n")
	if len(a) != len(b) {
		t.Fatalf("the updated tape has %d lines, the tape %d", len(b), len(a))
	}
	changed := 0
	for i := range a {
		if a[i] != b[i] {
			changed++
			if !strings.Contains(b[i], "the answer is 43") || !strings.Contains(b[i], `"_meta":{"dir":"recv"`) {
				t.Errorf("line %d: %s", i+1, b[i])
			}
		}
	}
	if changed != 1 {
		t.Errorf("%d lines changed, want the one answer", changed)
	}
	if out, _, code := runCLI(t, "verify", updated, "--", server, "--variant", "B"); code != 0 || !strings.Contains(out, "13 calls, 13 passed") {
		t.Errorf("the updated tape against the changed server: exit %d\n%s", code, out)
	}
	if _, errOut, code := runCLI(t, "verify", "--in-place", tapePath, "--", server, "--variant", "B"); code != 0 {
		t.Fatalf("--in-place: exit %d %s", code, errOut)
	}
	if bak, _ := os.ReadFile(tapePath + ".bak"); string(bak) != string(orig) {
		t.Error("--in-place did not keep the tape as .bak")
	}
	if now, _ := os.ReadFile(tapePath); string(now) != string(got) {
		t.Error("--in-place wrote another tape than --update")
	}
}
