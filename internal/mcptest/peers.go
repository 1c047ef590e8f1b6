package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
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

// Peers locates the npm peers installed by .ci/peers.sh. A missing peer is a
// fatal test error (not a skip, which would hide missing work).
func Peers(t testing.TB) PeerSet {
	t.Helper()
	root := RepoRoot(t)
	modules := filepath.Join(root, ".peers", "node_modules")
	p := PeerSet{
		Root:       root,
		Everything: filepath.Join(modules, "@modelcontextprotocol", "server-everything", "dist", "index.js"),
		Mcporter:   filepath.Join(modules, ".bin", "mcporter"),
	}
	for _, f := range []string{p.Everything, p.Mcporter} {
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

// EverythingCommand returns an unstarted *exec.Cmd that runs server-everything
// over stdio, for use with mcp.CommandTransport or a shim under test.
func (p PeerSet) EverythingCommand() *exec.Cmd {
	argv := p.EverythingStdio()
	return exec.Command(argv[0], argv[1:]...)
}
