package record_test

import (
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// TestProxyLegacySSE records the go-sdk's legacy HTTP+SSE client with
// server-everything in sse mode: the endpoint event is rewritten so the
// client posts through the proxy, and the tape pairs every request.
func TestProxyLegacySSE(t *testing.T) {
	upstream := mcptest.StartEverythingSSE(t)
	proxied, path := startProxy(t, upstream, nil)
	direct := mcptest.LegacyTranscript(t, upstream)
	through := mcptest.LegacyTranscript(t, proxied)
	if direct != through {
		t.Errorf("legacy transcript through the proxy differs.\nthrough:\n%s\ndirect:\n%s", through, direct)
	}
	m := tapeSummary(t, path)
	wantMethods(t, m, "send initialize", "send tools/call", "lifecycle $http/endpoint")
	if m["send tools/call"] != 3 {
		t.Errorf("tape has %d tools/call, want 3", m["send tools/call"])
	}
}
