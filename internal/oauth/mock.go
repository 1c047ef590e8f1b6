// Package oauth is a small mock OAuth 2.1 authorization server for replay
// (`tapedeck replay --listen --auth mock`): its metadata (RFC 8414),
// dynamic client registration (RFC 7591), an authorization endpoint that
// approves at once and redirects with a code, and a token endpoint that
// checks the code's PKCE verifier (S256) and issues bearer tokens, which
// Valid then accepts. Everything is in memory, and nothing it issues is
// written anywhere: a client's whole OAuth path runs offline.
package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Paths of the mock's endpoints under its issuer.
const (
	PathMetadata  = "/.well-known/oauth-authorization-server"
	PathOpenID    = "/.well-known/openid-configuration"
	PathRegister  = "/oauth/register"
	PathAuthorize = "/oauth/authorize"
	PathToken     = "/oauth/token"
)

// Mock is the mock authorization server. The zero Mock is ready; its
// issuer is the origin each request was addressed to.
type Mock struct {
	// Scopes are the scopes it advertises and grants when a client asks
	// for none.
	Scopes []string

	mu      sync.Mutex
	clients map[string]client
	codes   map[string]grant
	tokens  map[string]bool // access tokens issued
	refresh map[string]bool // refresh tokens issued
}

type client struct {
	secret   string
	redirect []string
}

type grant struct {
	client, challenge, redirect, scope string
}

// Handles reports whether path is one of the mock's endpoints.
func Handles(path string) bool {
	switch path {
	case PathMetadata, PathOpenID, PathRegister, PathAuthorize, PathToken:
		return true
	}
	return false
}

// Issuer is the mock's issuer for a request: the origin it was sent to.
func Issuer(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// Valid reports whether the Authorization header value authz carries a
// bearer token the mock issued.
func (m *Mock) Valid(authz string) bool {
	scheme, tok, ok := strings.Cut(authz, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.tokens[strings.TrimSpace(tok)]
}

func random() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": "tapedeck mock authorization server: " + desc})
}

// ServeHTTP serves the mock's endpoints.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.Lock()
	if m.clients == nil {
		m.clients, m.codes, m.tokens, m.refresh = map[string]client{}, map[string]grant{}, map[string]bool{}, map[string]bool{}
	}
	m.mu.Unlock()
	switch r.URL.Path {
	case PathMetadata, PathOpenID:
		iss := Issuer(r)
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer":                                iss,
			"authorization_endpoint":                iss + PathAuthorize,
			"token_endpoint":                        iss + PathToken,
			"registration_endpoint":                 iss + PathRegister,
			"response_types_supported":              []string{"code"},
			"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
			"code_challenge_methods_supported":      []string{"S256"},
			"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "none"},
			"scopes_supported":                      m.Scopes,
		})
	case PathRegister:
		m.register(w, r)
	case PathAuthorize:
		m.authorize(w, r)
	case PathToken:
		m.token(w, r)
	default:
		http.NotFound(w, r)
	}
}

func (m *Mock) register(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "registration expects POST")
		return
	}
	var md map[string]any
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<20)).Decode(&md); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "expected a JSON object: "+err.Error())
		return
	}
	var c client
	if uris, ok := md["redirect_uris"].([]any); ok {
		for _, u := range uris {
			if s, ok := u.(string); ok {
				c.redirect = append(c.redirect, s)
			}
		}
	}
	if len(c.redirect) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_redirect_uri", "expected redirect_uris")
		return
	}
	id := random()
	md["client_id"] = id
	if md["token_endpoint_auth_method"] != "none" {
		c.secret = random()
		md["client_secret"] = c.secret
		md["client_secret_expires_at"] = 0
	}
	m.mu.Lock()
	m.clients[id] = c
	m.mu.Unlock()
	writeJSON(w, http.StatusCreated, md)
}

func (m *Mock) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	m.mu.Lock()
	c, ok := m.clients[q.Get("client_id")]
	m.mu.Unlock()
	redirect := q.Get("redirect_uri")
	switch {
	case !ok:
		oauthError(w, http.StatusBadRequest, "invalid_client", "unknown client_id "+q.Get("client_id"))
		return
	case !slices.Contains(c.redirect, redirect):
		oauthError(w, http.StatusBadRequest, "invalid_request", "redirect_uri "+redirect+" is not registered")
		return
	case q.Get("response_type") != "code":
		oauthError(w, http.StatusBadRequest, "unsupported_response_type", "expected response_type code")
		return
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		oauthError(w, http.StatusBadRequest, "invalid_request", "expected a PKCE code_challenge with method S256")
		return
	}
	code := random()
	m.mu.Lock()
	m.codes[code] = grant{client: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: redirect, scope: q.Get("scope")}
	m.mu.Unlock()
	u, err := url.Parse(redirect)
	if err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", "redirect_uri: "+err.Error())
		return
	}
	back := u.Query()
	back.Set("code", code)
	if s := q.Get("state"); s != "" {
		back.Set("state", s)
	}
	u.RawQuery = back.Encode()
	http.Redirect(w, r, u.String(), http.StatusFound)
}

func (m *Mock) token(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		oauthError(w, http.StatusMethodNotAllowed, "invalid_request", "the token endpoint expects POST")
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 1<<20)
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	id, secret := r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	if u, p, ok := r.BasicAuth(); ok {
		id, secret = u, p
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	c, ok := m.clients[id]
	if !ok || c.secret != "" && c.secret != secret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong client secret")
		return
	}
	scope := strings.Join(m.Scopes, " ")
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		g, ok := m.codes[r.PostForm.Get("code")]
		if !ok || g.client != id {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown authorization code, or issued to another client")
			return
		}
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "code_verifier does not match the code_challenge (PKCE S256)")
			return
		}
		delete(m.codes, r.PostForm.Get("code"))
		if g.scope != "" {
			scope = g.scope
		}
	case "refresh_token":
		if !m.refresh[r.PostForm.Get("refresh_token")] {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "unknown refresh token")
			return
		}
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", "expected authorization_code or refresh_token")
		return
	}
	access, refresh := random(), random()
	m.tokens[access] = true
	m.refresh[refresh] = true
	writeJSON(w, http.StatusOK, map[string]any{"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh, "scope": scope})
}
