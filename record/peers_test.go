package record_test

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
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

const tapedeckPackage = "github.com/tapedeck/tapedeck/cmd/tapedeck"

// runClient runs the go-sdk test client with args and returns its transcript.
func runClient(t *testing.T, args ...string) string {
	t.Helper()
	bin := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("sdkclient %s: %v\nstderr:\n%s\nstdout:\n%s", strings.Join(args, " "), err, stderr.Bytes(), out)
	}
	return string(out)
}

// tapeSummary checks that a tape reads without warnings and that every
// request on it, in either direction, is paired with its response, and
// returns the methods it holds, counted by direction.
func tapeSummary(t *testing.T, path string) map[string]int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("tape mode %v, want 0600", fi.Mode().Perm())
	}
	x, err := tape.OpenIndex(path, tape.Strict())
	if err != nil {
		t.Fatalf("open tape: %v", err)
	}
	defer x.Close()
	// Error answers with id null that the HTTP proxy tied to a request
	// (_meta.inReplyTo) pair by that instead.
	nullReplies := map[string]bool{}
	nullLines := map[int]bool{}
	for i := 0; i < x.Len(); i++ {
		if e := x.Entry(i); e.Kind == tape.KindResponse && x.Pair(i).Orphan {
			m, err := x.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			v, _ := tape.Decode(m.Raw)
			if id, ok := v.(map[string]any)["_meta"].(map[string]any)["inReplyTo"]; ok && m.ID == "null" {
				nullReplies[fmt.Sprint(id)] = true
				nullLines[m.Line] = true
			}
		}
	}
	for _, w := range x.Warnings() {
		if !nullLines[w.Line] { // the index warns of the id-null answers, rightly
			t.Errorf("tape warning: %v", w)
		}
	}
	methods := map[string]int{}
	for i := 0; i < x.Len(); i++ {
		e, err := x.Message(i)
		if err != nil {
			t.Fatal(err)
		}
		p := x.Pair(i)
		switch e.Kind {
		case tape.KindRequest:
			if (p.Pending || p.Partner < 0) && !nullReplies[string(e.ID)] {
				t.Errorf("seq %d: %s request %s has no response on the tape", i, e.Dir, e.Method)
			}
			methods[string(e.Dir)+" "+e.Method]++
		case tape.KindResponse:
			if (p.Orphan && e.ID != "null") || p.Reordered {
				t.Errorf("seq %d: %s response orphan=%v reordered=%v", i, e.Dir, p.Orphan, p.Reordered)
			}
		case tape.KindNotification, tape.KindLifecycle:
			methods[string(e.Dir)+" "+e.Method]++
		case tape.KindInvalid:
			t.Errorf("seq %d: invalid entry: %s", i, e.Problem)
		}
	}
	return methods
}

func wantMethods(t *testing.T, got map[string]int, want ...string) {
	t.Helper()
	for _, m := range want {
		if got[m] == 0 {
			t.Errorf("tape has no %q; it has %v", m, got)
		}
	}
}

// TestShimEverything records the go-sdk client with server-everything over
// stdio, in both protocol eras: the client's transcript through the shim
// must equal the one without it, and the tape must pair every request.
func TestShimEverything(t *testing.T) {
	peers := mcptest.Peers(t)
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		// The default probes server/discover; server-everything answers with
		// an error and the client falls back to initialize. With --roots the
		// server asks roots/list (a server-to-client request); progress and
		// logging notifications come along.
		{"default", []string{"--roots"}, []string{"send server/discover", "send initialize", "recv roots/list",
			"recv notifications/progress", "recv notifications/message", "send notifications/initialized"}},
		{"2025-06-18", []string{"--protocol", "2025-06-18"}, []string{"send initialize", "recv notifications/progress"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "everything.jsonl")
			server := peers.EverythingStdio()
			direct := runClient(t, append(tc.args, append([]string{"--"}, server...)...)...)
			shimmed := runClient(t, append(tc.args, append([]string{"--", shim, "record", "-o", path, "--server", "everything", "--"}, server...)...)...)
			if direct != shimmed {
				t.Errorf("transcript through the shim differs.\nthrough the shim:\n%s\ndirect:\n%s", shimmed, direct)
			}
			m := tapeSummary(t, path)
			wantMethods(t, m, append(tc.want, "send tools/call", "lifecycle $transport/start", "lifecycle $transport/close")...)
		})
	}
}

// TestShimSDKServer records the go-sdk client with the go-sdk server, which
// speaks the 2026-07-28 era: server/discover succeeds, no initialize.
func TestShimSDKServer(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	for _, proto := range []string{"", "2025-06-18"} {
		t.Run("protocol="+proto, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "sdk.jsonl")
			args := []string{"--roots"}
			if proto != "" {
				args = append(args, "--protocol", proto)
			}
			direct := runClient(t, append(args, "--", server)...)
			shimmed := runClient(t, append(args, "--", shim, "record", "-o", path, "--", server)...)
			if direct != shimmed {
				t.Errorf("transcript through the shim differs.\nthrough the shim:\n%s\ndirect:\n%s", shimmed, direct)
			}
			m := tapeSummary(t, path)
			if proto == "" {
				wantMethods(t, m, "send server/discover", "send tools/call")
				if m["send initialize"] != 0 {
					t.Errorf("2026-07-28 session sent initialize: %v", m)
				}
			} else {
				wantMethods(t, m, "send initialize", "recv roots/list", "send tools/call")
			}
		})
	}
}

// TestStdioInProcess drives record.Stdio in-process: a go-sdk client talks
// through pipes to the shim, which runs the go-sdk server.
func TestStdioInProcess(t *testing.T) {
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	clientOut, shimIn := io.Pipe() // client writes, shim reads
	shimOut, clientIn := io.Pipe() // shim writes, client reads
	var tp bytes.Buffer
	s := &record.Stdio{Command: server, Tape: &tp, Server: "sdk", Version: "test"}
	done := make(chan error, 1)
	go func() {
		st, err := s.Run(context.Background(), clientOut, clientIn, io.Discard)
		clientIn.Close()
		if err == nil && st.Code != 0 {
			t.Errorf("server status %v", st)
		}
		done <- err
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "inproc", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: shimOut, Writer: shimIn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "in-process"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "in-process") {
		t.Errorf("echo result %+v", res.Content)
	}
	cs.Close()
	shimIn.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(tp.Bytes(), []byte(`"in-process"`)) || !bytes.Contains(tp.Bytes(), []byte(`"version":"test"`)) {
		t.Errorf("tape lacks the call or the start record:\n%s", tp.Bytes())
	}
}

// TestShimRedacts records a session whose messages carry a secret with
// redaction rules: the client still sees the secret (the forwarded bytes are
// never altered), the tape never holds it, and redacted lines say so.
func TestShimRedacts(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	path := filepath.Join(t.TempDir(), "secret.jsonl")
	const secret = "sk-live-abc123xyz"
	args := []string{"--protocol", "2025-06-18", "--message", "token " + secret, "--steps", "init,tools,echo"}
	direct := runClient(t, append(args, "--", server)...)
	shimmed := runClient(t, append(args, "--", shim, "record", "-o", path,
		"--redact-value", `sk-live-[a-z0-9]+`, "--redact-key", "clientInfo", "--redact-path", "result.serverInfo.version", "--", server)...)
	if direct != shimmed || !strings.Contains(shimmed, secret) {
		t.Errorf("the client must see the unredacted echo.\nthrough the shim:\n%s\ndirect:\n%s", shimmed, direct)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(data, []byte(secret)) {
		t.Errorf("tape holds the secret:\n%s", data)
	}
	for _, want := range []string{`"token [REDACTED]"`, `"redacted":["params.arguments.message"]`, `"clientInfo":{"name":"[REDACTED]"`, `"version":"[REDACTED]"`} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("tape lacks %s:\n%s", want, data)
		}
	}
	tapeSummary(t, path)
}

// TestShimEndsLingeringServer closes stdin on server-everything while it
// lingers (a client that declared roots and never answers): the shim must
// end it with SIGTERM after the grace period, exit with its status, and
// leave no process behind.
func TestShimEndsLingeringServer(t *testing.T) {
	peers := mcptest.Peers(t)
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	path := filepath.Join(t.TempDir(), "linger.jsonl")
	cmd := exec.Command(shim, append([]string{"record", "--grace", "300ms", "--kill-after", "300ms", "-o", path, "--"}, peers.EverythingStdio()...)...)
	cmd.Stdin = strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"mute","version":"1"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/initialized"}` + "\n")
	start := time.Now()
	out, err := cmd.Output()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 143 {
		t.Fatalf("tapedeck: %v, want exit status 143 (the server's SIGTERM)\n%s", err, out)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("took %v; the grace period is 300ms", d)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(`"reason":"stdin closed","signal":"SIGTERM"`)) {
		t.Errorf("close record lacks the reason and signal:\n%s", data)
	}
	var pid int
	if _, err := fmt.Sscanf(string(data[bytes.Index(data, []byte(`"pid":`))+6:]), "%d", &pid); err != nil {
		t.Fatal(err)
	}
	waitGone(t, pid)
}
