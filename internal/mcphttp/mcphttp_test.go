package mcphttp

import "testing"

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
