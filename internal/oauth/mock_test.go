package oauth

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// The mock's code flow: register, authorize (approved at once, redirect
// with the code and state), token with the right PKCE verifier; a wrong
// verifier and a reused code are refused, and only issued tokens are Valid.
func TestMockCodeFlowPKCE(t *testing.T) {
	m := &Mock{Scopes: []string{"mcp:tools"}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	resp, err := http.Post(srv.URL+PathRegister, "application/json", strings.NewReader(`{"redirect_uris":["http://127.0.0.1:9/cb"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg map[string]any
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	id, secret := reg["client_id"].(string), reg["client_secret"].(string)
	verifier := "v-0123456789-0123456789-0123456789-0123456789"
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"client_id": {id}, "redirect_uri": {"http://127.0.0.1:9/cb"}, "response_type": {"code"}, "state": {"s1"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	ar, err := noFollow.Get(srv.URL + PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	ar.Body.Close()
	loc, _ := url.Parse(ar.Header.Get("Location"))
	code := loc.Query().Get("code")
	if ar.StatusCode != http.StatusFound || code == "" || loc.Query().Get("state") != "s1" {
		t.Fatalf("authorize: %d %s; want a redirect with a code and the state", ar.StatusCode, loc)
	}
	token := func(v string) (int, map[string]any) {
		r, err := http.PostForm(srv.URL+PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {v},
			"client_id": {id}, "client_secret": {secret}, "redirect_uri": {"http://127.0.0.1:9/cb"}})
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		var body map[string]any
		json.NewDecoder(r.Body).Decode(&body)
		return r.StatusCode, body
	}
	if st, body := token("wrong-verifier"); st != http.StatusBadRequest || body["error"] != "invalid_grant" {
		t.Fatalf("token with a wrong verifier: %d %v; want 400 invalid_grant", st, body)
	}
	st, body := token(verifier)
	access, _ := body["access_token"].(string)
	if st != http.StatusOK || access == "" || !m.Valid("Bearer "+access) {
		t.Fatalf("token: %d %v; want a valid access token", st, body)
	}
	if st, _ := token(verifier); st != http.StatusBadRequest {
		t.Errorf("a code used twice: %d; want 400", st)
	}
	if m.Valid("Bearer "+body["refresh_token"].(string)) || m.Valid("Bearer nope") || m.Valid("") {
		t.Error("Valid accepted a token the mock did not issue as an access token")
	}
}
