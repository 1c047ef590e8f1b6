package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
)

var servingURL = regexp.MustCompile(`at (http://\S+)\n`)

// startReplayHTTP runs "tapedeck replay --listen 127.0.0.1:0 ARGS..." and
// returns the process and the URL it prints.
func startReplayHTTP(t *testing.T, tapedeck string, args ...string) (*mcptest.Process, string) {
	t.Helper()
	argv := append([]string{"replay", "--listen", "127.0.0.1:0"}, args...)
	p := mcptest.Start(t, exec.Command(tapedeck, argv...))
	var u string
	waitFor(t, 15*time.Second, func() error {
		if m := servingURL.FindStringSubmatch(p.Output()); m != nil {
			u = m[1]
			return nil
		}
		if done, err := p.Exited(); done {
			t.Fatalf("tapedeck replay --listen exited: %v\n%s", err, p.Output())
		}
		return fmt.Errorf("no URL in its output:\n%s", p.Output())
	}, "tapedeck replay --listen to print its URL")
	return p, u
}

// interrupt sends SIGINT, as Ctrl-C would, and returns the exit status.
func interrupt(t *testing.T, p *mcptest.Process) int {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatalf("interrupt replay: %v", err)
	}
	var err error
	waitFor(t, 15*time.Second, func() error {
		var done bool
		if done, err = p.Exited(); !done {
			return fmt.Errorf("still running:\n%s", p.Output())
		}
		return nil
	}, "tapedeck replay to exit after SIGINT")
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	return 0
}

// TestReplayHTTPSDKClient serves the go-sdk client's HTTP tapes (2025
// sessions with a GET stream and a server/discover rejected with HTTP 400;
// 2026-07-28 stateless), and two of its stdio tapes, over Streamable HTTP
// with no live server: the client must print what it printed live, and the
// replay exits 0 on SIGINT.
func TestReplayHTTPSDKClient(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	for _, tt := range []struct {
		name  string
		flags []string // as in internal/mcptest/fixtures_test.go
	}{
		{"sdk-everything-http", []string{"--name", "everything", "--roots"}},
		{"sdk-sdkserver-http-stateless", []string{"--name", "sdk", "--roots"}},
		// stdio tapes served over HTTP: the recorded -32601 to
		// server/discover, and a 2025-06-18 initialize, with sessions.
		{"sdk-everything-discover", []string{"--name", "everything"}},
		{"sdk-everything-2025-06-18", []string{"--name", "everything", "--protocol", "2025-06-18"}},
		// A 2026-07-28 stdio tape with concurrent calls: two log messages
		// recorded after both answers, with no stream open (no GET stream
		// in that era), travel on the next request's SSE answer.
		{"sdk-sdkserver", []string{"--name", "sdk", "--roots"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			want, err := os.ReadFile(fixture(t, tt.name+".transcript.txt"))
			if err != nil {
				t.Fatal(err)
			}
			p, url := startReplayHTTP(t, tapedeck, fixture(t, tt.name+".tape.jsonl"))
			got, stderr, err := runPeer(t, nil, append(append([]string{client}, tt.flags...), "--url", url)...)
			if err != nil {
				t.Fatalf("sdkclient --url %s: %v\nstderr:\n%s\nreplay:\n%s", url, err, stderr, p.Output())
			}
			if got != string(want) {
				t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nreplay:\n%s", got, want, p.Output())
			}
			if code := interrupt(t, p); code != 0 {
				t.Fatalf("replay exit status %d, want 0\n%s", code, p.Output())
			}
			if strings.Contains(p.Output(), "never reached the client") {
				t.Fatalf("the replay lost server messages:\n%s", p.Output())
			}
		})
	}
}

// TestReplayHTTPDivergence sends a changed echo argument: the client gets
// the -32090 error over HTTP, the replay prints the mismatch, and exits 1.
func TestReplayHTTPDivergence(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	p, url := startReplayHTTP(t, tapedeck, fixture(t, "sdk-everything-http.tape.jsonl"))
	out, stderr, err := runPeer(t, nil, client, "--name", "everything", "--roots", "--message", "bye", "--steps", "init,tools,echo", "--url", url)
	if err != nil {
		t.Fatalf("sdkclient: %v\n%s", err, stderr)
	}
	mismatch := `request tools/call {"name":"echo","arguments":{"message":"bye"}} did not match next expected tools/call {"name":"echo","arguments":{"message":"hi"}} (tape line 13)`
	if !strings.Contains(out, "echo: echo: rpc error:") || !strings.Contains(out, mismatch) {
		t.Errorf("client output lacks the divergence error:\n%s", out)
	}
	if code := interrupt(t, p); code != 1 {
		t.Errorf("replay exit status %d, want 1", code)
	}
	for _, want := range []string{"tapedeck replay: replay mismatch for server 'everything': " + mismatch, "recorded request never sent by the client: tools/call", "replay diverged from the tape"} {
		if !strings.Contains(p.Output(), want) {
			t.Errorf("replay stderr lacks %q:\n%s", want, p.Output())
		}
	}
}

// TestReplayHTTPGuards checks, against the real binary, the Origin check,
// the recorded HTTP 400 rejection, the session rules and the divergence
// error over HTTP.
func TestReplayHTTPGuards(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	p, url := startReplayHTTP(t, tapedeck, fixture(t, "sdk-everything-http.tape.jsonl"))
	post := func(body string, header ...string) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		return resp, b.String()
	}
	const initialize = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

	resp, body := post(initialize, "Origin", "http://evil.example")
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(body, `origin "http://evil.example" is not allowed`) {
		t.Fatalf("non-loopback Origin: %s %q, want 403", resp.Status, body)
	}
	// The tape opens with the go-sdk client's server/discover probe, which
	// server-everything rejected before initialize.
	resp, body = post(`{"jsonrpc":"2.0","id":0,"method":"server/discover","params":{}}`, "Origin", "http://localhost:6274")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, `"id":null`) || !strings.Contains(body, "Server not initialized") {
		t.Fatalf("server/discover before initialize: %s %q, want the recorded HTTP 400 with id null", resp.Status, body)
	}
	resp, body = post(initialize)
	sid := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != http.StatusOK || sid == "" || !strings.Contains(body, `"protocolVersion":"2025-11-25"`) {
		t.Fatalf("initialize: %s, session %q, body %.200q", resp.Status, sid, body)
	}
	if resp, body = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`); resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "missing Mcp-Session-Id") {
		t.Fatalf("request without the session: %s %q, want 400", resp.Status, body)
	}
	if resp, body = post(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`, "Mcp-Session-Id", "nope"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("request with an unknown session: %s %q, want 404", resp.Status, body)
	}
	if resp, body = post(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"x"}}}`, "Mcp-Session-Id", sid); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"code":-32090`) {
		t.Fatalf("a call the tape did not expect: %s %.300q, want the -32090 error", resp.Status, body)
	}
	if code := interrupt(t, p); code != 1 {
		t.Fatalf("replay exit status %d after a divergence, want 1", code)
	}
}

func TestReplayHTTPRefusesRemote(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"replay", "--listen", "0.0.0.0:0", fixture(t, "mcporter-echo.tape.jsonl")}, strings.NewReader(""), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), `--listen "0.0.0.0:0" is not a loopback address`) {
		t.Fatalf("error %v, want a refusal of the non-loopback address", err)
	}
}

// TestVerifyHTTP drives the real sdkserver over Streamable HTTP (stateless,
// 2026-07-28) with the tape recorded from it: the same server passes, the
// variant whose answer changed fails with the diff.
func TestVerifyHTTP(t *testing.T) {
	tapePath := fixture(t, "sdk-sdkserver-http-stateless.tape.jsonl")
	verify := func(url string) (string, error) {
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), []string{"verify", "--color=never", tapePath, "--url", url}, strings.NewReader(""), &stdout, &stderr)
		return stdout.String() + stderr.String(), err
	}
	out, err := verify(mcptest.StartSDKServerHTTP(t, "--stateless"))
	if err != nil || !strings.Contains(out, "13 calls, 13 passed, 0 failed") || !strings.Contains(out, "PASS logging/setLevel (line 10)") {
		t.Fatalf("verify --url against the same server: %v\n%s", err, out)
	}
	out, err = verify(mcptest.StartSDKServerHTTP(t, "--stateless", "--variant", "B"))
	if !errors.Is(err, replay.ErrDiverged) {
		t.Fatalf("verify --url against the changed server: error %v, want ErrDiverged\n%s", err, out)
	}
	for _, want := range []string{"FAIL tools/call answer (line 30)", "/result/content/0/text:\n      - \"the answer is 42\"\n      + \"the answer is 43\"", "13 calls, 12 passed, 1 failed"} {
		if !strings.Contains(out, want) {
			t.Errorf("verify output lacks %q:\n%s", want, out)
		}
	}
}

// TestVerifyHTTPEverything drives the real server-everything over HTTP with
// sessions: the server/discover rejection, the session, the GET stream
// carrying roots/list (answered from the tape) all match.
func TestVerifyHTTPEverything(t *testing.T) {
	url := mcptest.StartEverythingHTTP(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--color=never", fixture(t, "sdk-everything-http.tape.jsonl"), "--url", url}, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	if err != nil || !strings.Contains(out, "16 calls, 16 passed, 0 failed") || !strings.Contains(out, "PASS tools/call get-roots-list (line 44)") {
		t.Fatalf("verify --url against server-everything: %v\n%s%s", err, out, stderr.String())
	}
}

// TestVerifyNegotiation: a tape recorded over stdio, whose server rejected
// the client's server/discover probe with -32601, verified against the same
// server over HTTP, which rejects it with HTTP 400 and -32000 "Server not
// initialized": both are version negotiation, not a failure.
func TestVerifyNegotiation(t *testing.T) {
	url := mcptest.StartEverythingHTTP(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"verify", "--color=never", fixture(t, "sdk-everything-discover.tape.jsonl"), "--url", url}, strings.NewReader(""), &stdout, &stderr)
	out := stdout.String()
	if err != nil || !strings.Contains(out, "PASS server/discover (line 2)") || !strings.Contains(out, "version negotiation: the recorded server rejected server/discover before initialize, and so did the live one") || !strings.Contains(out, " 0 failed") {
		t.Fatalf("verify --url of a stdio tape against server-everything over HTTP: %v\n%s%s", err, out, stderr.String())
	}
}
