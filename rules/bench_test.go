package rules

import (
	"os"
	"strings"
	"testing"
)

// BenchmarkApplyNoMatch is one echo request and its answer through 20
// rules that match neither (the record benchmark's file).
func BenchmarkApplyNoMatch(b *testing.B) {
	src, err := os.ReadFile("testdata/nomatch20.yaml")
	if err != nil {
		b.Fatal(err)
	}
	s, err := Parse("bench", src)
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
