package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// oauthClient runs ts/oauthclient.mjs (the TypeScript SDK's client with an
// authProvider: dynamic registration, an authorize approved at once, PKCE)
// against url and returns its transcript and the secrets it used.
func oauthClient(t *testing.T, url string) (string, []string) {
	t.Helper()
	peers := mcptest.Peers(t)
	script := filepath.Join(peers.Root, "internal", "mcptest", "ts", "oauthclient.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(peers.Root, ".peers")}, peers.Node, script, url)
	if err != nil {
		t.Fatalf("OAuth client at %s: %v\n%s%s", url, err, out, stderr)
	}
	var secrets []string
	for _, l := range strings.Split(stderr, "\n") {
		if s, ok := strings.CutPrefix(l, "secret: "); ok && s != "" {
			secrets = append(secrets, s)
		}
	}
	return out, secrets
}

// A spec-following OAuth client (the TypeScript SDK's authProvider) with
// the SDK's OAuth demo server: recorded through "record --upstream" with
// no flag, it sees what it sees directly (before, the SDK aborted: the
// relayed challenge named the upstream's metadata, whose resource was not
// the proxy's URL); no token, code, verifier or client secret of the run
// is on the tape, which keeps the 401 with its challenge, paired with the
// initialize it refused, and the metadata served; replayed with the
// servers gone, the same client completes its whole OAuth flow against
// the replay's mock authorization server.
func TestOAuthRecordReplay(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	srv := mcptest.StartOAuthServer(t)
	direct, _ := oauthClient(t, srv.URL)
	for _, want := range []string{"connect: unauthorized, authorizing", "init: server oauth-demo", "greet: Hello, tapedeck!"} {
		if !strings.Contains(direct, want) {
			t.Fatalf("direct run: no %q:\n%s", want, direct)
		}
	}

	tapePath := filepath.Join(t.TempDir(), "oauth.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", srv.URL, "--listen", "127.0.0.1:0", "-o", tapePath)
	through, secrets := oauthClient(t, proxied)
	stopRecord()
	srv.Stop(3 * time.Second)
	if through != direct {
		t.Fatalf("through the recorder:\n%s\ndirect:\n%s", through, direct)
	}
	data, err := os.ReadFile(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) < 3 {
		t.Fatalf("the client reported %d secrets; want the code, the PKCE verifier and the access token at least", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(string(data), s) {
			t.Errorf("secret %q of the run is on the tape", s)
		}
	}
	for _, want := range []string{`"wwwAuthenticate":["Bearer `, `"status":401`, `"method":"$http/metadata"`, `resource_metadata=\"` + strings.TrimSuffix(proxied, "/mcp") + `/.well-known/oauth-protected-resource/mcp\"`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the tape has no %s:\n%s", want, data)
		}
	}
	stats, _, err := runPeer(t, nil, tapedeck, "stats", "--json", tapePath)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if gjson.Get(stats, "servers.0.total.pending").Int() != 0 || gjson.Get(stats, "invalid").Int() != 0 || gjson.Get(stats, "servers.0.total.requests").Int() != 4 {
		t.Errorf("stats: want nothing pending or invalid (the 401 answers the first initialize):\n%s", stats)
	}
	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
	got, _ := oauthClient(t, replayed)
	out := stopReplay()
	if got != direct {
		t.Fatalf("against the replay:\n%s\ndirect:\n%s\nreplay:\n%s", got, direct, out)
	}
	for _, bad := range []string{"mismatch", "never reached the client", "never sent by the client", "diverge"} {
		if strings.Contains(out, bad) {
			t.Errorf("replay reported %q:\n%s", bad, out)
		}
	}
}
