package mcptest

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"
)

// OAuthServer is the TypeScript SDK's OAuth demo (ts/oauthserver.mjs): a
// protected MCP server and its in-memory authorization server.
type OAuthServer struct {
	URL  string // the MCP endpoint
	Auth string // the authorization server's issuer
	*Process
}

var oauthServerLine = regexp.MustCompile(`oauthserver: mcp (http://\S+/mcp) auth (http://\S+)`)

// StartOAuthServer starts ts/oauthserver.mjs, which listens on loopback
// ports the system picks and prints them, and returns its URLs. Stop it
// with Stop (the test's cleanup stops it too).
func StartOAuthServer(t testing.TB) OAuthServer {
	t.Helper()
	peers := Peers(t)
	cmd := exec.Command(peers.Node, filepath.Join(peers.Root, "internal", "mcptest", "ts", "oauthserver.mjs"))
	cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(peers.Root, ".peers"))
	p := Start(t, cmd)
	m, err := WaitForOutput(p, oauthServerLine, 20*time.Second)
	if err != nil {
		t.Fatalf("mcptest: oauthserver.mjs did not start: %v", err)
	}
	return OAuthServer{URL: m[1], Auth: m[2], Process: p}
}
