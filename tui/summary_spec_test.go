package tui

import (
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// The summary column names the spec features of 2025-11-25 and 2026-07-28
// instead of showing their JSON: MCP's error codes, resource_link content,
// URL-mode elicitation and its completion notification, subscriptions/listen
// and its acknowledgement.
func TestSummarySpecFeatures(t *testing.T) {
	for _, tt := range []struct {
		msg, method, want string
	}{
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32042,"message":"This request requires more information.","data":{"elicitations":[]}}}`, "tools/call",
			`-32042 URLElicitationRequired This request requires more information. · {"elicitations":[]}`},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32002,"message":"Resource not found"}}`, "resources/read", "-32002 ResourceNotFound Resource not found"},
		{`{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`, "x", "-32601 Method not found"},
		{`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"resource_link","uri":"demo://resource/static/document/README.md","name":"README.md"}]}}`, "tools/call",
			"resource_link demo://resource/static/document/README.md (README.md)"},
		{`{"jsonrpc":"2.0","id":2,"method":"elicitation/create","params":{"mode":"url","elicitationId":"e1","url":"https://example.com/connect","message":"Connect your account"}}`, "elicitation/create",
			"url https://example.com/connect · Connect your account"},
		{`{"jsonrpc":"2.0","method":"notifications/elicitation/complete","params":{"elicitationId":"e1"}}`, "notifications/elicitation/complete", "elicitation e1 complete"},
		// 2026-07-28 subscriptions, as the v2 SDK 2.4.0 sends them
		{`{"jsonrpc":"2.0","id":"listen:1","method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true,"resourceSubscriptions":["demo://a"]},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, "subscriptions/listen",
			"listen: tools list_changed; updates of demo://a"},
		{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{"toolsListChanged":true},"_meta":{"io.modelcontextprotocol/subscriptionId":"listen:1"}}}`, "notifications/subscriptions/acknowledged",
			`subscription "listen:1" subscribed: tools list_changed`},
		{`{"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"notifications":{}}}`, "notifications/subscriptions/acknowledged", "subscribed: nothing"},
	} {
		es := tape.Classify([]byte(tt.msg))
		if len(es) != 1 {
			t.Fatalf("%s: %d entries", tt.msg, len(es))
		}
		if got := Summary(es[0], []byte(tt.msg), tt.method); got != tt.want {
			t.Errorf("summary of %s:\n got %q\nwant %q", tt.msg, got, tt.want)
		}
	}
}
