package record

// The authorization server through the proxy (Proxy.ProxyAuth, record
// --proxy-auth)
//
// Without ProxyAuth the client talks to the authorization server directly
// and the tape holds only what the MCP endpoint saw (auth.go). With it, the
// protected resource metadata the proxy serves names the proxy as the
// authorization server: each real issuer gets a path of its own,
// AuthPrefix/N, and the proxy serves
//
//   - the issuer's metadata, in each of the forms a client may ask for it
//     (RFC 8414 /.well-known/oauth-authorization-server/ISSUERPATH, OpenID
//     /.well-known/openid-configuration/ISSUERPATH and
//     ISSUERPATH/.well-known/openid-configuration), fetched in the same form
//     from the real issuer, with "issuer" and every endpoint URL
//     (*_endpoint, jwks_uri) rewritten to AuthPrefix/N + the endpoint's
//     path;
//   - those endpoints, forwarded to the real ones: the request with its
//     headers, body and query, the answer with its status, headers and body.
//     Redirects are not followed: the authorize endpoint's Location goes to
//     the client as the authorization server wrote it, so the client's
//     redirect_uri gets the code.
//
// Each exchange is a tape.MethodHTTPAuth record with every secret
// redacted (authSecrets): codes, tokens, client secrets and the PKCE
// verifier become tape.Fingerprint values, so the code of the redirect and
// the code of the token request show the same fingerprint; the
// Authorization header keeps only its scheme. Every secret value seen is
// also scrubbed from the rest of the record (an error description that
// echoes a code), and Proxy.Redact applies on top.
//
// A client that asks the proxy's root /.well-known/oauth-authorization-server
// without having read protected resource metadata (the 2025-03-26
// fallback: the MCP server's origin is its authorization server) gets the
// upstream origin's metadata, rewritten the same way.

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/tape"
)

// AuthPrefix is the path under which the proxy serves the authorization
// servers it stands in for (Proxy.ProxyAuth): AuthPrefix/1 is the first
// one's issuer.
const AuthPrefix = "/tapedeck-auth"

const (
	wellKnownAS   = "/.well-known/oauth-authorization-server"
	wellKnownOIDC = "/.well-known/openid-configuration"
)

// maxAuthBody bounds an authorization server exchange's body, each way.
const maxAuthBody = 4 << 20

// authSecrets are the members of authorization requests and answers
// (query, form, JSON) that carry secrets, and whether the tape keeps a
// fingerprint of them: codes and tokens are followed from one exchange to
// the next; a password or a PKCE verifier is only blanked.
var authSecrets = map[string]bool{
	"code": true, "access_token": true, "refresh_token": true, "id_token": true, "token": true,
	"device_code": true, "registration_access_token": true, "client_secret": true,
	"subject_token": true, "actor_token": true, "assertion": true, "client_assertion": true,
	"code_verifier": false, "password": false,
}

// authRoute is an authorization server endpoint the proxy forwards.
type authRoute struct {
	name   string // the metadata member without _endpoint: "authorization", "token", "jwks_uri"
	target string // the real endpoint's URL
}

// hopHeaders are not forwarded either way.
var hopHeaders = []string{"Connection", "Keep-Alive", "Proxy-Connection", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade", "Accept-Encoding", "Content-Length"}

// proxyIssuer is the issuer path the proxy serves the real issuer at,
// AuthPrefix/N, numbered in the order issuers are met.
func (p *Proxy) proxyIssuer(real string) string {
	p.pathsMu.Lock()
	defer p.pathsMu.Unlock()
	if path, ok := p.asPaths[real]; ok {
		return path
	}
	if p.asPaths == nil {
		p.asPaths, p.asIssuers, p.asRoutes = map[string]string{}, map[string]string{}, map[string]authRoute{}
	}
	path := AuthPrefix + "/" + strconv.Itoa(len(p.asPaths)+1)
	p.asPaths[real], p.asIssuers[path] = path, real
	return path
}

// rewriteAuthServers points the authorization_servers of a protected
// resource metadata document at the proxy.
func (p *Proxy) rewriteAuthServers(doc []byte, origin string) []byte {
	as := gjson.GetBytes(doc, "authorization_servers")
	if !as.IsArray() {
		return doc
	}
	var own []string
	for _, a := range as.Array() {
		if u, err := url.Parse(a.String()); a.Type != gjson.String || err != nil || u.Host == "" {
			own = append(own, a.String())
			continue
		}
		own = append(own, origin+p.proxyIssuer(a.String()))
	}
	out, err := sjson.SetBytes(doc, "authorization_servers", own)
	if err != nil {
		return doc
	}
	return out
}

// authMetadataRequest tells which metadata document path asks for: the
// real URL to fetch and the proxy's issuer for it; ok false when path is
// none of the forms a client uses.
func (p *Proxy) authMetadataRequest(path string) (src, issuer string, ok bool) {
	var form, issuerPath string
	switch {
	case strings.HasPrefix(path, wellKnownAS) && (path == wellKnownAS || path[len(wellKnownAS)] == '/'):
		form, issuerPath = wellKnownAS, strings.TrimPrefix(path, wellKnownAS)
	case strings.HasPrefix(path, wellKnownOIDC) && (path == wellKnownOIDC || path[len(wellKnownOIDC)] == '/'):
		form, issuerPath = wellKnownOIDC, strings.TrimPrefix(path, wellKnownOIDC)
	case strings.HasSuffix(path, wellKnownOIDC) && strings.HasPrefix(path, AuthPrefix+"/"):
		form, issuerPath = "", strings.TrimSuffix(path, wellKnownOIDC)
	default:
		return "", "", false
	}
	var real string
	if issuerPath == "" {
		// The 2025-03-26 fallback: the MCP server's origin.
		real = (&url.URL{Scheme: p.Upstream.Scheme, Host: p.Upstream.Host, Path: "/"}).String()
		issuerPath = p.proxyIssuer(real)
	} else {
		p.pathsMu.Lock()
		real, ok = p.asIssuers[issuerPath]
		p.pathsMu.Unlock()
		if !ok {
			return "", "", false
		}
	}
	u, err := url.Parse(real)
	if err != nil {
		return "", "", false
	}
	rp := strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	if form == "" {
		u.Path = rp + wellKnownOIDC
	} else {
		u.Path = form + rp
	}
	return u.String(), issuerPath, true
}

// serveAuth answers what the proxy serves of the authorization servers
// (metadata and endpoints) and reports whether r was such a request.
func (p *Proxy) serveAuth(w http.ResponseWriter, r *http.Request) bool {
	if src, issuer, ok := p.authMetadataRequest(r.URL.Path); ok {
		p.serveAuthMetadata(w, r, src, issuer)
		return true
	}
	p.pathsMu.Lock()
	route, ok := p.asRoutes[r.URL.Path]
	p.pathsMu.Unlock()
	if !ok {
		return false
	}
	p.forwardAuth(w, r, route)
	return true
}

// serveAuthMetadata fetches the authorization server metadata at src and
// serves it with its issuer and endpoints rewritten to the proxy.
func (p *Proxy) serveAuthMetadata(w http.ResponseWriter, r *http.Request, src, issuer string) {
	origin := proxyOrigin(r, r.Host)
	params := map[string]any{"endpoint": "metadata", "method": r.Method, "path": r.URL.Path, "target": src}
	resp, body, err := p.authRoundTrip(r, http.MethodGet, src, nil, http.Header{"Accept": {"application/json"}})
	if err != nil {
		p.authFailed(w, params, src, err)
		return
	}
	doc := body
	if resp.StatusCode == http.StatusOK && gjson.ValidBytes(body) && gjson.ParseBytes(body).IsObject() {
		doc = p.rewriteAuthMetadata(body, origin, issuer)
		params["upstreamIssuer"] = gjson.GetBytes(body, "issuer").String()
	}
	params["status"] = resp.StatusCode
	answer := map[string]any{"body": p.authBody(resp.Header.Get("Content-Type"), doc)}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		answer["contentType"] = ct
	}
	params["response"] = answer
	p.recordAuth(params, resp.StatusCode)
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	if cc := resp.Header.Get("Cache-Control"); cc != "" {
		w.Header().Set("Cache-Control", cc)
	}
	w.WriteHeader(resp.StatusCode)
	if r.Method != http.MethodHead {
		_, _ = w.Write(doc)
	}
}

// rewriteAuthMetadata sets a metadata document's issuer to the proxy's
// (origin + issuer) and each endpoint URL to a proxy path under it,
// remembering where each leads.
func (p *Proxy) rewriteAuthMetadata(doc []byte, origin, issuer string) []byte {
	out := doc
	gjson.ParseBytes(doc).ForEach(func(k, v gjson.Result) bool {
		name := k.String()
		if name == "issuer" {
			out, _ = sjson.SetBytes(out, "issuer", origin+issuer)
			return true
		}
		if v.Type != gjson.String || !strings.HasSuffix(name, "_endpoint") && name != "jwks_uri" {
			return true
		}
		u, err := url.Parse(v.String())
		if err != nil || u.Host == "" {
			return true
		}
		path := issuer + u.Path
		p.pathsMu.Lock()
		if prev, taken := p.asRoutes[path]; taken && prev.target != v.String() {
			p.pathsMu.Unlock()
			return true // two endpoints on one path: the second stays direct
		}
		p.asRoutes[path] = authRoute{name: strings.TrimSuffix(name, "_endpoint"), target: v.String()}
		p.pathsMu.Unlock()
		own := origin + path
		if u.RawQuery != "" {
			own += "?" + u.RawQuery
		}
		out, _ = sjson.SetBytes(out, name, own)
		return true
	})
	return out
}

// forwardAuth forwards r to the authorization server endpoint of route and
// relays its answer unchanged (a redirect is not followed), recording the
// exchange with its secrets redacted.
func (p *Proxy) forwardAuth(w http.ResponseWriter, r *http.Request, route authRoute) {
	target, err := url.Parse(route.target)
	if err != nil {
		http.Error(w, "tapedeck: authorization server endpoint "+route.target+": "+err.Error(), http.StatusBadGateway)
		return
	}
	target.RawQuery = mergeQuery(target.RawQuery, r.URL.RawQuery)
	safe := *target
	safe.RawQuery, safe.User = "", nil
	params := map[string]any{"endpoint": route.name, "method": r.Method, "path": r.URL.Path, "target": safe.String()}
	var body []byte
	if r.Body != nil {
		body, err = io.ReadAll(io.LimitReader(r.Body, maxAuthBody+1))
		r.Body.Close()
		if err == nil && len(body) > maxAuthBody {
			err = errors.New("request body larger than 4 MiB")
		}
		if err != nil {
			http.Error(w, "tapedeck: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
	}
	req := map[string]any{}
	if q := target.Query(); len(q) > 0 {
		req["query"] = p.redactValues(q)
	}
	if a := r.Header.Get("Authorization"); a != "" {
		req["authorization"] = p.redactAuthorization(a)
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		req["contentType"] = ct
	}
	if len(body) > 0 {
		if mediaType(r.Header.Get("Content-Type")) == "application/x-www-form-urlencoded" {
			if form, err := url.ParseQuery(string(body)); err == nil {
				req["form"] = p.redactValues(form)
			}
		}
		if req["form"] == nil {
			req["body"] = p.authBody(r.Header.Get("Content-Type"), body)
		}
	}
	if len(req) > 0 {
		params["request"] = req
	}
	hdr := r.Header.Clone()
	for _, h := range hopHeaders {
		hdr.Del(h)
	}
	resp, rbody, err := p.authRoundTrip(r, r.Method, target.String(), body, hdr)
	if err != nil {
		p.authFailed(w, params, safe.String(), err)
		return
	}
	params["status"] = resp.StatusCode
	answer := map[string]any{}
	if loc := resp.Header.Get("Location"); loc != "" {
		if u, err := target.Parse(loc); err == nil {
			// A relative redirect leads to the authorization server, not
			// to the proxy.
			resp.Header.Set("Location", u.String())
			answer["location"] = p.redactURL(u)
		} else {
			answer["location"] = p.scrub(loc)
		}
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		answer["contentType"] = ct
	}
	if len(bytes.TrimSpace(rbody)) > 0 {
		answer["body"] = p.authBody(resp.Header.Get("Content-Type"), rbody)
	}
	params["response"] = answer
	for _, h := range hopHeaders {
		resp.Header.Del(h)
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	p.recordAuth(params, resp.StatusCode)
	w.WriteHeader(resp.StatusCode)
	if r.Method != http.MethodHead {
		_, _ = w.Write(rbody)
	}
}

// authRoundTrip sends one request to an authorization server and reads
// its answer whole.
func (p *Proxy) authRoundTrip(r *http.Request, method, target string, body []byte, hdr http.Header) (*http.Response, []byte, error) {
	out, err := http.NewRequestWithContext(r.Context(), method, target, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, vs := range hdr {
		out.Header[k] = vs
	}
	if body == nil {
		out.Body, out.ContentLength = http.NoBody, 0
	}
	resp, err := p.rp.Transport.RoundTrip(out)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAuthBody+1))
	if err == nil && len(b) > maxAuthBody {
		err = errors.New("answer larger than 4 MiB")
	}
	return resp, b, err
}

// authFailed answers 502 for an authorization server that could not be
// reached, and records it.
func (p *Proxy) authFailed(w http.ResponseWriter, params map[string]any, target string, err error) {
	params["status"] = http.StatusBadGateway
	params["error"] = err.Error()
	p.recordAuth(params, http.StatusBadGateway)
	http.Error(w, "tapedeck: authorization server "+target+": "+err.Error(), http.StatusBadGateway)
}

// recordAuth writes one tape.MethodHTTPAuth record: every secret value
// seen so far scrubbed from it, then Proxy.Redact's rules.
func (p *Proxy) recordAuth(params map[string]any, status int) {
	b, err := json.Marshal(params)
	if err != nil {
		p.note(err)
		return
	}
	b = p.scrubBytes(b)
	if p.Redact != nil {
		if out, _, err := p.Redact.Redact(b); err == nil {
			b = out
		}
	}
	p.note(p.sink.lifecycle(tape.MethodHTTPAuth, json.RawMessage(b), map[string]any{"transport": "http", "status": status}))
}

// authBody is a body as the tape keeps it: JSON with its secret members
// redacted, else text with the secrets seen scrubbed.
func (p *Proxy) authBody(contentType string, b []byte) any {
	t := bytes.TrimSpace(b)
	if len(t) > 0 && (t[0] == '{' || t[0] == '[') && gjson.ValidBytes(t) {
		v, err := tape.Decode(t)
		if err == nil {
			return p.redactJSON(v)
		}
	}
	if mediaType(contentType) == "application/x-www-form-urlencoded" {
		if form, err := url.ParseQuery(string(t)); err == nil {
			return p.redactValues(form)
		}
	}
	return p.scrub(string(t))
}

// redactJSON redacts the secret members of a decoded JSON value, at any
// depth.
func (p *Proxy) redactJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if fp, secret := authSecrets[strings.ToLower(k)]; secret {
				if s, ok := e.(string); ok {
					x[k] = p.secret(s, fp)
					continue
				}
			}
			x[k] = p.redactJSON(e)
		}
	case []any:
		for i, e := range x {
			x[i] = p.redactJSON(e)
		}
	}
	return v
}

// redactValues is a query or form with its secret parameters redacted: one
// value a string, several a list.
func (p *Proxy) redactValues(q url.Values) map[string]any {
	out := make(map[string]any, len(q))
	for k, vs := range q {
		fp, secret := authSecrets[strings.ToLower(k)]
		red := make([]string, len(vs))
		for i, v := range vs {
			if secret {
				red[i] = p.secret(v, fp)
			} else {
				red[i] = v
			}
		}
		if len(red) == 1 {
			out[k] = red[0]
		} else {
			out[k] = red
		}
	}
	return out
}

// redactURL is a redirect's URL as the tape keeps it: without user info,
// its query and fragment parameters (a code; an implicit grant's token)
// redacted.
func (p *Proxy) redactURL(u *url.URL) map[string]any {
	base := *u
	base.User, base.RawQuery, base.Fragment, base.RawFragment = nil, "", "", ""
	out := map[string]any{"url": base.String()}
	if q := u.Query(); len(q) > 0 {
		out["query"] = p.redactValues(q)
	}
	if u.Fragment != "" {
		if f, err := url.ParseQuery(u.Fragment); err == nil {
			out["fragment"] = p.redactValues(f)
		}
	}
	return out
}

// redactAuthorization keeps an Authorization header's scheme only; the
// credentials are remembered as secrets (a client_secret_basic's secret
// among them) to be scrubbed wherever they appear.
func (p *Proxy) redactAuthorization(v string) string {
	scheme, cred, _ := strings.Cut(strings.TrimSpace(v), " ")
	cred = strings.TrimSpace(cred)
	p.secret(cred, false)
	if strings.EqualFold(scheme, "Basic") {
		if dec, err := base64.StdEncoding.DecodeString(cred); err == nil {
			if _, pass, ok := strings.Cut(string(dec), ":"); ok {
				if un, err := url.QueryUnescape(pass); err == nil {
					p.secret(un, false)
				}
				p.secret(pass, false)
			}
		}
	}
	return scheme + " " + tape.RedactedMarker
}

// maxSecrets bounds the secrets a proxy remembers to scrub.
const maxSecrets = 4096

// secret remembers s as a secret and returns what the tape keeps of it:
// its fingerprint, or the marker alone.
func (p *Proxy) secret(s string, fingerprint bool) string {
	if s == "" {
		return s
	}
	p.pathsMu.Lock()
	if len(s) >= 8 && len(p.secrets) < maxSecrets {
		if p.secrets == nil {
			p.secrets = map[string]bool{}
		}
		p.secrets[s] = true
	}
	p.pathsMu.Unlock()
	if fingerprint {
		return tape.Fingerprint(s)
	}
	return tape.RedactedMarker
}

// scrub replaces every secret seen in s by its fingerprint.
func (p *Proxy) scrub(s string) string { return string(p.scrubBytes([]byte(s))) }

// The longest secrets go first: one may hold another ("CODE-2" and "CODE").
func (p *Proxy) scrubBytes(b []byte) []byte {
	p.pathsMu.Lock()
	var found []string
	for s := range p.secrets {
		if bytes.Contains(b, []byte(s)) {
			found = append(found, s)
		}
	}
	p.pathsMu.Unlock()
	slices.SortFunc(found, func(a, b string) int { return len(b) - len(a) })
	for _, s := range found {
		b = bytes.ReplaceAll(b, []byte(s), []byte(tape.Fingerprint(s)))
	}
	return b
}
