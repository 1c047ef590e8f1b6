package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
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

// record --upstream --proxy-auth with the SDK's OAuth demo and its
// authProvider client: the authorization server's metadata and endpoints
// go through the proxy too (the resource metadata served names the proxy
// as the authorization server), the client's transcript is the direct
// run's, the tape holds each exchange (metadata, register, authorize,
// token) as $http/auth with none of the run's secrets (the code, the PKCE
// verifier, the client secret, the tokens), the code of the authorize
// redirect and of the token request one fingerprint, stats counts the
// handshake, and the tape still replays to the same client.
func TestOAuthRecordProxyAuth(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	srv := mcptest.StartOAuthServer(t)
	direct, _ := oauthClient(t, srv.URL)
	if !strings.Contains(direct, "greet: Hello, tapedeck!") {
		t.Fatalf("direct run:\n%s", direct)
	}
	tapePath := filepath.Join(t.TempDir(), "oauth.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", srv.URL, "--proxy-auth", "--listen", "127.0.0.1:0", "-o", tapePath)
	through, secrets := oauthClient(t, proxied)
	stopRecord()
	srv.Stop(3 * time.Second)
	if through != direct {
		t.Fatalf("through the recorder with --proxy-auth:\n%s\ndirect:\n%s", through, direct)
	}
	data, err := os.ReadFile(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	if len(secrets) < 4 {
		t.Fatalf("the client reported %d secrets; want the client secret, the code, the PKCE verifier and the access token at least", len(secrets))
	}
	for _, s := range secrets {
		if strings.Contains(string(data), s) {
			t.Errorf("secret %q of the run is on the tape", s)
		}
	}
	origin := strings.TrimSuffix(proxied, "/mcp")
	auth := map[string][]gjson.Result{} // $http/auth params by endpoint
	var served gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		switch gjson.Get(l, "method").String() {
		case tape.MethodHTTPAuth:
			p := gjson.Get(l, "params")
			auth[p.Get("endpoint").String()] = append(auth[p.Get("endpoint").String()], p)
		case tape.MethodHTTPMetadata:
			served = gjson.Get(l, "params")
		}
	}
	if got := served.Get("document.authorization_servers.0").String(); got != origin+"/tapedeck-auth/1" {
		t.Errorf("the resource metadata served names the authorization server %q, want the proxy's %q:\n%s", got, origin+"/tapedeck-auth/1", served.Raw)
	}
	if got := served.Get("upstreamAuthorizationServers.0").String(); got != srv.Auth {
		t.Errorf("upstreamAuthorizationServers %q, want the real one %q", got, srv.Auth)
	}
	for _, e := range []string{"metadata", "registration", "authorization", "token"} {
		if len(auth[e]) == 0 {
			t.Fatalf("the tape has no $http/auth record of the %s endpoint; it has %v:\n%s", e, auth, data)
		}
	}
	md := auth["metadata"][0]
	if md.Get("status").Int() != 200 || md.Get("response.body.issuer").String() != origin+"/tapedeck-auth/1" ||
		md.Get("response.body.token_endpoint").String() != origin+"/tapedeck-auth/1/token" || !strings.HasPrefix(md.Get("target").String(), srv.Auth) {
		t.Errorf("authorization server metadata record: want status 200, issuer and token endpoint on the proxy, target the real issuer:\n%s", md.Raw)
	}
	reg := auth["registration"][0]
	if cs := reg.Get("response.body.client_secret").String(); !strings.HasPrefix(cs, "[REDACTED] sha256:") {
		t.Errorf("the registration's client_secret is %q on the tape, want a fingerprint", cs)
	}
	authz := auth["authorization"][0]
	code := authz.Get("response.location.query.code").String()
	if authz.Get("status").Int() != 302 || authz.Get("response.location.url").String() != "http://127.0.0.1:9/callback" || authz.Get("request.query.code_challenge_method").String() != "S256" {
		t.Errorf("authorize record: want a 302 to the client's callback, the request's query kept:\n%s", authz.Raw)
	}
	tok := auth["token"][0]
	if !strings.HasPrefix(code, "[REDACTED] sha256:") || tok.Get("request.form.code").String() != code {
		t.Errorf("the code: %q in the redirect, %q in the token request; want one fingerprint", code, tok.Get("request.form.code").String())
	}
	matched := false
	for _, s := range secrets {
		matched = matched || tape.Fingerprint(s) == code
	}
	if !matched {
		t.Errorf("the code's fingerprint %q is none of the run's secrets'", code)
	}
	if v := tok.Get("request.form.code_verifier").String(); v != tape.RedactedMarker {
		t.Errorf("the PKCE verifier is %q on the tape, want %q", v, tape.RedactedMarker)
	}
	if at := tok.Get("response.body.access_token").String(); tok.Get("status").Int() != 200 || !strings.HasPrefix(at, "[REDACTED] sha256:") {
		t.Errorf("token record: want 200 and the access token fingerprinted:\n%s", tok.Raw)
	}
	stats, _, err := runPeer(t, nil, tapedeck, "stats", "--json", tapePath)
	if err != nil {
		t.Fatalf("stats: %v", err)
	}
	if a := gjson.Get(stats, "auth"); a.Get("registrations").Int() != 1 || a.Get("authorizations").Int() != 1 || a.Get("token_requests").Int() != 1 || a.Get("as_metadata").Int() < 1 {
		t.Errorf("stats --json auth: want 1 registration, 1 authorize, 1 token request and the metadata: %s", a.Raw)
	}
	text, _, err := runPeer(t, nil, tapedeck, "stats", tapePath)
	if err != nil || !strings.Contains(text, "through the proxy: ") || !strings.Contains(text, "1 registration, 1 authorize request, 1 token request") {
		t.Errorf("stats: %v, want the handshake through the proxy on the auth line:\n%s", err, text)
	}
	replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
	got, _ := oauthClient(t, replayed)
	if out := stopReplay(); got != direct {
		t.Fatalf("against the replay:\n%s\ndirect:\n%s\nreplay:\n%s", got, direct, out)
	}
}

// verify --url against an OAuth-protected server (the SDK's OAuth demo):
// a tape recorded through the proxy by the SDK's authProvider client is
// verified with a token obtained from the demo's authorization server,
// given by --bearer or --bearer-env; the initialize the recorded 401
// refused is not sent (SKIP), every other call passes, and the token is
// on none of stdout, stderr and the JUnit report. Without a token the
// initialize fails with the server's challenge; with a wrong one it fails
// too, and the wrong token is not printed either.
func TestVerifyOAuthBearer(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	srv := mcptest.StartOAuthServer(t)
	tapePath := filepath.Join(t.TempDir(), "oauth.jsonl")
	proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", srv.URL, "--listen", "127.0.0.1:0", "-o", tapePath)
	if out, _ := oauthClient(t, proxied); !strings.Contains(out, "greet: Hello, tapedeck!") {
		t.Fatalf("recording run:\n%s", out)
	}
	stopRecord()
	token := srv.Token(t)

	verify := func(t *testing.T, args ...string) (stdout, stderr, junit string, err error) {
		t.Helper()
		junitPath := filepath.Join(t.TempDir(), "verify.xml")
		var out, errb bytes.Buffer
		args = append([]string{"verify", "--color=never", "--timeout", "10s", "--junit", junitPath, tapePath, "--url", srv.URL}, args...)
		err = run(context.Background(), args, strings.NewReader(""), &out, &errb)
		b, _ := os.ReadFile(junitPath)
		return out.String(), errb.String(), string(b), err
	}
	noSecret := func(t *testing.T, secret, stdout, stderr, junit string) {
		t.Helper()
		for name, s := range map[string]string{"stdout": stdout, "stderr": stderr, "the JUnit report": junit} {
			if strings.Contains(s, secret) {
				t.Errorf("the token is on %s:\n%s", name, s)
			}
		}
	}
	t.Run("bearer", func(t *testing.T) {
		stdout, stderr, junit, err := verify(t, "--bearer", token)
		if err != nil {
			t.Fatalf("verify: %v\n%s%s", err, stdout, stderr)
		}
		for _, want := range []string{"SKIP initialize", "PASS initialize", "PASS tools/list", "PASS tools/call greet", "4 calls, 3 passed, 0 failed, 1 skipped"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("verify's output has no %q:\n%s", want, stdout)
			}
		}
		if !strings.Contains(junit, `failures="0"`) {
			t.Errorf("JUnit report:\n%s", junit)
		}
		noSecret(t, token, stdout, stderr, junit)
	})
	t.Run("bearer-env", func(t *testing.T) {
		t.Setenv("TAPEDECK_TEST_TOKEN", token)
		stdout, stderr, junit, err := verify(t, "--bearer-env", "TAPEDECK_TEST_TOKEN")
		if err != nil || !strings.Contains(stdout, "3 passed, 0 failed") {
			t.Fatalf("verify: %v\n%s%s", err, stdout, stderr)
		}
		noSecret(t, token, stdout, stderr, junit)
	})
	t.Run("no token", func(t *testing.T) {
		stdout, stderr, _, err := verify(t)
		if err == nil || !strings.Contains(stdout, "FAIL initialize") || !strings.Contains(stdout, "refused it with HTTP 401") || !strings.Contains(stdout, "resource_metadata=") {
			t.Fatalf("verify without a token: err %v, want exit 1 with the server's challenge:\n%s%s", err, stdout, stderr)
		}
	})
	t.Run("wrong token", func(t *testing.T) {
		wrong := "wrong-" + token
		stdout, stderr, junit, err := verify(t, "--bearer", wrong)
		// The demo's verifier throws a plain Error for an unknown token,
		// which its middleware answers with HTTP 500, not 401.
		if err == nil || !strings.Contains(stdout, "FAIL initialize") {
			t.Fatalf("verify with a wrong token: err %v, want the initialize refused:\n%s%s", err, stdout, stderr)
		}
		noSecret(t, wrong, stdout, stderr, junit)
	})
	t.Run("flags", func(t *testing.T) {
		t.Setenv("TAPEDECK_TEST_EMPTY", "")
		for _, c := range []struct {
			args []string
			want string
		}{
			{[]string{"verify", tapePath, "--url", srv.URL, "--bearer", token, "--bearer-env", "X"}, "found both"},
			{[]string{"verify", tapePath, "--url", srv.URL, "--bearer-env", "TAPEDECK_TEST_EMPTY"}, "found it unset or empty"},
			{[]string{"verify", tapePath, "--bearer", token, "--", "true"}, "give --url or --instances"},
		} {
			var out, errb bytes.Buffer
			err := run(context.Background(), c.args, strings.NewReader(""), &out, &errb)
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), token) {
				t.Errorf("%v: got %v, want an error saying %q without the token", c.args[3:], err, c.want)
			}
		}
	})
}

// stats prints the OAuth handshake of a tape as one auth line (and in
// --json under "auth"); a tape without one has no auth line.
func TestStatsAuthLine(t *testing.T) {
	const fix = "../../tape/testdata/oauth-stepup.tape.jsonl"
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"stats", fix}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatalf("stats: %v\n%s", err, errb.String())
	}
	want := "auth: 1 challenge (401), 1 step-up (403), 1 metadata document served; the client retried with a token (2 of 2 refused requests)\n"
	if !strings.Contains(out.String(), want) {
		t.Errorf("stats has no %q:\n%s", want, out.String())
	}
	out.Reset()
	if err := run(context.Background(), []string{"stats", "--json", fix}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if a := gjson.Get(out.String(), "auth"); a.Get("challenges").Int() != 1 || a.Get("step_ups").Int() != 1 || a.Get("retried").Int() != 2 {
		t.Errorf("stats --json auth: %s", a.Raw)
	}
	out.Reset()
	if err := run(context.Background(), []string{"stats", fixture(t, "sdk-everything-http.tape.jsonl")}, strings.NewReader(""), &out, &errb); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "auth:") {
		t.Errorf("a tape without OAuth has an auth line:\n%s", out.String())
	}
}

// --proxy-auth routes an HTTP server's authorization server: over stdio it
// is an error that says so, and nothing starts.
func TestRecordProxyAuthNeedsUpstream(t *testing.T) {
	var out, errb bytes.Buffer
	err := run(context.Background(), []string{"record", "--proxy-auth", "-o", filepath.Join(t.TempDir(), "t.jsonl"), "--", "true"}, strings.NewReader(""), &out, &errb)
	if err == nil || !strings.Contains(err.Error(), "--proxy-auth goes with --upstream URL") {
		t.Fatalf("record --proxy-auth -- true: got %v, want an error naming --upstream", err)
	}
}
