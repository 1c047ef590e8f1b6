package mcphttp

import (
	"slices"
	"strings"
	"testing"
)

func TestGuard(t *testing.T) {
	g := Guard{AllowHosts: []string{"replay.internal"}, AllowOrigins: []string{"https://app.example"}}
	for _, tt := range []struct {
		host string
		ok   bool
	}{
		{"127.0.0.1:8808", true}, {"localhost", true}, {"[::1]:80", true}, {"LOCALHOST:1", true},
		{"replay.internal:8808", true}, {"evil.example", false}, {"10.0.0.1:80", false}, {"", false},
	} {
		if got := g.HostAllowed(tt.host); got != tt.ok {
			t.Errorf("HostAllowed(%q) = %v, want %v", tt.host, got, tt.ok)
		}
	}
	for _, tt := range []struct {
		origin string
		ok     bool
	}{
		{"", true}, {"http://localhost:3000", true}, {"http://127.0.0.1", true}, {"https://app.example", true},
		{"https://evil.example", false}, {"null", false}, {"file://x", false},
	} {
		if got := g.OriginAllowed(tt.origin); got != tt.ok {
			t.Errorf("OriginAllowed(%q) = %v, want %v", tt.origin, got, tt.ok)
		}
	}
	if (Guard{AllowHosts: []string{"*"}}).HostAllowed("anything:1") != true {
		t.Error("* accepts any host")
	}
}

// TestListenHosts checks the --listen guard: the address's form, loopback
// unless allowed, and the hosts a Guard then accepts.
func TestListenHosts(t *testing.T) {
	for _, c := range []struct {
		addr   string
		remote bool
		want   []string
		err    string
	}{
		{"127.0.0.1:0", false, []string{"a", "127.0.0.1"}, ""},
		{"localhost:7788", false, []string{"a", "localhost"}, ""},
		{"[::1]:1", false, []string{"a", "::1"}, ""},
		{"0.0.0.0:0", false, nil, `--listen "0.0.0.0:0" is not a loopback address: the thing would be reachable`},
		{"0.0.0.0:0", true, []string{"a"}, ""},
		{"devbox:80", true, []string{"a", "devbox"}, ""},
		{"7788", false, nil, `--listen "7788": expected HOST:PORT`},
	} {
		allow := []string{"a"}
		got, err := ListenHosts(c.addr, c.remote, allow, "the thing")
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("ListenHosts(%q, %v): error %v, want one saying %q", c.addr, c.remote, err, c.err)
		case c.err == "" && (err != nil || !slices.Equal(got, c.want)):
			t.Errorf("ListenHosts(%q, %v) = %q, %v; want %q", c.addr, c.remote, got, err, c.want)
		}
		if len(allow) != 1 {
			t.Errorf("ListenHosts(%q) changed the caller's list: %q", c.addr, allow)
		}
	}
}
