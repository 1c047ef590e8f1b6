package rules

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds rules files to the compiler: it refuses or compiles,
// never panics, and a compiled set applies to messages of every phase
// without panicking.
func FuzzParse(f *testing.F) {
	seeds, _ := filepath.Glob("testdata/*.yaml")
	for _, s := range seeds {
		if b, err := os.ReadFile(s); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("rules:\n  - name: a\n    match: {method: tools/call, tool: echo}\n    action: error\n    error: {code: -32000, message: boom}\n"))
	f.Add([]byte("seed: 3\nrules:\n  - name: p\n    match: {dir: recv, when: 'result.isError == true'}\n    action: modify\n    patch: [{op: copy, from: /result, path: /result/c}]\n    schedule: {probability: 0.5, after: 1}\n"))
	f.Add([]byte("rules:\n  - &r {name: a, action: log}\n  - {name: b, action: delay, delay: 1ms}\n"))
	f.Add([]byte("mode: audit\nrules:\n  - name: s\n    action: modify\n    set: {/params/x: 1}\n    delete: [/params/y]\n"))
	msgs := []Message{
		send(callEcho),
		recv(`{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"hi"}]}}`),
		send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`),
		recv(`{"jsonrpc":"2.0","id":"s1","method":"roots/list"}`),
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("rules.yaml", data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("an empty error")
			}
			return
		}
		c := s.Conn()
		for _, m := range msgs {
			d := c.Apply(m)
			for _, out := range d.Out {
				if len(out) > MaxMessage {
					t.Fatalf("a rule made a message of %d bytes", len(out))
				}
			}
		}
	})
}
