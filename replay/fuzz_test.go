package replay

import (
	"encoding/json"
	"testing"
)

// FuzzEngineReceive: whatever a client sends, every message the engine
// answers with is one valid JSON value, in each matching mode (an echoed
// malformed id once made "id":000).
func FuzzEngineReceive(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"c","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}`,
		`{"jsonrpc":"2.0","id":000,"method":"ping"}`,
		`{"id"000`,
		`{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"ping"}]`,
		`{"jsonrpc":"2.0","id":0,"result":{"roots":[]}}`,
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
		`not json`, `[]`, `{}`, `"x"`, `{"jsonrpc":"2.0","id":-0,"method":"ping"}`,
	} {
		f.Add([]byte(s), uint8(0))
	}
	x := sessionTape(f)
	f.Fuzz(func(t *testing.T, msg []byte, mode uint8) {
		e, err := NewEngine(x, EngineOptions{Mode: Mode(mode % 3)})
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range [][]byte{msg, msg} { // twice: the second meets the state the first left
			for _, o := range e.Receive(in, t0) {
				if o.Msg != nil && !json.Valid(o.Msg) {
					t.Fatalf("mode %v: answer to %q is not JSON: %q", Mode(mode%3), msg, o.Msg)
				}
			}
		}
	})
}
