// Package mcphttp holds what tapedeck's three HTTP listeners (the replay
// server, the live debug server and the recording proxy) and its HTTP
// client share about MCP over HTTP: the header names, the protocol
// versions, and one policy against DNS rebinding (which Host and Origin
// headers a listener on this machine accepts).
package mcphttp

import (
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

// CarriesName reports whether a request of method names its target in the
// Mcp-Name header (2026-07-28): tools/call, prompts/get and resources/read,
// whose target is tape.Target's.
func CarriesName(method string) bool {
	switch method {
	case "tools/call", "prompts/get", "resources/read":
		return true
	}
	return false
}

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
