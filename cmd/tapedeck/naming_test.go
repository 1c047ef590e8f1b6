package main

import (
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// tapeServers returns the server names a tape's records carry.
func tapeServers(t *testing.T, path string) []string {
	t.Helper()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	s := slices.Clone(x.Servers())
	slices.Sort(s)
	return s
}

// An HTTP recording is named after the upstream's host and port (its path,
// /mcp, says nothing), not after the bare host two local servers share;
// --server still wins. diff of the same client's session with the same
// server recorded over stdio and over HTTP pairs the two servers (named
// server-everything and 127.0.0.1:PORT) by the name the server gives itself
// and aligns every call.
func TestRecordHTTPNameAndDiffStdioHTTP(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	dir := t.TempDir()
	upstream := mcptest.StartEverythingHTTP(t)
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}

	httpTape := filepath.Join(dir, "http.jsonl")
	proxied, stop := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", httpTape)
	tsClient(t, "--url", proxied)
	stop()
	if got, want := tapeServers(t, httpTape), []string{u.Host}; !slices.Equal(got, want) {
		t.Errorf("HTTP tape's servers: %q, want %q (host and port)", got, want)
	}

	named := filepath.Join(dir, "named.jsonl")
	proxied, stop = startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "--server", "mine", "-o", named)
	tsClient(t, "--url", proxied)
	stop()
	if got := tapeServers(t, named); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("with --server mine, the tape's servers: %q", got)
	}

	stdioTape := filepath.Join(dir, "stdio.jsonl")
	tsClient(t, append([]string{"--stdio", tapedeck, "record", "-o", stdioTape, "--"}, peers.EverythingStdio()...)...)
	if got := tapeServers(t, stdioTape); !slices.Equal(got, []string{"server-everything"}) {
		t.Errorf("stdio tape's servers: %q", got)
	}

	out, stderr, err := runPeer(t, nil, tapedeck, "diff", "--latency-ratio", "1000", stdioTape, httpTape)
	if err != nil {
		t.Fatalf("diff: %v\n%s%s", err, out, stderr)
	}
	head := regexp.MustCompile(`server server-everything \(in B: ` + regexp.QuoteMeta(u.Host) + `\): (\d+) calls in A, (\d+) in B, (\d+) aligned`).FindStringSubmatch(out)
	if head == nil {
		t.Fatalf("diff did not pair the stdio and HTTP servers:\n%s", out)
	}
	if head[1] != head[2] || head[1] != head[3] || head[1] == "0" {
		t.Errorf("diff aligned %s of %s and %s calls, want all:\n%s", head[3], head[1], head[2], out)
	}
	checkDiffCounts(t, out)
}

// checkDiffCounts checks that each server's count in diff's text is the
// number of difference lines listed under it (marked -, + or ~), and that
// the last line sums them.
func checkDiffCounts(t *testing.T, out string) {
	t.Helper()
	header := regexp.MustCompile(`; (\d+) differences?$`)
	total, want, listed := 0, -1, 0
	check := func() {
		if want >= 0 && listed != want {
			t.Errorf("a server's header counts %d differences, %d are listed:\n%s", want, listed, out)
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if m := header.FindStringSubmatch(l); m != nil && strings.HasPrefix(l, "server ") {
			check()
			want, listed = atoi(t, m[1]), 0
			total += want
			continue
		}
		if len(l) > 3 && strings.HasPrefix(l, "  ") && strings.ContainsAny(l[2:3], "-+~") {
			listed++
		}
	}
	check()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	last := lines[len(lines)-1]
	if total == 0 && last != "the sessions do not differ" || total > 0 && !strings.HasPrefix(last, strconv.Itoa(total)+" difference") {
		t.Errorf("the last line %q does not sum the servers' %d differences", last, total)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A server on one tape only is one listed difference (- or +), besides
// its calls, so that the count and the list agree.
func TestDiffCountsOneSidedServer(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	root := mcptest.RepoRoot(t)
	a := filepath.Join(root, "testdata", "sdk-everything-2025-06-18.tape.jsonl")
	data, err := os.ReadFile(filepath.Join(root, "testdata", "sdk-multi-server.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	b := filepath.Join(t.TempDir(), "multi.jsonl")
	if err := os.WriteFile(b, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := runPeer(t, nil, tapedeck, "diff", a, b)
	if err != nil {
		t.Fatalf("diff: %v\n%s%s", err, out, stderr)
	}
	if !strings.Contains(out, "server only on tape") {
		t.Fatalf("expected a server on one tape only:\n%s", out)
	}
	checkDiffCounts(t, out)
}
