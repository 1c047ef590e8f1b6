package record_test

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// The corners of --proxy-auth the SDK's demo does not reach: an issuer
// with a path (tenant), found only in OpenID's ISSUERPATH/.well-known
// form (the RFC 8414 form answers 404, relayed as is), a token request
// authenticated with client_secret_basic, a refresh token and an error
// description that echoes the code, an authorize endpoint that redirects
// relatively (to its own login page: made absolute, not to the proxy) and
// one that answers with a token in the fragment. No secret reaches the
// tape; each one used twice shows one fingerprint.
func TestProxyAuthServerSecrets(t *testing.T) {
	const (
		code, refresh, access = "code-7d1e0a9f", "refresh-91ab7c3e", "access-0e5d2c8b"
		clientSecret          = "csecret-55aa12ff"
	)
	var as *httptest.Server
	as = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/tenant/.well-known/openid-configuration":
			io.WriteString(w, `{"issuer":"`+as.URL+`/tenant","authorization_endpoint":"`+as.URL+`/tenant/authorize","token_endpoint":"`+as.URL+`/tenant/token","jwks_uri":"`+as.URL+`/tenant/jwks"}`)
		case "/tenant/authorize":
			if r.URL.Query().Get("response_type") == "token" {
				w.Header().Set("Location", "http://127.0.0.1:9/cb#access_token="+access+"&state=s1")
			} else {
				w.Header().Set("Location", "/tenant/login?next=authorize")
			}
			w.WriteHeader(http.StatusFound)
		case "/tenant/token":
			user, pass, ok := r.BasicAuth()
			r.ParseForm()
			if !ok || user != "client-1" || pass != clientSecret {
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_client"}`)
				return
			}
			if r.PostForm.Get("code") != code {
				w.WriteHeader(http.StatusBadRequest)
				io.WriteString(w, `{"error":"invalid_grant","error_description":"unknown code `+r.PostForm.Get("code")+`"}`)
				return
			}
			io.WriteString(w, `{"access_token":"`+access+`","refresh_token":"`+refresh+`","token_type":"Bearer"}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(as.Close)
	var rs *httptest.Server
	rs = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"resource":"`+rs.URL+`/mcp","authorization_servers":["`+as.URL+`/tenant"]}`)
	}))
	t.Cleanup(rs.Close)
	proxied, path := startProxy(t, rs.URL+"/mcp", func(p *record.Proxy) { p.ProxyAuth = true })
	origin := strings.TrimSuffix(proxied, "/mcp")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (*http.Response, string) {
		t.Helper()
		resp, err := noRedirect.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}

	_, prm := get(origin + "/.well-known/oauth-protected-resource/mcp")
	issuer := gjson.Get(prm, "authorization_servers.0").String()
	if issuer != origin+"/tapedeck-auth/1" {
		t.Fatalf("authorization_servers %q, want the proxy's %q", issuer, origin+"/tapedeck-auth/1")
	}
	if resp, _ := get(origin + "/.well-known/oauth-authorization-server/tapedeck-auth/1"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("RFC 8414 form: %s, want the real server's 404", resp.Status)
	}
	_, md := get(issuer + "/.well-known/openid-configuration")
	if gjson.Get(md, "issuer").String() != issuer || gjson.Get(md, "token_endpoint").String() != issuer+"/tenant/token" || gjson.Get(md, "jwks_uri").String() != issuer+"/tenant/jwks" {
		t.Fatalf("OpenID metadata through the proxy:\n%s", md)
	}
	resp, _ := get(gjson.Get(md, "authorization_endpoint").String() + "?response_type=code&state=s0")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != as.URL+"/tenant/login?next=authorize" {
		t.Errorf("authorize: %s to %q, want 302 to the authorization server's own login page", resp.Status, loc)
	}
	resp, _ = get(gjson.Get(md, "authorization_endpoint").String() + "?response_type=token&state=s1")
	if loc := resp.Header.Get("Location"); !strings.Contains(loc, access) {
		t.Errorf("implicit authorize: Location %q, want the token the client is to get", loc)
	}
	token := func(c string) string {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, gjson.Get(md, "token_endpoint").String(), strings.NewReader(url.Values{"grant_type": {"authorization_code"}, "code": {c}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte("client-1:"+clientSecret)))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	if got := token(code); gjson.Get(got, "refresh_token").String() != refresh {
		t.Fatalf("token: %s", got)
	}
	if got := token(code + "-again"); !strings.Contains(got, code+"-again") {
		t.Fatalf("token with a wrong code: %s", got)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{code, refresh, access, clientSecret, base64.StdEncoding.EncodeToString([]byte("client-1:" + clientSecret))} {
		if strings.Contains(string(data), s) {
			t.Errorf("secret %q is on the tape:\n%s", s, data)
		}
	}
	var tokens []gjson.Result
	var implicit gjson.Result
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		p := gjson.Get(l, "params")
		if gjson.Get(l, "method").String() != tape.MethodHTTPAuth {
			continue
		}
		switch {
		case p.Get("endpoint").String() == "token":
			tokens = append(tokens, p)
		case p.Get("response.location.fragment").Exists():
			implicit = p
		}
	}
	if len(tokens) != 2 {
		t.Fatalf("%d token records, want 2:\n%s", len(tokens), data)
	}
	if a := tokens[0].Get("request.authorization").String(); a != "Basic "+tape.RedactedMarker {
		t.Errorf("Authorization on the tape: %q, want the scheme and the marker", a)
	}
	if got := tokens[0].Get("request.form.code").String(); got != tape.Fingerprint(code) {
		t.Errorf("code on the tape: %q, want %q", got, tape.Fingerprint(code))
	}
	if got := tokens[0].Get("response.body.refresh_token").String(); got != tape.Fingerprint(refresh) {
		t.Errorf("refresh token on the tape: %q, want %q", got, tape.Fingerprint(refresh))
	}
	if got := implicit.Get("response.location.fragment.access_token").String(); got != tape.Fingerprint(access) || implicit.Get("response.location.fragment.state").String() != "s1" {
		t.Errorf("implicit redirect on the tape: %s, want the token fingerprinted and the state kept", implicit.Raw)
	}
	if d := tokens[1].Get("response.body.error_description").String(); d != "unknown code "+tape.Fingerprint(code+"-again") {
		t.Errorf("the error echoing the code: %q, want the code's fingerprint in it", d)
	}
}
