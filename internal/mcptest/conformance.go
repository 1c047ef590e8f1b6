package mcptest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// StartConformanceServer starts one of the MCP conformance suite's
// reference servers (name: "everything-server" or
// "no-dns-rebinding-protection", the .mts files of .peers/conformance/)
// under Node 22 on a port of the kernel's choosing (PORT=0), reads the port
// back from what it prints, and returns its endpoint URL
// (http://127.0.0.1:PORT/mcp) and the process, which is stopped at test
// cleanup.
func StartConformanceServer(t testing.TB, name string) (string, *Process) {
	t.Helper()
	peers := Peers(t)
	script := filepath.Join(peers.ConformanceServers, name+".mts")
	cmd := exec.Command(peers.Node22, script)
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.Dir = peers.ConformanceServers
	p := Start(t, cmd)
	re := regexp.MustCompile(`http://localhost:(\d+)(?:/mcp)?`)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if m := re.FindStringSubmatch(p.Output()); m != nil {
			return "http://127.0.0.1:" + m[1] + "/mcp", p
		}
		if exited, err := p.Exited(); exited {
			t.Fatalf("mcptest: conformance server %s exited before listening (%v):\n%s", name, err, p.Output())
		}
		if time.Now().After(deadline) {
			t.Fatalf("mcptest: conformance server %s printed no URL in 20 s:\n%s", name, p.Output())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// ConformanceCheck is one check of a conformance scenario's checks.json.
type ConformanceCheck struct {
	ID           string          `json:"id"`
	Status       string          `json:"status"` // SUCCESS, FAILURE, WARNING, ...
	ErrorMessage string          `json:"errorMessage"`
	Details      json.RawMessage `json:"details"`
}

// ConformanceVerdict is what the suite concluded about one scenario: its
// checks, in the order the suite wrote them.
type ConformanceVerdict []ConformanceCheck

// Passed reports whether no check failed.
func (v ConformanceVerdict) Passed() bool {
	for _, c := range v {
		if c.Status == "FAILURE" {
			return false
		}
	}
	return true
}

// String is the verdict in short: "PASS 5/5" or "FAIL 1/2" (checks
// that succeeded / checks), with the ids of the failed checks.
func (v ConformanceVerdict) String() string {
	ok := 0
	var failed []string
	for _, c := range v {
		switch c.Status {
		case "SUCCESS":
			ok++
		case "FAILURE":
			failed = append(failed, c.ID)
		}
	}
	if len(failed) == 0 {
		return fmt.Sprintf("PASS %d/%d", ok, len(v))
	}
	return fmt.Sprintf("FAIL %d/%d (%s)", ok, len(v), strings.Join(failed, ","))
}

// Same reports whether two verdicts have the same checks with the same
// statuses (the messages and details, which hold ports and times, aside).
func (v ConformanceVerdict) Same(w ConformanceVerdict) bool {
	return slices.EqualFunc(v, w, func(a, b ConformanceCheck) bool { return a.ID == b.ID && a.Status == b.Status })
}

// Failures lists the failed checks with their messages, for a test log.
func (v ConformanceVerdict) Failures() string {
	var b strings.Builder
	for _, c := range v {
		if c.Status != "SUCCESS" {
			fmt.Fprintf(&b, "    %s %s: %s %s\n", c.ID, c.Status, c.ErrorMessage, c.Details)
		}
	}
	return b.String()
}

// resultDir is the name the suite gives a scenario's results directory:
// server-SCENARIO-TIMESTAMP.
var resultDir = regexp.MustCompile(`^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// RunConformance runs the conformance suite's server scenarios against url
// in one invocation (args select them: "--suite", "all" or "--scenario",
// NAME), its results in a temporary directory, and returns the verdict of
// each scenario by name. A scenario that fails is a verdict, not an error;
// a suite that wrote no results is a fatal test error.
func RunConformance(t testing.TB, url string, args ...string) map[string]ConformanceVerdict {
	t.Helper()
	peers := Peers(t)
	dir := t.TempDir()
	results := filepath.Join(dir, "results")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	argv := append([]string{peers.Conformance, "server", "--url", url, "-o", results}, args...)
	cmd := exec.CommandContext(ctx, peers.Node22, argv...)
	cmd.Dir = dir
	out, runErr := cmd.CombinedOutput() // exit 1 when a scenario fails
	entries, err := os.ReadDir(results)
	if err != nil || len(entries) == 0 {
		t.Fatalf("mcptest: the conformance suite wrote no results (%v, exit: %v):\n%s", err, runErr, out)
	}
	verdicts := map[string]ConformanceVerdict{}
	for _, e := range entries {
		m := resultDir.FindStringSubmatch(e.Name())
		if m == nil || !e.IsDir() {
			t.Fatalf("mcptest: unexpected entry %s in the conformance results", e.Name())
		}
		data, err := os.ReadFile(filepath.Join(results, e.Name(), "checks.json"))
		if err != nil {
			t.Fatalf("mcptest: conformance scenario %s: %v\n%s", m[1], err, out)
		}
		var v ConformanceVerdict
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("mcptest: conformance scenario %s: checks.json: %v", m[1], err)
		}
		if _, dup := verdicts[m[1]]; dup {
			t.Fatalf("mcptest: conformance scenario %s ran twice", m[1])
		}
		verdicts[m[1]] = v
	}
	return verdicts
}
