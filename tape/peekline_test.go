package tape

import "testing"

// TestPeekLineAgreesWithPeek: on lines without a newline (what a relay
// hands over), PeekLine finds what Peek finds, Plain included (a carriage
// return still makes a line not Plain).
func TestPeekLineAgreesWithPeek(t *testing.T) {
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"a","params":{"x":"y"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"a"}` + "\r",
		"{\"jsonrpc\":\"2.0\",\r\"id\":1,\"method\":\"a\"}",
		`  {"jsonrpc":"2.0","id":"x","result":{}}  `,
		`{"jsonrpc":"2.0","method":"n","params":{},"_meta":{"a":1}}`,
		`{"jsonrpc":"2.0","method":"$transport/start"}`,
		`{"jsonrpc":"2.0","id":{},"method":"a"}`,
		`[{"jsonrpc":"2.0","id":1,"method":"a"}]`,
		`not json`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"m"}}`,
	} {
		var p, q Peeker
		a, b := p.Peek([]byte(line)), q.PeekLine([]byte(line))
		if a.Kind != b.Kind || a.Plain != b.Plain || string(a.ID) != string(b.ID) || string(a.Method) != string(b.Method) {
			t.Errorf("%q: Peek found %+v, PeekLine %+v", line, a, b)
		}
	}
}
