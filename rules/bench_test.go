package rules

import (
	"fmt"
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

// manyRules is a rules file of n rules, each naming a method of its own,
// one in four with an expression and one in eight naming no method.
func manyRules(n int) []byte {
	var b strings.Builder
	b.WriteString("seed: 1\nrules:\n")
	for i := range n {
		fmt.Fprintf(&b, "  - name: r%d\n    action: log\n", i)
		switch {
		case i%8 == 7:
			fmt.Fprintf(&b, "    match: {phase: request}\n")
		case i%4 == 3:
			fmt.Fprintf(&b, "    match: {method: m%d, when: 'params.n == %d'}\n", i, i)
		default:
			fmt.Fprintf(&b, "    match: {method: m%d, dir: send}\n    schedule: {every: 2}\n", i)
		}
	}
	return []byte(b.String())
}

// BenchmarkParse20k loads 20,000 rules (issue 20: 10 s when loading was
// quadratic); it reports the time a load, to compare with 5,000 rules'.
func BenchmarkParse20k(b *testing.B) {
	for _, n := range []int{5000, 20000} {
		src := manyRules(n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			for b.Loop() {
				s, err := Parse("bench", src)
				if err != nil {
					b.Fatal(err)
				}
				if s.Len() != n {
					b.Fatalf("%d rules, want %d", s.Len(), n)
				}
			}
		})
	}
}
