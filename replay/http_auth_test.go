package replay

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/oauth"
	"github.com/tapedeck/tapedeck/tape"
)

// mockToken gets a token from the replay's mock authorization server at
// base: registration, authorize (approved at once, the code read from the
// redirect), the code exchanged with its PKCE verifier.
func mockToken(t *testing.T, base, scope string) string {
	t.Helper()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	const cb = "http://127.0.0.1:9/cb"
	resp, err := http.Post(base+oauth.PathRegister, "application/json", strings.NewReader(`{"redirect_uris":["`+cb+`"],"token_endpoint_auth_method":"none"}`))
	if err != nil {
		t.Fatal(err)
	}
	var reg struct {
		ID string `json:"client_id"`
	}
	json.NewDecoder(resp.Body).Decode(&reg)
	resp.Body.Close()
	verifier := strings.Repeat("v", 43)
	sum := sha256.Sum256([]byte(verifier))
	q := url.Values{"response_type": {"code"}, "client_id": {reg.ID}, "redirect_uri": {cb}, "scope": {scope},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}
	resp, err = noFollow.Get(base + oauth.PathAuthorize + "?" + q.Encode())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	loc, _ := url.Parse(resp.Header.Get("Location"))
	resp, err = http.PostForm(base+oauth.PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {loc.Query().Get("code")},
		"code_verifier": {verifier}, "client_id": {reg.ID}, "redirect_uri": {cb}})
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var tok struct {
		Access string `json:"access_token"`
	}
	json.NewDecoder(resp.Body).Decode(&tok)
	if tok.Access == "" {
		t.Fatalf("mock token endpoint: %s, no access_token", resp.Status)
	}
	return tok.Access
}

// A 403 insufficient_scope step-up recorded mid-session replays with
// --auth mock: the tools/call the tape shows refused gets the recorded 403
// with its challenge (resource_metadata naming the replay), once; the
// client's retry with a new token gets the recorded answer, and the replay
// reports no divergence and no unused request. Before, the engine waited
// for the refused call's answer (a lifecycle record) and the call hung.
func TestReplayStepUp(t *testing.T) {
	x, err := tape.OpenIndex("../tape/testdata/oauth-stepup.tape.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	h, err := NewHTTPHandler(x, EngineOptions{}, HTTPOptions{Auth: AuthMock, NewSessionID: func() string { return "live" }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer func() { h.Close(); srv.Close() }()
	endpoint := srv.URL + "/mcp"
	post := func(token, body string) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, endpoint, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", "live")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(b)
	}
	if resp, _ := post("", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("initialize without a token: %s, want 401", resp.Status)
	}
	token := mockToken(t, srv.URL, "mcp:tools")
	for _, m := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"ts-oauth-client","version":"1.0.0"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`,
	} {
		if resp, body := post(token, m); resp.StatusCode/100 != 2 {
			t.Fatalf("%s: %s %s", m, resp.Status, body)
		}
	}
	call := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"purge","arguments":{}}}`
	resp, body := post(token, call)
	want := `Bearer error="insufficient_scope", scope="mcp:tools mcp:admin", resource_metadata="` + srv.URL + `/.well-known/oauth-protected-resource/mcp"`
	if resp.StatusCode != http.StatusForbidden || resp.Header.Get("WWW-Authenticate") != want || !strings.Contains(body, "insufficient_scope") {
		t.Fatalf("the refused call: %s, WWW-Authenticate %q, body %s; want 403 with %q", resp.Status, resp.Header.Get("WWW-Authenticate"), body, want)
	}
	token = mockToken(t, srv.URL, "mcp:tools mcp:admin")
	resp, body = post(token, call)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, `"text":"purged"`) {
		t.Fatalf("the retry: %s %s; want 200 with the recorded answer", resp.Status, body)
	}
	if r := h.Report(); len(r.Divergences) > 0 || len(r.Unused) > 0 || r.Matched != 3 {
		t.Errorf("replay report: %+v; want 3 requests matched (initialize, tools/list, the retried call), no divergence, nothing unused", r)
	}
}
