package record_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// oauthUpstream is a protected MCP server as the TypeScript SDK's
// requireBearerAuth makes one: /mcp answers 401 with a challenge naming
// its protected resource metadata unless the bearer token is token, and
// the metadata names the upstream's own URL as the resource.
func oauthUpstream(t *testing.T, token string) *httptest.Server {
	t.Helper()
	var srv *httptest.Server
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/.well-known/oauth-protected-resource/mcp":
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"resource":"`+srv.URL+`/mcp","authorization_servers":["http://auth.example/"],"scopes_supported":["mcp:tools"]}`)
		case "/mcp":
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="Missing Authorization header", resource_metadata="`+srv.URL+`/.well-known/oauth-protected-resource/mcp"`)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				io.WriteString(w, `{"error":"invalid_token","error_description":"Missing Authorization header"}`)
				return
			}
			body, _ := io.ReadAll(r.Body)
			id := gjson.GetBytes(body, "id").Raw
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"jsonrpc":"2.0","id":`+id+`,"result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"guarded","version":"1"}}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// A spec-following OAuth client through the proxy: the challenge it gets
// names the proxy's protected resource metadata, which the proxy serves
// with "resource" naming the proxy, so the client's check that the
// resource is the URL it connected to passes (the TypeScript SDK aborted
// with "Protected resource ... does not match expected ..."). The tape
// keeps the challenge (WWW-Authenticate, status, body) paired with the
// request it refused and the document served, and never the token.
func TestProxyOAuthChallengeAndMetadata(t *testing.T) {
	const token = "tok-4f1b9c-SECRET"
	up := oauthUpstream(t, token)
	proxied, path := startProxy(t, up.URL+"/mcp", nil)
	origin := strings.TrimSuffix(proxied, "/mcp")
	init := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`
	post := func(auth string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, proxied, strings.NewReader(init))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	resp := post("")
	want := `resource_metadata="` + origin + `/.well-known/oauth-protected-resource/mcp"`
	if got := resp.Header.Get("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !strings.Contains(got, want) || !strings.Contains(got, `error="invalid_token"`) {
		t.Fatalf("challenge through the proxy: %d %q; want 401 with %s", resp.StatusCode, got, want)
	}
	mresp, err := http.Get(origin + "/.well-known/oauth-protected-resource/mcp")
	if err != nil {
		t.Fatal(err)
	}
	doc, _ := io.ReadAll(mresp.Body)
	mresp.Body.Close()
	if mresp.StatusCode != http.StatusOK || gjson.GetBytes(doc, "resource").String() != proxied ||
		gjson.GetBytes(doc, "authorization_servers.0").String() != "http://auth.example/" {
		t.Fatalf("metadata through the proxy: %d %s; want resource %s and the authorization server untouched", mresp.StatusCode, doc, proxied)
	}
	if resp := post("Bearer " + token); resp.StatusCode != http.StatusOK {
		t.Fatalf("authorized initialize: %d", resp.StatusCode)
	}

	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), token) {
		t.Errorf("the bearer token is on the tape:\n%s", data)
	}
	var challenge, metadata bool
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		switch gjson.Get(line, "method").String() {
		case tape.MethodHTTPExchange:
			if gjson.Get(line, "params.status").Int() == 401 {
				challenge = true
				if got := gjson.Get(line, "params."+tape.ParamWWWAuthenticate+".0").String(); !strings.Contains(got, want) {
					t.Errorf("recorded challenge %q; want it as relayed, with %s", got, want)
				}
				if !strings.Contains(gjson.Get(line, "params.body").String(), "invalid_token") {
					t.Errorf("recorded challenge without its body: %s", line)
				}
			}
		case tape.MethodHTTPMetadata:
			metadata = true
			if gjson.Get(line, "params.document.resource").String() != proxied || gjson.Get(line, "params.upstreamResource").String() != up.URL+"/mcp" {
				t.Errorf("recorded metadata: %s; want the document served (resource %s) and the upstream's resource", line, proxied)
			}
		}
	}
	if !challenge || !metadata {
		t.Fatalf("tape has challenge %v, metadata %v; want both:\n%s", challenge, metadata, data)
	}

	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	st := tape.ComputeStats(x, "")
	if len(st.Servers) != 1 || st.Servers[0].Total.Pending != 0 || st.Invalid != 0 || st.Servers[0].Total.Requests != 2 {
		b, _ := json.Marshal(st)
		t.Errorf("stats: want 2 requests, none pending or invalid (the challenge answers the initialize):\n%s", b)
	}
	first := -1
	for i := range x.Len() {
		if en := x.Entry(i); en.Kind == tape.KindRequest && en.Method == "initialize" {
			first = i
			break
		}
	}
	if p := x.Pair(first); p.Partner < 0 || x.Entry(p.Partner).Method != tape.MethodHTTPExchange {
		t.Errorf("the refused initialize pairs with %d; want the challenge record", p.Partner)
	}
}
