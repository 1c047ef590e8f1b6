package tape

import (
	"encoding/json"
	"reflect"
	"testing"
)

func TestCanonical(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"b":1,"a":[true,null,"x"]}`, `{"a":[true,null,"x"],"b":1}`},
		{`{ "n" : 1.0 , "m" : 1e2, "k": -0, "big": 18446744073709551617, "f": 0.1 }`, `{"big":18446744073709551617,"f":0.1,"k":0,"m":100,"n":1}`},
		{`"caf\u00e9 <b>"`, `"café <b>"`},
		{`{"x":1E999999}`, `{"x":1e999999}`},
	}
	for _, tt := range tests {
		got, err := Canonical([]byte(tt.in))
		if err != nil || string(got) != tt.want {
			t.Errorf("Canonical(%s) = %s, %v; want %s", tt.in, got, err, tt.want)
		}
	}
	if !EqualJSON([]byte(`{"a":1,"b":[1.50]}`), []byte(`{"b":[1.5],"a":1.0}`)) {
		t.Errorf("EqualJSON: same meaning judged different")
	}
	if EqualJSON([]byte(`{"a":"1"}`), []byte(`{"a":1}`)) {
		t.Errorf("EqualJSON: a string and a number judged equal")
	}
}

func TestNormalizer(t *testing.T) {
	ignore, err := ParsePath("params.arguments.ts")
	if err != nil {
		t.Fatal(err)
	}
	items, err := ParsePath("$.params.items[*].at")
	if err != nil {
		t.Fatal(err)
	}
	n := Normalizer{Ignore: []Path{ignore, items}}
	a := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"e","arguments":{"x":1,"ts":"now"},"items":[{"at":1,"v":1}],"_meta":{"progressToken":5,"traceparent":"00-ab","io.modelcontextprotocol/clientInfo":{}}},"_meta":{"dir":"send"}}`
	b := `{"method":"tools/call","id":"zz","jsonrpc":"2.0","params":{"arguments":{"ts":"later","x":1.0},"name":"e","items":[{"v":1,"at":2}]}}`
	va, err := n.Normalize([]byte(a))
	if err != nil {
		t.Fatal(err)
	}
	vb, err := n.Normalize([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := CanonicalValue(va)
	cb, _ := CanonicalValue(vb)
	if string(ca) != string(cb) {
		t.Errorf("normalized forms differ:\n%s\n%s", ca, cb)
	}
	c := `{"method":"tools/call","params":{"arguments":{"x":2},"name":"e","_meta":{"custom":1}}}`
	vc, _ := n.Normalize([]byte(c))
	cc, _ := CanonicalValue(vc)
	if string(cc) == string(ca) {
		t.Errorf("different arguments normalized the same: %s", cc)
	}
	if want := `{"method":"tools/call","params":{"_meta":{"custom":1},"arguments":{"x":2},"name":"e"}}`; string(cc) != want {
		t.Errorf("non-volatile _meta: got %s, want %s", cc, want)
	}
	p, err := n.NormalizeParams([]byte(`{"arguments":{"ts":1,"x":1},"name":"e"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cp, _ := CanonicalValue(p); string(cp) != `{"arguments":{"x":1},"name":"e"}` {
		t.Errorf("NormalizeParams: %s", cp)
	}
}

func TestParsePathErrors(t *testing.T) {
	for _, s := range []string{"", "$", "a[0"} {
		if _, err := ParsePath(s); err == nil {
			t.Errorf("ParsePath(%q) accepted", s)
		}
	}
	p, err := ParsePath("result.content[0].text")
	if err != nil || p.String() != "result.content.0.text" {
		t.Errorf("ParsePath: %v %v", p, err)
	}
}

func TestStripMeta(t *testing.T) {
	tests := []struct{ in, want string }{
		{`{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1}},"_meta":{"dir":"recv"}}`, `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"x":1}}}`},
		{`{"_meta":{"dir":"recv"},"id":1,"result":{}}`, `{"id":1,"result":{}}`},
		{`{"_meta":{"dir":"recv"}}`, `{}`},
		{`{"id":1,"result":{}}`, `{"id":1,"result":{}}`},
		{`not json`, `not json`},
	}
	for _, tt := range tests {
		if got := string(StripMeta([]byte(tt.in))); got != tt.want {
			t.Errorf("StripMeta(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// An empty optional object and its absence compare equal unless Exact:
// the TS SDK sends "arguments":{} where mcp-go sends none; mcp-go sends a
// list request's "params":{} where the go-sdk sends none (a replay of an
// mcp-go client's tape to the go-sdk client diverged on resources/list).
func TestNormalizeEmptyOptional(t *testing.T) {
	pairs := [][2]string{
		{`{"jsonrpc":"2.0","id":1,"method":"resources/list","params":{}}`, `{"jsonrpc":"2.0","id":2,"method":"resources/list"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{}}}`, `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x"}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""},"context":{}}}`, `{"jsonrpc":"2.0","id":2,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p"},"argument":{"name":"a","value":""}}}`},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}}`, `{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`},
	}
	for _, p := range pairs {
		for _, exact := range []bool{false, true} {
			n := Normalizer{Exact: exact, KeepVolatile: exact}
			a, err1 := n.Normalize([]byte(p[0]))
			b, err2 := n.Normalize([]byte(p[1]))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if equal := reflect.DeepEqual(a, b); equal == exact {
				t.Errorf("Exact=%v: %s vs %s: equal=%v", exact, p[0], p[1], equal)
			}
			// The engine matches by params alone.
			pa, err1 := n.NormalizeParams(rawParams(t, p[0]))
			pb, err2 := n.NormalizeParams(rawParams(t, p[1]))
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if equal := reflect.DeepEqual(pa, pb); equal == exact {
				t.Errorf("NormalizeParams, Exact=%v: %s vs %s: equal=%v", exact, p[0], p[1], equal)
			}
		}
	}
	// Not empty: a real difference stays one.
	n := Normalizer{}
	a, _ := n.Normalize([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{"a":1}}}`))
	b, _ := n.Normalize([]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"}}`))
	if reflect.DeepEqual(a, b) {
		t.Errorf("non-empty arguments compared equal to none")
	}
}

// rawParams returns the params member of message msg, or nil when it has none.
func rawParams(t *testing.T, msg string) []byte {
	t.Helper()
	var m struct {
		Params json.RawMessage `json:"params"`
	}
	if err := json.Unmarshal([]byte(msg), &m); err != nil {
		t.Fatal(err)
	}
	return m.Params
}
