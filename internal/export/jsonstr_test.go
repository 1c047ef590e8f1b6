package export

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand"
	"strings"
	"testing"
)

// encodingJSON is what encoding/json writes for v, without the newline.
func encodingJSON(t testing.TB, v any, escapeHTML bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(escapeHTML)
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// appendJSONString quotes every string as encoding/json does: each byte
// that needs escaping at each position of an eight-byte word, invalid
// UTF-8, U+2028/U+2029, HTML characters with and without escapeHTML, and
// random strings over an alphabet of those.
func TestAppendJSONStringAgrees(t *testing.T) {
	special := []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", "\xf0\x9f\x98"}
	var cases []string
	for _, s := range special {
		for pre := 0; pre < 17; pre++ {
			cases = append(cases, strings.Repeat("a", pre)+s, strings.Repeat("b", pre)+s+strings.Repeat("c", 9))
		}
	}
	alphabet := append([]string{"a", "lorem ", "0123456789abcdef"}, special...)
	rng := rand.New(rand.NewSource(1))
	for range 3000 {
		var sb strings.Builder
		for range rng.Intn(40) {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		cases = append(cases, sb.String())
	}
	cases = append(cases, "", "plain", strings.Repeat("x", 1000))
	for _, s := range cases {
		for _, html := range []bool{false, true} {
			want := encodingJSON(t, s, html)
			if got := appendJSONString([]byte("pre"), s, html); string(got) != "pre"+string(want) {
				t.Fatalf("string %q (escapeHTML %v): expected %s, found %s", s, html, want, got[3:])
			}
			if got := appendJSONString(nil, []byte(s), html); string(got) != string(want) {
				t.Fatalf("bytes %q (escapeHTML %v): expected %s, found %s", s, html, want, got)
			}
		}
	}
}

func TestAppendJSONFloatAgrees(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 1e-6, 9.99e-7, 1e-7, -1e-9, 1e20, 1e21, 1.5e300, 123.456, 3.000001, math.SmallestNonzeroFloat64, math.MaxFloat64, 216, 0.001} {
		want := encodingJSON(t, f, false)
		if got := appendJSONFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: expected %s, found %s", f, want, got)
		}
	}
}
