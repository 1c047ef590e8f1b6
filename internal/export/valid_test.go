package export

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestValidJSONAgrees: validJSON says what json.Valid says, on hand-picked
// texts, on every string position the eight-byte scan could skip, and on
// random texts and their cuts and mutations.
func TestValidJSONAgrees(t *testing.T) {
	cases := []string{
		``, ` `, `{}`, `[]`, `{"a":1}`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":}`, `{,}`, `[,1]`, `{"a":1}}`, `[[]`, `"x"`, `1`, `-`, `-0`, `01`,
		`1.`, `.5`, `1e`, `1e+`, `1E-2`, `tru`, `true`, `nul`, `null `, `falsey`, `{"a":[1,{"b":null}]}`, `{"a":"\u00zz"}`, `"\u00e9"`,
		`"\/\b\f\n\r\t\"\\"`, `"\x"`, "\"\x01\"", "\"\x7f\"", "\"\xff\xfe\"", `{"a":1} x`, `{} {}`, strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), `{"a":1 , "b" : [ 1 , 2 ] }`, "\t{\n}\r\n",
	}
	for k := range 24 {
		pad := strings.Repeat("abcdefgh", 3)[:k]
		for _, odd := range []string{`\"`, `\\`, `\n`, "\x01", "\x1f", "é", `\u0041`, "\x7f", `"`, `\q`, " "} {
			cases = append(cases, `{"q":"`+pad+odd+pad+`"}`, `["`+pad+odd)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"`, `\`, "1", "-", ".", "e", "0", "true", "null", " ", "\n", "x", "\x00", "é"}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	valid := 0
	for _, c := range cases {
		want := json.Valid([]byte(c))
		if got := validJSON([]byte(c)); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", c, got, want)
		}
		if want {
			valid++
		}
	}
	if valid < 100 {
		t.Fatalf("only %d valid texts among the cases", valid)
	}
}
