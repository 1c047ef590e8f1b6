// Package mcphttp holds what tapedeck's three HTTP listeners (the replay
// server, the live debug server and the recording proxy) and its HTTP
// client share about MCP over HTTP: the header names, the protocol
// versions, and one policy against DNS rebinding (which Host and Origin
// headers a listener on this machine accepts).
package mcphttp

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
)

// Streamable HTTP header names.
const (
	HeaderSession  = "Mcp-Session-Id"
	HeaderProtocol = "Mcp-Protocol-Version"
	HeaderMethod   = "Mcp-Method"
	HeaderName     = "Mcp-Name"
	HeaderLastID   = "Last-Event-Id"
)

// Protocol versions with a meaning for the transport.
const (
	// PrimingVersion is the first whose SSE streams start with a priming
	// event (an id and empty data).
	PrimingVersion = "2025-11-25"
	// ModernVersion is the first without sessions, in which requests name
	// their method and target in headers.
	ModernVersion = "2026-07-28"
)

// versions are the MCP versions tapedeck knows, oldest first.
var versions = []string{"2024-11-05", "2025-03-26", "2025-06-18", PrimingVersion, ModernVersion}

// Versions returns the MCP protocol versions tapedeck knows, oldest first.
func Versions() []string { return slices.Clone(versions) }

// KnownVersion reports whether v is one of Versions.
func KnownVersion(v string) bool { return slices.Contains(versions, v) }

// IsLoopbackHost reports whether host (a name or an IP, without port) is
// this machine's loopback interface: "localhost" or a loopback address.
func IsLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// Guard is the DNS-rebinding policy of a listener: a page on another site
// can make a browser send requests to a loopback server under the page's
// own host name (Host) and origin (Origin). Loopback hosts and origins are
// accepted, and the ones listed.
type Guard struct {
	// AllowHosts lists Host header values (names or addresses, the port
	// ignored) accepted besides loopback ones; "*" accepts any.
	AllowHosts []string
	// AllowOrigins lists Origin header values accepted besides loopback
	// ones, e.g. "https://app.example.com"; "*" accepts any.
	AllowOrigins []string
}

// HostAllowed reports whether a request's Host header (host or host:port)
// is accepted.
func (g Guard) HostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	if host != "" && IsLoopbackHost(host) {
		return true
	}
	for _, a := range g.AllowHosts {
		if a == "*" || strings.EqualFold(a, host) || strings.EqualFold(a, hostport) || strings.EqualFold(strings.Trim(a, "[]"), strings.Trim(host, "[]")) {
			return true
		}
	}
	return false
}

// OriginAllowed reports whether a request's Origin header is accepted; a
// request without one (not from a browser page) is.
func (g Guard) OriginAllowed(origin string) bool {
	if origin == "" || slices.Contains(g.AllowOrigins, origin) || slices.Contains(g.AllowOrigins, "*") {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return false
	}
	return IsLoopbackHost(u.Hostname())
}

// ListenHosts is the --listen guard every listener's command applies: addr
// must be HOST:PORT, and its host loopback unless allowRemote (what says
// what would be reachable, for the error: "the session"). It returns the
// Host header values a Guard accepts besides loopback ones: allow, and the
// listen host when it is a name or an address clients use (not 0.0.0.0 or
// ::, which name no host).
func ListenHosts(addr string, allowRemote bool, allow []string, what string) ([]string, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %q: expected HOST:PORT, e.g. 127.0.0.1:7788: %w", addr, err)
	}
	if !IsLoopbackHost(host) && !allowRemote {
		return nil, fmt.Errorf("--listen %q is not a loopback address: %s would be reachable from other machines; use 127.0.0.1 or add --allow-remote", addr, what)
	}
	hosts := slices.Clone(allow)
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		hosts = append(hosts, host) // the address served is a name clients use
	}
	return hosts, nil
}
