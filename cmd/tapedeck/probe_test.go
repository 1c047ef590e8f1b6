package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// v2Client runs the 2.x TypeScript SDK's client script (internal/mcptest/ts/
// v2client.mjs, pinned to 2026-07-28) against the stdio server argv and
// returns its transcript and stderr.
func v2Client(t *testing.T, argv ...string) (string, string) {
	t.Helper()
	peers := mcptest.Peers(t)
	script := filepath.Join(peers.Root, "internal", "mcptest", "ts", "v2client.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")}, append([]string{peers.Node, script}, argv...)...)
	if err != nil {
		t.Fatalf("v2 TypeScript client %v: %v\n%s%s", argv, err, out, stderr)
	}
	return out, stderr
}

// The 2026-07-28 TypeScript client starts the server command twice: once
// for its server/discover probe (then killed), once for the session. Both
// runs of "tapedeck record -o TAPE" go onto the one tape as two episodes,
// without --append, and "tapedeck replay TAPE", started twice the same
// way, serves each process its episode, strict and keyed: the client's
// transcript is the live one each time.
func TestRecordReplayProbeRespawnV2(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	server := []string{peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "v2server.mjs")}
	live, _ := v2Client(t, server...)
	if !strings.HasPrefix(live, "init: server v2-server 2.4.0\n") || !strings.Contains(live, "add: 5") {
		t.Fatalf("the live session did not run its script:\n%s", live)
	}
	tapePath := filepath.Join(t.TempDir(), "v2.jsonl")
	through, _ := v2Client(t, append([]string{tapedeck, "record", "-o", tapePath, "--"}, server...)...)
	if through != live {
		t.Fatalf("through the recorder:\n%s\nlive:\n%s", through, live)
	}
	x, err := tape.OpenIndex(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	eps := tape.Episodes(x, "v2server")
	x.Close()
	if len(eps) != 2 || !eps[0].ProbeOnly || eps[1].ProbeOnly {
		t.Fatalf("episodes of v2server: %+v; want a probe-only one, then the session", eps)
	}
	for _, mode := range []string{"strict", "keyed"} {
		replayed, stderr := v2Client(t, tapedeck, "replay", "--match", mode, tapePath)
		if replayed != live {
			t.Errorf("replay --match %s:\n%s\nlive:\n%s\nstderr:\n%s", mode, replayed, live, stderr)
		}
	}

	// A finished session is not a probe: a third run is refused, and the
	// tape is left as it was.
	before, err := os.ReadFile(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runPeer(t, nil, append([]string{tapedeck, "record", "-o", tapePath, "--"}, server...)...)
	if err == nil || !strings.Contains(stderr, "already exists (its last episode of server \"v2server\" is not a server/discover probe)") {
		t.Errorf("recording onto a finished session: err %v, stderr %q; want the tape refused", err, stderr)
	}
	if after, _ := os.ReadFile(tapePath); string(after) != string(before) {
		t.Errorf("the refused run changed the tape")
	}
}
