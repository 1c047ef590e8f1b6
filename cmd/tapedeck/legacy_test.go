package main

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// startTapedeck starts the tapedeck binary with args and waits for the URL
// it prints on stderr after the text "at" or "proxying"; it is stopped with
// SIGINT at cleanup, and must then exit 0.
func startTapedeck(t *testing.T, bin string, args ...string) (url string, stop func() string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen strings.Builder
	found := make(chan string, 1)
	done := make(chan struct{})
	go func() {
		defer close(done)
		re := regexp.MustCompile(`(?:proxying|at) (http://127\.0\.0\.1:\d+/\S*)`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	stopped := false
	stop = func() string {
		if stopped {
			return ""
		}
		stopped = true
		cmd.Process.Signal(syscall.SIGINT)
		// Read stderr to its end before Wait, which closes the pipe once
		// the process has exited: waiting first lost the last lines the
		// process wrote (a replay's rule lines, once in CI).
		select {
		case <-done:
		case <-time.After(30 * time.Second):
		}
		err := cmd.Wait()
		<-done
		if err != nil {
			t.Errorf("tapedeck %s: %v\n%s", args[0], err, seen.String())
		}
		return seen.String()
	}
	t.Cleanup(func() { stop() })
	select {
	case url = <-found:
		return url, stop
	case <-done:
		t.Fatalf("tapedeck %s exited:\n%s", strings.Join(args, " "), seen.String())
	case <-time.After(15 * time.Second):
		t.Fatalf("tapedeck %s printed no URL in 15 s", strings.Join(args, " "))
	}
	return "", stop
}

// A legacy HTTP+SSE session (2024-11-05) round-trips: recorded through
// tapedeck's proxy from server-everything, replayed with the server gone to
// the go-sdk's legacy client, which prints what it printed live, run after
// run (GET /sse used to be a 404).
func TestLegacySSERoundTrip(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	upstream := mcptest.StartEverythingSSE(t)
	direct := mcptest.LegacyTranscript(t, upstream)

	tapePath := filepath.Join(t.TempDir(), "legacy.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
	if through := mcptest.LegacyTranscript(t, proxied); through != direct {
		t.Fatalf("through the recorder:\n%s\ndirect:\n%s", through, direct)
	}
	stopRecord()

	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
	if !strings.HasSuffix(replayed, "/sse") {
		t.Errorf("replay serves a legacy tape at %s, want the /sse stream", replayed)
	}
	for run := 1; run <= 2; run++ {
		if got := mcptest.LegacyTranscript(t, replayed); got != direct {
			t.Errorf("run %d against the replay:\n%s\nlive:\n%s", run, got, direct)
		}
	}
	// verify drives the live legacy server, and the replay, with the tape
	// (it failed with a bare "HTTP 404" posting to /sse).
	for _, url := range []string{upstream, replayed} {
		var stdout, stderr strings.Builder
		err := run(context.Background(), []string{"verify", "--color=never", tapePath, "--url", url}, strings.NewReader(""), &stdout, &stderr)
		if err != nil || !strings.Contains(stdout.String(), " 0 failed") {
			t.Errorf("verify --url %s: %v\n%s%s", url, err, stdout.String(), stderr.String())
		}
	}
	if out := stopReplay(); strings.Contains(out, "mismatch") {
		t.Errorf("replay reported divergences:\n%s", out)
	}
}

// TestLegacySSEProgressTS: the TypeScript SDK's client over the legacy
// HTTP+SSE transport, recorded from server-everything (a call with 3
// progress notifications), replayed at the default speed, three runs:
// each sees the progress it saw live (or more: see sameExceptProgress).
// Issue 21 reported the SDK losing every notification there (answer and
// notifications in one burst); this edge flushes each event on its own
// and the loss did not reproduce: the test guards it.
func TestLegacySSEProgressTS(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	upstream := mcptest.StartEverythingSSE(t)
	tapePath := filepath.Join(t.TempDir(), "legacy.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
	live := tsClient(t, "--sse", proxied)
	stopRecord()
	if !strings.Contains(live, "progress: 1/3") {
		t.Fatalf("the live run lacks its progress:\n%s", live)
	}
	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
	for run := 1; run <= 3; run++ {
		// The live client may lose the last notification to the SDK's race
		// (the tape has it): the replay's progress may hold more.
		if got := tsClient(t, "--sse", replayed); !sameExceptProgress(live, got) {
			t.Errorf("run %d against the replay:\n%s\nlive:\n%s", run, got, live)
		}
	}
	if out := stopReplay(); strings.Contains(out, "mismatch") {
		t.Errorf("replay reported divergences:\n%s", out)
	}
}
