package record

// The proxy's URL space: the paths it forwards (the upstream's MCP endpoint,
// a legacy server's message endpoint), and the upstream URL's secrets kept
// off the tape and out of sight (SafeURL) and sent once (mergeQuery).

import (
	"net/url"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

// served reports whether the proxy forwards requests for path: the
// upstream's MCP endpoint, or an endpoint a legacy server named.
func (p *Proxy) served(path string) bool {
	if path == p.Upstream.Path || p.Upstream.Path == "" && path == "/" {
		return true
	}
	p.pathsMu.Lock()
	defer p.pathsMu.Unlock()
	return p.paths[path]
}

// serve adds path to those the proxy forwards.
func (p *Proxy) serve(path string) {
	p.pathsMu.Lock()
	defer p.pathsMu.Unlock()
	p.paths[path] = true
}

// SafeURL writes u for people and tapes: no user info, and every query
// value replaced by the redaction marker (names kept), since any of them
// may be a secret (private_key, pwd, jwt, sessionKey, access...).
func SafeURL(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			for i := range q[k] {
				q[k][i] = tape.RedactedMarker
			}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// mergeQuery returns the upstream's query parameters followed by the
// client's, each parameter once: the upstream's value wins a name both
// have.
func mergeQuery(upstream, client string) string {
	switch {
	case upstream == "":
		return client
	case client == "":
		return upstream
	}
	up, err := url.ParseQuery(upstream)
	if err != nil {
		return upstream + "&" + client
	}
	var extra []string
	for _, kv := range strings.Split(client, "&") {
		name, _, _ := strings.Cut(kv, "=")
		if n, err := url.QueryUnescape(name); err == nil {
			if _, dup := up[n]; dup {
				continue
			}
		}
		extra = append(extra, kv)
	}
	if len(extra) == 0 {
		return upstream
	}
	return upstream + "&" + strings.Join(extra, "&")
}
