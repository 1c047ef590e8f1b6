package replay

// OAuth on the HTTP edge: what the recording proxy kept of an
// OAuth-protected server (the 401/403 challenges, $http/exchange records
// paired with the requests they refused, and the protected resource
// metadata documents it served, $http/metadata) replayed so that a
// client's authorization code path runs against the tape.
//
//   - The requests a challenge refused are not part of the recorded
//     session served (EngineOptions.Refused): the client's retry with a
//     token is. A 403 step-up recorded mid-session (insufficient_scope)
//     is served with --auth mock, once, to the first live request of its
//     method and target; the client's retry then gets the recorded answer.
//   - The metadata documents are served at their recorded paths with
//     "resource" naming the replay's own URL (a client checks it against
//     the URL it connected to).
//   - AuthMock: a mock authorization server (internal/oauth) on the same
//     listener, named in the documents' authorization_servers; the MCP
//     endpoint then requires one of its tokens and answers without one
//     with the recorded challenge (resource_metadata naming the replay).
//   - AuthNone: no token is required, challenges are not replayed.

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/internal/oauth"
	"github.com/tapedeck/tapedeck/tape"
)

// Auth modes of the HTTP replay (HTTPOptions.Auth).
const (
	// AuthAuto is AuthMock when the tape recorded a challenge, AuthNone
	// otherwise.
	AuthAuto = "auto"
	// AuthNone requires no token: today's replay of any tape.
	AuthNone = "none"
	// AuthMock serves a mock authorization server and requires its tokens.
	AuthMock = "mock"
)

const wellKnownResource = "/.well-known/oauth-protected-resource"

// recordedChallenge is a 401 or 403 the tape recorded.
type recordedChallenge struct {
	status      int
	header      []string
	contentType string
	body        string
}

var resourceMetadataParam = regexp.MustCompile(`(?i)(\bresource_metadata\s*=\s*)("[^"]*"|[^\s,]+)`)

// learnAuth reads the tape's challenges and metadata documents and picks
// the auth mode.
func (h *HTTPHandler) learnAuth() error {
	h.authDocs = map[string][]byte{}
	h.challenged = map[int]bool{}
	x := h.x
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Server != h.server || en.Kind != tape.KindLifecycle {
			continue
		}
		switch en.Method {
		case tape.MethodHTTPMetadata:
			m, err := x.Message(i)
			if err != nil {
				continue
			}
			p := gjson.GetBytes(m.Raw, "params")
			if doc := p.Get("document"); doc.IsObject() && p.Get("status").Int() == http.StatusOK {
				h.authDocs[p.Get("path").String()] = []byte(doc.Raw)
			}
		case tape.MethodHTTPExchange:
			req := x.Pair(i).Partner
			if req < 0 {
				continue
			}
			m, err := x.Message(i)
			if err != nil {
				continue
			}
			p := gjson.GetBytes(m.Raw, "params")
			hdr := p.Get(tape.ParamWWWAuthenticate)
			if !hdr.IsArray() {
				continue
			}
			h.challenged[req] = true
			c := &recordedChallenge{status: int(p.Get("status").Int()), contentType: p.Get("contentType").String(), body: p.Get("body").String()}
			for _, v := range hdr.Array() {
				c.header = append(c.header, v.String())
			}
			switch c.status {
			case http.StatusUnauthorized:
				if h.challenge == nil {
					h.challenge = c
				}
			case http.StatusForbidden:
				if rm, err := x.Message(req); err == nil {
					h.stepUps = append(h.stepUps, stepUp{method: rm.Method, target: tape.Target(rm.Method, rm.Raw), challenge: c})
				}
			}
		}
	}
	switch mode := h.opts.Auth; mode {
	case "", AuthAuto:
		if h.challenge != nil {
			h.mock = &oauth.Mock{}
		}
	case AuthMock:
		h.mock = &oauth.Mock{}
	case AuthNone:
	default:
		return fmt.Errorf("HTTP replay: auth mode %q: expected %s, %s or %s", mode, AuthAuto, AuthNone, AuthMock)
	}
	if h.mock != nil {
		for _, doc := range h.authDocs {
			for _, s := range gjson.GetBytes(doc, "scopes_supported").Array() {
				h.mock.Scopes = append(h.mock.Scopes, s.String())
			}
			break
		}
	}
	return nil
}

// AuthMode returns the auth mode in force: AuthMock or AuthNone.
func (h *HTTPHandler) AuthMode() string {
	if h.mock != nil {
		return AuthMock
	}
	return AuthNone
}

// origin is the replay's origin as r addressed it.
func origin(r *http.Request) string { return oauth.Issuer(r) }

// resourcePath is the protected resource metadata path of the endpoint.
func (h *HTTPHandler) resourcePath() string { return wellKnownResource + h.path }

// serveAuth answers the metadata and mock authorization server paths, and
// reports whether r was one.
func (h *HTTPHandler) serveAuth(w http.ResponseWriter, r *http.Request) bool {
	if h.mock != nil && oauth.Handles(r.URL.Path) {
		h.mock.ServeHTTP(w, r)
		return true
	}
	if r.URL.Path != wellKnownResource && !strings.HasPrefix(r.URL.Path, wellKnownResource+"/") {
		return false
	}
	doc, ok := h.authDocs[r.URL.Path]
	if !ok && h.mock != nil && r.URL.Path == h.resourcePath() {
		doc, ok = []byte(`{"bearer_methods_supported":["header"]}`), true
	}
	if !ok {
		http.Error(w, "tapedeck replay: the tape holds no protected resource metadata at "+r.URL.Path, http.StatusNotFound)
		return true
	}
	own := origin(r) + h.path
	if res := gjson.GetBytes(doc, "resource"); res.Type == gjson.String {
		if u, err := url.Parse(res.String()); err == nil && u.Path != "" {
			own = origin(r) + u.Path
		}
	}
	doc, _ = sjson.SetBytes(doc, "resource", own)
	if h.mock != nil {
		doc, _ = sjson.SetBytes(doc, "authorization_servers", []string{origin(r)})
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(doc)
	return true
}

// stepUp is a 403 the tape recorded mid-session (insufficient_scope: the
// client asks for more scope and sends the request again), served once,
// in recorded order, to the first live request of the same method and
// target.
type stepUp struct {
	method, target string
	challenge      *recordedChallenge
	served         bool
}

// authorized reports whether r may reach the MCP endpoint; if not, it has
// answered with the recorded challenge (or one made up when the tape has
// none), resource_metadata naming the replay: without a token, a 401; a
// request the tape shows refused with a 403 step-up, that 403, once.
func (h *HTTPHandler) authorized(w http.ResponseWriter, r *http.Request) bool {
	if h.mock == nil {
		return true
	}
	if !h.mock.Valid(r.Header.Get("Authorization")) {
		c := h.challenge
		if c == nil {
			c = &recordedChallenge{status: http.StatusUnauthorized, contentType: "application/json",
				header: []string{`Bearer error="invalid_token", error_description="tapedeck replay --auth mock: a token of its mock authorization server is required"`},
				body:   `{"error":"invalid_token","error_description":"tapedeck replay --auth mock: a token of its mock authorization server is required"}`}
		}
		h.writeChallenge(w, r, c)
		return false
	}
	if c := h.stepUpFor(r); c != nil {
		h.writeChallenge(w, r, c)
		return false
	}
	return true
}

// stepUpFor returns the recorded 403 step-up r is to get, if any, and marks
// it served; it leaves r's body as it was.
func (h *HTTPHandler) stepUpFor(r *http.Request) *recordedChallenge {
	if r.Method != http.MethodPost {
		return nil
	}
	h.stepMu.Lock()
	defer h.stepMu.Unlock()
	var next *stepUp
	for i := range h.stepUps {
		if !h.stepUps[i].served {
			next = &h.stepUps[i]
			break
		}
	}
	if next == nil {
		return nil
	}
	limit := h.opts.MaxBody
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if err != nil {
		return nil
	}
	m := tape.Classify(bytes.TrimSpace(body))
	if len(m) != 1 || m[0].Kind != tape.KindRequest || m[0].Method != next.method || tape.Target(m[0].Method, body) != next.target {
		return nil
	}
	next.served = true
	return next.challenge
}

// writeChallenge answers r with challenge c, resource_metadata naming the
// replay.
func (h *HTTPHandler) writeChallenge(w http.ResponseWriter, r *http.Request, c *recordedChallenge) {
	meta := origin(r) + h.resourcePath()
	for _, v := range c.header {
		if resourceMetadataParam.MatchString(v) {
			v = resourceMetadataParam.ReplaceAllString(v, `${1}"`+meta+`"`)
		} else {
			v += `, resource_metadata="` + meta + `"`
		}
		w.Header().Add("WWW-Authenticate", v)
	}
	if c.contentType != "" {
		w.Header().Set("Content-Type", c.contentType)
	}
	w.WriteHeader(c.status)
	_, _ = w.Write([]byte(c.body))
}
