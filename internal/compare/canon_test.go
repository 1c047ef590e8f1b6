package compare

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// slowCanon is the decoding path canonParams stands in for.
func slowCanon(params []byte, n *tape.Normalizer) []byte {
	v, err := n.NormalizeParams(params)
	if err != nil {
		return params
	}
	b, err := tape.CanonicalValue(v)
	if err != nil {
		return params
	}
	return b
}

// TestCanonParamsAgrees: wherever the byte scan answers, its bytes are the
// decoding path's, for each Normalizer setting, on hand-picked params and
// on random ones; and it answers for the common shapes.
func TestCanonParamsAgrees(t *testing.T) {
	cases := []string{
		``, `null`, `{}`, `[]`, ` { } `, `{"name":"echo"}`, `{"name":"echo","arguments":{"b":1,"a":[1,2.50,-0,1e2,-0.0]}}`,
		`{"_meta":{"progressToken":7}}`, `{"_meta":{"progressToken":7,"x":1},"name":"t"}`, `{"_meta":{}}`, `{"_meta":null}`,
		`{"_meta":{"a":1},"_meta":{}}`, `{"_meta":{},"_meta":{"a":1}}`, `{"a":1,"a":2}`, `{"ref":{"type":"ref/prompt"},"argument":{}}`,
		`{"q":"tab\there \"quoted\" back\\slash\nnew"}`, `{"q":"\u00e9"}`, `{"q":"é ü 日本"}`, `{"q":"a\u2028b"}`, `{"q":"\/"}`,
		`{"k\"ey":1}`, `{"a":01}`, `{"a":1.}`, `{"a":.5}`, `{"a":1e}`, `{"a":tru}`, `{"a":1,}`, `{"a" 1}`, `[1,2,]`, `{"a":1} x`,
		`{"z":{"y":{"x":[{"b":true,"a":false}]}}}`, `{"io.modelcontextprotocol/x":1}`, `{"_meta":{"io.modelcontextprotocol/related":1,"traceparent":"t","keep":"k"}}`,
		"{\"a\":\"\xff\"}", "{\"a\":\"\x01\"}", `{"n":123456789012345678901234567890}`, `{"n":1.0,"m":1E+2,"o":-1.5e-3}`,
	}
	for k := range 24 { // what the eight-bytes-at-a-time scan must not skip
		pad := strings.Repeat("abcdefgh", 3)[:k]
		for _, odd := range []string{`\"`, `\\`, `\n`, "\x01", "\x1f", "é", `\u0041`, "\x7f", "~"} {
			cases = append(cases, `{"q":"`+pad+odd+pad+`","`+pad+`":1}`)
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		cases = append(cases, randomParams(rng))
	}
	for _, n := range []*tape.Normalizer{{}, {Exact: true}, {KeepVolatile: true}, {Exact: true, KeepVolatile: true}} {
		answered := 0
		for _, c := range cases {
			fast, ok := canonParams(nil, []byte(c), n)
			if !ok {
				continue
			}
			answered++
			if slow := slowCanon([]byte(c), n); !bytes.Equal(fast, slow) {
				t.Fatalf("normalizer %+v, params %s: scan gives %s, decoding %s", *n, c, fast, slow)
			}
		}
		if answered < len(cases)*3/4 {
			t.Errorf("normalizer %+v: the scan answered %d of %d params, want most", *n, answered, len(cases))
		}
	}
	if _, ok := canonParams(nil, []byte(`{"name":"echo","arguments":{"q":"x"},"_meta":{"progressToken":1}}`), &tape.Normalizer{}); !ok {
		t.Error("the scan left a plain tools/call's params to decoding")
	}
}

func randomParams(rng *rand.Rand) string {
	var b strings.Builder
	ws := func() {
		if rng.IntN(4) == 0 {
			b.WriteString([]string{" ", "\n", "\t ", "\r\n"}[rng.IntN(4)])
		}
	}
	keys := []string{"name", "arguments", "_meta", "ref", "context", "a", "b", "B", "progressToken", "traceparent", "io.modelcontextprotocol/x", "é"}
	var val func(d int)
	val = func(d int) {
		ws()
		switch k := rng.IntN(9); {
		case k < 3 && d < 4:
			b.WriteByte('{')
			for i := range rng.IntN(4) {
				if i > 0 {
					b.WriteByte(',')
				}
				ws()
				b.WriteString(`"` + keys[rng.IntN(len(keys))] + `"`)
				ws()
				b.WriteByte(':')
				val(d + 1)
			}
			ws()
			b.WriteByte('}')
		case k < 4 && d < 4:
			b.WriteByte('[')
			for i := range rng.IntN(3) {
				if i > 0 {
					b.WriteByte(',')
				}
				val(d + 1)
			}
			b.WriteByte(']')
		case k < 6:
			b.WriteString([]string{`"plain"`, `"tab\tq\"b\\"`, `"é"`, `""`, `"<&>"`, `"\u0041"`}[rng.IntN(6)])
		case k < 8:
			b.WriteString([]string{"0", "-0", "12", "1.50", "1e3", "-2.5E-2", "1.0", "9007199254740993"}[rng.IntN(8)])
		default:
			b.WriteString([]string{"true", "false", "null"}[rng.IntN(3)])
		}
		ws()
	}
	val(0)
	return b.String()
}

// printableSlow is printableASCII a byte at a time.
func printableSlow(b []byte) bool {
	for _, ch := range b {
		if ch < 0x20 || ch >= 0x80 {
			return false
		}
	}
	return true
}

// TestPrintableASCII: the eight-bytes-at-a-time check agrees with a byte at
// a time for every byte value at every position of strings of each length
// up to 70 (the four-word blocks, the words after them, the tail), and a
// borrow from a byte below 0x20 is not mistaken for one in the next.
func TestPrintableASCII(t *testing.T) {
	for n := 0; n <= 70; n++ {
		base := bytes.Repeat([]byte{'a'}, n)
		if !printableASCII(base) {
			t.Fatalf("%d plain letters: not printable", n)
		}
		for pos := range n {
			for v := range 256 {
				b := bytes.Clone(base)
				b[pos] = byte(v)
				if got, want := printableASCII(b), printableSlow(b); got != want {
					t.Fatalf("length %d, byte %#x at %d: printableASCII %v, want %v", n, v, pos, got, want)
				}
			}
		}
	}
	for _, s := range []string{" \x7f~!", "\x1f", "\x80", "\x20\x20\x20\x20\x20\x20\x20\x20\x00", strings.Repeat(" ", 40) + "\xff"} {
		if got, want := printableASCII([]byte(s)), printableSlow([]byte(s)); got != want {
			t.Errorf("%q: printableASCII %v, want %v", s, got, want)
		}
	}
}

// FuzzPrintableASCII: the word-at-a-time check is the byte-at-a-time one,
// and scanString over a string of those bytes agrees with the decoding
// path (canonParams on the string alone).
func FuzzPrintableASCII(f *testing.F) {
	f.Add([]byte("hello"), 3)
	f.Add([]byte(strings.Repeat("lorem ipsum ", 10)+"\x01"), 0)
	f.Add([]byte("\u2028 and \xff"), 1)
	f.Fuzz(func(t *testing.T, b []byte, cut int) {
		if got, want := printableASCII(b), printableSlow(b); got != want {
			t.Fatalf("%q: printableASCII %v, want %v", b, got, want)
		}
		if cut >= 0 && cut < len(b) {
			b = b[cut:]
		}
		params := []byte(`{"s":"` + strings.NewReplacer(`"`, ``, `\`, ``).Replace(string(b)) + `"}`)
		n := &tape.Normalizer{}
		if got, ok := canonParams(nil, params, n); ok {
			if want := slowCanon(params, n); !bytes.Equal(got, want) {
				t.Fatalf("%q: scan %q, decoding %q", params, got, want)
			}
		}
	})
}
