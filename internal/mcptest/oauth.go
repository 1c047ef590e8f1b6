package mcptest

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
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

// Token obtains an access token from the demo's authorization server the
// way ts/oauthclient.mjs does, without an MCP client: dynamic registration,
// an authorize request (approved at once; the code is read from the
// redirect, which is not followed) with PKCE (S256), and the code exchanged
// at the token endpoint.
func (s OAuthServer) Token(t testing.TB) string {
	t.Helper()
	const callback = "http://127.0.0.1:9/callback" // never fetched
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }, Timeout: 10 * time.Second}
	post := func(path, contentType, body string) []byte {
		t.Helper()
		resp, err := noRedirect.Post(strings.TrimSuffix(s.Auth, "/")+path, contentType, strings.NewReader(body))
		if err != nil {
			t.Fatalf("mcptest: POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode/100 != 2 {
			t.Fatalf("mcptest: POST %s: %s: %s", path, resp.Status, b)
		}
		return b
	}
	var client struct {
		ID     string `json:"client_id"`
		Secret string `json:"client_secret"`
	}
	reg := post("/register", "application/json", `{"client_name":"mcptest","redirect_uris":["`+callback+`"],"grant_types":["authorization_code"],"response_types":["code"],"token_endpoint_auth_method":"client_secret_post"}`)
	if err := json.Unmarshal(reg, &client); err != nil || client.ID == "" {
		t.Fatalf("mcptest: registration answered %s (%v)", reg, err)
	}
	verifier := rand.Text() + rand.Text()
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {client.ID}, "redirect_uri": {callback},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}, "state": {"mcptest"}}
	resp, err := noRedirect.Get(strings.TrimSuffix(s.Auth, "/") + "/authorize?" + q.Encode())
	if err != nil {
		t.Fatalf("mcptest: authorize: %v", err)
	}
	resp.Body.Close()
	loc, err := url.Parse(resp.Header.Get("Location"))
	code := ""
	if err == nil {
		code = loc.Query().Get("code")
	}
	if code == "" {
		t.Fatalf("mcptest: authorize answered %s with Location %q: expected a redirect with a code", resp.Status, resp.Header.Get("Location"))
	}
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier},
		"client_id": {client.ID}, "client_secret": {client.Secret}, "redirect_uri": {callback}}
	var tok struct {
		Access string `json:"access_token"`
	}
	b := post("/token", "application/x-www-form-urlencoded", form.Encode())
	if err := json.Unmarshal(b, &tok); err != nil || tok.Access == "" {
		t.Fatalf("mcptest: the token endpoint answered %s (%v)", b, err)
	}
	return tok.Access
}
