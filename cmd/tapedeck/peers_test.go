package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// TestStatsOnLiveMcporterRecording records a session with mcporter 0.12.3
// itself, against the real server-everything, and checks what stats makes
// of it: every request paired, the notifications counted, nothing invalid.
func TestStatsOnLiveMcporterRecording(t *testing.T) {
	peers := mcptest.Peers(t)
	home := t.TempDir()
	cmd := exec.Command(peers.Mcporter, "record", "live", "--", peers.Mcporter, "call",
		"--stdio", strings.Join(peers.EverythingStdio(), " "), "--name", "everything", "get-sum", "a:2", "b:3")
	cmd.Env = append(os.Environ(), "HOME="+home)
	cmd.Dir = home
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mcporter record: %v\n%s", err, out)
	}
	path := filepath.Join(home, ".mcporter", "recordings", "live.ndjson")
	out, errOut, code := runCLI(t, "stats", "--json", path)
	if code != 0 || errOut != "" {
		t.Fatalf("stats: exit %d, stderr %q", code, errOut)
	}
	var st tape.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	if st.Invalid != 0 || st.Lifecycle != 2 || len(st.Servers) != 1 || st.Servers[0].Server != "everything" {
		t.Fatalf("stats: %+v", st)
	}
	byMethod := map[string]tape.MethodStats{}
	for _, m := range st.Servers[0].Methods {
		byMethod[m.Method] = m
	}
	for _, method := range []string{"initialize", "tools/list", "tools/call"} {
		m := byMethod[method]
		if m.Requests != 1 || m.Responses != 1 || m.Pending != 0 || m.Latency.Count != 1 {
			t.Errorf("%s: %+v, want one request paired with its response", method, m)
		}
	}
	if byMethod["notifications/initialized"].Notifications != 1 {
		t.Errorf("notifications/initialized: %+v", byMethod["notifications/initialized"])
	}
	if tot := st.Servers[0].Total; tot.Orphans != 0 || tot.Pending != 0 {
		t.Errorf("totals: %+v", tot)
	}
}
