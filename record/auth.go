package record

// OAuth through the proxy (MCP authorization: RFC 9728 protected resource
// metadata, RFC 6750 challenges)
//
// A spec-following client that meets a 401 reads resource_metadata from the
// challenge's WWW-Authenticate, fetches that document and checks that its
// "resource" names the URL it connected to: the proxy's. So the proxy
// rewrites resource_metadata in every relayed challenge to a path of its
// own, serves /.well-known/oauth-protected-resource[/PATH] itself, fetched
// from the upstream (or from where the upstream's challenge pointed) with
// "resource" rewritten to the proxy's URL, and records both: the challenge
// as a $http/exchange (status, body, the header as relayed, inReplyTo the
// request it answered) and each document as a $http/metadata. The
// authorization server's endpoints are not touched: the client talks to
// them directly, so codes, tokens and client secrets never pass the proxy,
// and the bearer token the client then sends is forwarded, never recorded.
// Proxy.ProxyAuth routes them through the proxy too (authserver.go).

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/tape"
)

// WellKnownResourceMetadata is the path prefix of RFC 9728's protected
// resource metadata.
const WellKnownResourceMetadata = "/.well-known/oauth-protected-resource"

// maxMetadata bounds a metadata document or a challenge's body.
const maxMetadata = 1 << 20

// resourceMetadataParam finds resource_metadata="URL" (or an unquoted
// token) in a WWW-Authenticate value.
var resourceMetadataParam = regexp.MustCompile(`(?i)(\bresource_metadata\s*=\s*)("[^"]*"|[^\s,]+)`)

// isMetadataPath reports whether path is a protected resource metadata path.
func isMetadataPath(path string) bool {
	return path == WellKnownResourceMetadata || strings.HasPrefix(path, WellKnownResourceMetadata+"/")
}

// proxyOrigin is the proxy's origin as the client addressed it.
func proxyOrigin(r *http.Request, host string) string {
	scheme := "http"
	if r != nil && r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + host
}

// rewriteChallenge points resource_metadata in one WWW-Authenticate value
// at the proxy (origin), remembering where the upstream had it.
func (p *Proxy) rewriteChallenge(v, origin string) string {
	return resourceMetadataParam.ReplaceAllStringFunc(v, func(m string) string {
		sub := resourceMetadataParam.FindStringSubmatch(m)
		raw := strings.Trim(sub[2], `"`)
		u, err := url.Parse(raw)
		if err != nil || u.Host == "" {
			return m
		}
		path := u.Path
		if !isMetadataPath(path) {
			path = WellKnownResourceMetadata + path
		}
		p.pathsMu.Lock()
		if p.metaSources == nil {
			p.metaSources = map[string]string{}
		}
		p.metaSources[path] = raw
		p.pathsMu.Unlock()
		return sub[1] + `"` + origin + path + `"`
	})
}

// metadataSource is the URL the proxy fetches the document at path from:
// where a challenge pointed, or the same path on the upstream.
func (p *Proxy) metadataSource(path string) string {
	p.pathsMu.Lock()
	src, ok := p.metaSources[path]
	p.pathsMu.Unlock()
	if ok {
		return src
	}
	u := url.URL{Scheme: p.Upstream.Scheme, Host: p.Upstream.Host, Path: path}
	return u.String()
}

// serveResourceMetadata answers a request for protected resource metadata,
// if r asks for it, and reports whether it did.
func (p *Proxy) serveResourceMetadata(w http.ResponseWriter, r *http.Request) bool {
	if !isMetadataPath(r.URL.Path) {
		return false
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "tapedeck: "+r.URL.Path+" answers GET only", http.StatusMethodNotAllowed)
		return true
	}
	src := p.metadataSource(r.URL.Path)
	safe := src
	if u, err := url.Parse(src); err == nil {
		safe = SafeURL(u)
	}
	params := map[string]any{"path": r.URL.Path, "source": safe}
	extra := map[string]any{"transport": "http", "http": r.Method}
	req, err := http.NewRequestWithContext(r.Context(), http.MethodGet, src, nil)
	if err == nil {
		req.Header.Set("Accept", "application/json")
		if v := r.Header.Get("Mcp-Protocol-Version"); v != "" {
			req.Header.Set("Mcp-Protocol-Version", v)
		}
		var resp *http.Response
		if resp, err = p.rp.Transport.RoundTrip(req); err == nil {
			defer resp.Body.Close()
			var body []byte
			if body, err = io.ReadAll(io.LimitReader(resp.Body, maxMetadata)); err == nil {
				doc := body
				if resp.StatusCode == http.StatusOK && gjson.ValidBytes(body) {
					if res := gjson.GetBytes(body, "resource"); res.Type == gjson.String {
						params["upstreamResource"] = res.String()
						if own := p.ownResource(r, res.String()); own != "" {
							doc, _ = sjson.SetBytes(body, "resource", own)
						}
					}
					if as := gjson.GetBytes(body, "authorization_servers"); p.ProxyAuth && as.IsArray() {
						params["upstreamAuthorizationServers"] = json.RawMessage(as.Raw)
						doc = p.rewriteAuthServers(doc, proxyOrigin(r, r.Host))
					}
				}
				params["status"] = resp.StatusCode
				if gjson.ValidBytes(doc) {
					params["document"] = json.RawMessage(doc)
				} else if len(doc) > 0 {
					params["body"] = string(p.rec.redactText(doc))
				}
				extra["status"] = resp.StatusCode
				p.note(p.sink.lifecycle(tape.MethodHTTPMetadata, params, extra))
				if ct := resp.Header.Get("Content-Type"); ct != "" {
					w.Header().Set("Content-Type", ct)
				}
				if cc := resp.Header.Get("Cache-Control"); cc != "" {
					w.Header().Set("Cache-Control", cc)
				}
				w.WriteHeader(resp.StatusCode)
				if r.Method == http.MethodGet {
					_, _ = w.Write(doc)
				}
				return true
			}
		}
	}
	params["status"] = http.StatusBadGateway
	params["error"] = err.Error()
	extra["status"] = http.StatusBadGateway
	p.note(p.sink.lifecycle(tape.MethodHTTPMetadata, params, extra))
	http.Error(w, "tapedeck: protected resource metadata from "+safe+": "+err.Error(), http.StatusBadGateway)
	return true
}

// ownResource is the resource the proxy stands for: the upstream's
// resource URL with the proxy's origin (the proxy mirrors the upstream's
// paths), or "" when resource is not a URL.
func (p *Proxy) ownResource(r *http.Request, resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return ""
	}
	own, err := url.Parse(proxyOrigin(r, r.Host))
	if err != nil {
		return ""
	}
	u.Scheme, u.Host, u.User = own.Scheme, own.Host, nil
	return u.String()
}

// challenge relays and records a 401 or 403 that carries WWW-Authenticate:
// resource_metadata rewritten to the proxy, the answer recorded as a
// $http/exchange with its challenge and body, paired with the request it
// answered (inReplyTo). It reports false when resp is no such answer.
func (p *Proxy) challenge(resp *http.Response, ex *exchange) (bool, error) {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return false, nil
	}
	vals := resp.Header.Values("WWW-Authenticate")
	if len(vals) == 0 {
		return false, nil
	}
	origin := proxyOrigin(resp.Request, ex.host)
	relayed := make([]string, len(vals))
	for i, v := range vals {
		relayed[i] = p.rewriteChallenge(v, origin)
	}
	resp.Header.Del("WWW-Authenticate")
	for _, v := range relayed {
		resp.Header.Add("WWW-Authenticate", v)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMetadata))
	resp.Body.Close()
	if err != nil {
		return true, err
	}
	resp.Body = io.NopCloser(strings.NewReader(string(body)))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	params := map[string]any{"method": ex.method, "status": resp.StatusCode, tape.ParamWWWAuthenticate: relayed}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		params["contentType"] = ct
	}
	if t := strings.TrimSpace(string(body)); t != "" {
		params["body"] = string(p.rec.redactText([]byte(t)))
	}
	extra := p.extra(ex, resp.StatusCode)
	if rs := tape.Classify(ex.body); len(rs) == 1 && rs[0].Kind == tape.KindRequest {
		extra[tape.MetaInReplyTo] = json.RawMessage(rs[0].ID)
	}
	p.note(p.sink.lifecycle(tape.MethodHTTPExchange, params, extra))
	return true, nil
}
