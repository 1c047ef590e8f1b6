package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
)

func fixture(t *testing.T, name string) string {
	return filepath.Join(mcptest.RepoRoot(t), "testdata", name)
}

// runPeer runs a real client to completion and returns its stdout, stderr
// and error.
func runPeer(t *testing.T, env []string, argv ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = t.TempDir()
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestReplaySDKClient replays go-sdk client tapes, recorded against
// server-everything and sdkserver in both protocol eras, with the server
// absent: the client must print what it printed live.
func TestReplaySDKClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tests := []struct {
		name  string
		flags []string
	}{
		{"sdk-everything-discover", []string{"--name", "everything"}}, // server/discover probe, fallback to initialize
		{"sdk-everything-2025-06-18", []string{"--name", "everything", "--protocol", "2025-06-18"}},
		{"sdk-sdkserver", []string{"--name", "sdk", "--roots"}}, // roots/list from the server
		// an HTTP tape over stdio: the HTTP 400 "id":null rejection of
		// server/discover is answered with the live id
		{"sdk-everything-http", []string{"--name", "everything", "--roots"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want, err := os.ReadFile(fixture(t, tt.name+".transcript.txt"))
			if err != nil {
				t.Fatal(err)
			}
			argv := append([]string{client}, tt.flags...)
			argv = append(argv, "--", tapedeck, "replay", fixture(t, tt.name+".tape.jsonl"))
			got, stderr, err := runPeer(t, nil, argv...)
			if err != nil {
				t.Fatalf("sdkclient over tapedeck replay: %v\nstderr:\n%s", err, stderr)
			}
			if got != string(want) {
				t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr)
			}
		})
	}
}

// TestReplayAcrossEras serves a tape recorded by a client that probed
// server/discover (and fell back to initialize) to clients that start with
// initialize: the go-sdk client forced to 2025-06-18 replays the whole
// session in strict mode, and mcporter's echo call in keyed mode.
func TestReplayAcrossEras(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tapePath := fixture(t, "sdk-everything-discover.tape.jsonl")
	want, err := os.ReadFile(fixture(t, "sdk-everything-discover.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := runPeer(t, nil, client, "--name", "everything", "--protocol", "2025-06-18", "--", tapedeck, "replay", tapePath)
	if err != nil {
		t.Fatalf("sdkclient --protocol 2025-06-18 over the discover-era tape: %v\nstderr:\n%s", err, stderr)
	}
	// Only the negotiated version may differ: the client asked for 2025-06-18.
	if strings.Replace(got, "protocol 2025-06-18", "protocol 2025-11-25", 1) != string(want) {
		t.Fatalf("transcript differs\ngot:\n%s\nwant:\n%s", got, want)
	}
	peers := mcptest.Peers(t)
	out, stderr, err := runPeer(t, []string{"HOME=" + t.TempDir()}, peers.Mcporter, "call", "--stdio",
		tapedeck+" replay --match keyed "+tapePath, "--name", "everything", "echo", "message:hi")
	if err != nil || strings.TrimSpace(out) != "Echo: hi" {
		t.Fatalf("mcporter over the discover-era tape: %v, stdout %q\nstderr:\n%s", err, out, stderr)
	}
}

// TestReplayMcporter serves mcporter's own recordings to the same mcporter
// command, and checks a changed argument gets the divergence error.
func TestReplayMcporter(t *testing.T) {
	peers := mcptest.Peers(t)
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	home := t.TempDir()
	call := func(tapeName string, args ...string) (string, string, error) {
		argv := append([]string{peers.Mcporter, "call", "--stdio", tapedeck + " replay " + fixture(t, tapeName), "--name", "everything"}, args...)
		return runPeer(t, []string{"HOME=" + home}, argv...)
	}
	for _, tt := range []struct {
		tape string
		args []string
		want string
	}{
		{"mcporter-echo.tape.jsonl", []string{"echo", "message:hi"}, "Echo: hi"},
		{"mcporter-sum.tape.jsonl", []string{"get-sum", "a:2", "b:3"}, "The sum of 2 and 3 is 5."},
	} {
		out, stderr, err := call(tt.tape, tt.args...)
		if err != nil || strings.TrimSpace(out) != tt.want {
			t.Errorf("mcporter call %v over replay of %s: %v, stdout %q, want %q\nstderr:\n%s", tt.args, tt.tape, err, out, tt.want, stderr)
		}
	}
	out, stderr, err := call("mcporter-echo.tape.jsonl", "echo", "message:bye")
	if err == nil {
		t.Fatalf("mcporter call with a changed argument succeeded: %q", out)
	}
	for _, want := range []string{"-32090", `request tools/call {"name":"echo","arguments":{"message":"bye"}} did not match next expected tools/call {"name":"echo","arguments":{"message":"hi"}}`} {
		if !strings.Contains(out+stderr, want) {
			t.Errorf("mcporter's output lacks %q:\n%s%s", want, out, stderr)
		}
	}
}

// TestReplayCommandReport drives the replay command in process with a
// client whose second call changed: the error names both sides, stderr and
// the JSON report say so, and the exit status is 1.
func TestReplayCommandReport(t *testing.T) {
	report := filepath.Join(t.TempDir(), "report.json")
	in := strings.Join([]string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}`,
	}, "\n") + "\n"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"replay", "--report", report, fixture(t, "mcporter-echo.tape.jsonl")}, strings.NewReader(in), &stdout, &stderr)
	if code := exitCode(err, &stderr); code != 1 || !errors.Is(err, replay.ErrDiverged) {
		t.Fatalf("exit status %d, error %v; want 1 and ErrDiverged", code, err)
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"protocolVersion":"2025-06-18"`) || !strings.Contains(lines[1], `"id":1,"error":{"code":-32090`) {
		t.Fatalf("stdout:\n%s", stdout.String())
	}
	for _, want := range []string{`replay mismatch for server 'everything': request tools/call {"name":"echo","arguments":{"message":"bye"}} did not match next expected tools/call`, "recorded request never sent by the client: tools/call", "1 divergence, 1 unused recorded request"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr.String())
		}
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if len(rep.Divergences) != 1 || rep.Divergences[0].Diff[0].Path != "/params/arguments/message" || len(rep.Unused) != 1 || rep.Unused[0].Line != 5 {
		t.Fatalf("report %s", b)
	}
}

func TestReplayMultiServerNeedsServer(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"replay", fixture(t, "sdk-multi-server.tape.jsonl")}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `the tape holds 2 servers ("everything", "sdk"): choose one with --server`) {
		t.Fatalf("error %v", err)
	}
}

func TestParseSize(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"1048576", 1 << 20, true},
		{"512KiB", 512 << 10, true},
		{"64MiB", 64 << 20, true},
		{"1GiB", 1 << 30, true},
		{"0", 0, true},
		{"-1", -1, true},
		{"-1MiB", 0, false},
		{"-2", 0, false},
		{"64MB", 0, false},
		{"lots", 0, false},
		{"8589934592GiB", 0, false}, // 2^63 bytes: overflowed to "no limit"
		{"9223372036854775807", 1<<63 - 1, true},
		{"8589934591GiB", 8589934591 << 30, true},
	} {
		got, err := parseSize(tt.in)
		if (err == nil) != tt.ok || got != tt.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tt.in, got, err, tt.want, tt.ok)
		}
	}
}

// The replay binary, started over pipes as a client starts a stdio server
// (its stdin a blocking pipe, which replay makes non-blocking), answers,
// and ends on SIGTERM while the client keeps stdin open and sends nothing.
func TestReplayStdioStopsOnSignal(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		cmd := exec.Command(tapedeck, "replay", "--match", "keyed", fixture(t, "sdk-sdkserver.tape.jsonl"))
		pr, stdin, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		cmd.Stdin = pr // the child shares the pipe's file description, and its O_NONBLOCK flag
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(stdin, `{"jsonrpc":"2.0","id":"p","method":"ping"}`+"\n"); err != nil {
			t.Fatal(err)
		}
		answer, err := bufio.NewReader(stdout).ReadString('\n')
		if err != nil || !strings.Contains(answer, `"id":"p","result":{}`) {
			t.Fatalf("ping answered %q, %v", answer, err)
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: tapedeck replay still running 5 s after the signal, its stdin open and idle\nstderr:\n%s", sig, stderr.String())
		}
		// Whoever shares the pipe after us must find it blocking again.
		var flags uintptr
		rc, err := pr.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) { flags, _, _ = syscall.Syscall(syscall.SYS_FCNTL, fd, syscall.F_GETFL, 0) })
		if flags&syscall.O_NONBLOCK != 0 {
			t.Errorf("%v: stdin's pipe left non-blocking after the replay exited", sig)
		}
		stdin.Close()
		pr.Close()
	}
}

// A client that closed replay's stderr (mcp-go's stdio client does, before
// it waits for the child) still gets the report written and exit status 1:
// replay died of SIGPIPE while printing the unused requests, report unwritten.
func TestReplayReportSurvivesClosedStderr(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	report := filepath.Join(t.TempDir(), "report.json")
	cmd := exec.Command(tapedeck, "replay", "--report", report, fixture(t, "mcporter-echo.tape.jsonl"))
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"bye"}}}` + "\n")
	cmd.Stdout = io.Discard
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	pr.Close() // stderr's reader is gone before replay writes a byte
	cmd.Stderr = pw
	err = cmd.Run()
	pw.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("replay ended with %v; want exit status 1 (diverged), not a signal", err)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	var rep replay.Report
	if err := json.Unmarshal(b, &rep); err != nil || len(rep.Divergences) != 1 {
		t.Fatalf("report %s, %v; want one divergence", b, err)
	}
}

// Unused requests of a 2026-07-28 tape are shown without their volatile
// params._meta, which used to push the tool's name past the cut.
func TestCompactParamsDropsMeta(t *testing.T) {
	p := `{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"` + strings.Repeat("c", 200) + `","version":"1"}},"name":"get-sum","arguments":{"a":1}}`
	if got := compactParams(json.RawMessage(p)); got != `{"name":"get-sum","arguments":{"a":1}}` {
		t.Errorf("compactParams = %s", got)
	}
}

// The debugger without a terminal says so (it failed with an epoll error).
func TestOpenNeedsTerminal(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	cmd := exec.Command(tapedeck, "open", fixture(t, "mcporter-sum.tape.jsonl"))
	cmd.Stdin = devnull
	out, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "needs a terminal, and its input is not one") {
		t.Errorf("open </dev/null: %v, %s; want a message that it needs a terminal", err, out)
	}
}

// TestReplayKeyedOutOfOrder replays the go-sdk client's server-everything
// tape in keyed mode to the same client running its steps in another order:
// the error step's calls, recorded after the progress call, come first. Each
// recorded notification goes out with the call it followed: the progress
// call gets its three notifications (with its live token), and none arrive
// before it (sdkclient reports progress that came early).
func TestReplayKeyedOutOfOrder(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	live, err := os.ReadFile(fixture(t, "sdk-everything-2025-06-18.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []string{"init", "tools", "error", "progress"}
	var want strings.Builder
	for _, step := range steps {
		for _, l := range strings.SplitAfter(string(live), "\n") {
			if strings.HasPrefix(l, "[everything] "+step+":") {
				want.WriteString(l)
			}
		}
	}
	report := filepath.Join(t.TempDir(), "report.json")
	got, stderr, err := runPeer(t, nil, client, "--name", "everything", "--protocol", "2025-06-18", "--steps", strings.Join(steps, ","),
		"--", tapedeck, "replay", "--match", "keyed", "--report", report, fixture(t, "sdk-everything-2025-06-18.tape.jsonl"))
	if err != nil {
		t.Fatalf("sdkclient over tapedeck replay --match keyed: %v\nstderr:\n%s", err, stderr)
	}
	// The steps not run leave recorded calls unused: keyed replay exits 1,
	// which the client reports on close (the report below says why).
	got = strings.Replace(got, "[everything] close: exit status 1\n", "", 1)
	if got != want.String() {
		t.Fatalf("replayed transcript differs from the live one's lines for %v\ngot:\n%s\nwant:\n%s\nstderr:\n%s", steps, got, want.String(), stderr)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if len(rep.Divergences) != 0 || rep.Matched != rep.Requests {
		t.Fatalf("report: %d divergences, %d of %d requests matched; want none and all\n%s", len(rep.Divergences), rep.Matched, rep.Requests, b)
	}
}

// TestReplayWritesServerStderr: a stdio replay writes the line the
// recorded server (server-everything) wrote on its stderr, as a host that
// shows a server's log saw it, before the replay's own report.
func TestReplayWritesServerStderr(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}` + "\n"
	var stdout, stderr bytes.Buffer
	_ = run(context.Background(), []string{"replay", fixture(t, "ts-everything-task.tape.jsonl")}, strings.NewReader(in), &stdout, &stderr)
	if !strings.Contains(stdout.String(), `"serverInfo":{"name":"mcp-servers/everything"`) {
		t.Fatalf("no initialize answer on stdout:\n%s", stdout.String())
	}
	log, report := stderr.String(), strings.Index(stderr.String(), "recorded request never sent")
	if i := strings.Index(log, "Starting default (STDIO) server...\n"); i < 0 || report >= 0 && i > report {
		t.Fatalf("stderr lacks the recorded server's line before the report:\n%s", log)
	}
}
