package rules

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkApplyNoMatch is one echo request and its answer through 20
// rules that match neither (the record benchmark's file).
func BenchmarkApplyNoMatch(b *testing.B) {
	var sb strings.Builder
	sb.WriteString("rules:\n")
	for i := range 12 {
		fmt.Fprintf(&sb, "  - name: tool-%d\n    match: {phase: request, tool: tool-%d}\n    action: error\n", i, i)
	}
	for i, m := range []string{"resources/read", "prompts/get", "ping", "completion/complete"} {
		fmt.Fprintf(&sb, "  - name: method-%d\n    match: {method: %s}\n    action: delay\n    delay: 1s\n", i, m)
	}
	sb.WriteString("  - name: progress\n    match: {phase: notification, method: notifications/progress}\n    action: block\n")
	for i := range 3 {
		fmt.Fprintf(&sb, "  - name: when-%d\n    match: {method: tools/call, when: 'params.arguments.limit > %d'}\n    action: log\n", i, i)
	}
	s, err := Parse("bench", []byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	c := s.Conn()
	payload := strings.Repeat("x", 1024)
	req := send(`{"jsonrpc":"2.0","id":7,"method":"echo","params":{"data":"` + payload + `"}}`)
	ans := recv(`{"jsonrpc":"2.0","id":7,"result":{"data":"` + payload + `"}}`)
	b.ReportAllocs()
	for b.Loop() {
		if c.Apply(req).Matched || c.Apply(ans).Matched {
			b.Fatal("matched")
		}
	}
}
