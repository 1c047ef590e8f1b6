package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
)

// TestVerifyTask verifies the task tape recorded from server-everything
// (simulate-research-query: created, 3 polls, tasks/result, a last poll)
// against the live server: the live task id goes into the polls and
// tasks/result, and ids, timestamps and running statuses do not count.
// Without its tasks/result, and with the last poll (recorded completed)
// moved to 300 ms after the previous one, that poll is asked again until
// the live task (4 s) completes. A tape whose task was recorded failed fails on it.
func TestVerifyTask(t *testing.T) {
	peers := mcptest.Peers(t)
	rec, err := os.ReadFile(fixture(t, "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	verify := func(name string, lines []string) (string, error) {
		path := filepath.Join(dir, name+".jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o600); err != nil {
			t.Fatal(err)
		}
		var stdout, stderr bytes.Buffer
		err := run(context.Background(), append([]string{"verify", "--color=never", path, "--"}, peers.EverythingStdio()...), strings.NewReader(""), &stdout, &stderr)
		return stdout.String() + stderr.String(), err
	}
	all := strings.SplitAfter(string(rec), "\n")

	out, err := verify("as-recorded", all)
	if err != nil || !strings.Contains(out, "7 calls, 7 passed, 0 failed") {
		t.Fatalf("the task tape against server-everything: %v\n%s", err, out)
	}

	// Without tasks/result (id 5) and its answer, the last poll (id 6)
	// sent 300 ms after the one before (id 4, at 07.960).
	var polled []string
	for _, l := range all {
		if strings.Contains(l, `"jsonrpc":"2.0","id":5,`) {
			continue
		}
		if strings.Contains(l, `"method":"tasks/get"`) && strings.Contains(l, `"id":6,`) {
			l = strings.Replace(l, `"ts":"2026-11-26T00:16:12.011Z"`, `"ts":"2026-11-26T00:16:08.260Z"`, 1)
			if !strings.Contains(l, "08.260Z") {
				t.Fatalf("the last poll's time was not moved: %s", l)
			}
		}
		polled = append(polled, l)
	}
	if len(polled) != len(all)-2 {
		t.Fatalf("dropping tasks/result left %d of %d lines, want 2 fewer", len(polled), len(all))
	}
	out, err = verify("polled", polled)
	if err != nil || !strings.Contains(out, "6 calls, 6 passed, 0 failed") || !strings.Contains(out, "more until it ended") {
		t.Fatalf("polls only: %v\n%s", err, out)
	}

	failed := make([]string, len(polled))
	for i, l := range polled {
		failed[i] = strings.ReplaceAll(l, `"status":"completed"`, `"status":"failed"`)
	}
	out, err = verify("failed", failed)
	if !errors.Is(err, replay.ErrDiverged) || !strings.Contains(out, "/result/status:") || !strings.Contains(out, `"failed"`) || !strings.Contains(out, "6 calls, 5 passed, 1 failed") {
		t.Fatalf("a task recorded failed, completed live: %v, want ErrDiverged and the status differing\n%s", err, out)
	}
}
