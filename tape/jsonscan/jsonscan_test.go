package jsonscan

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validCases are hand-picked texts around json.Valid's edges: each
// container, number, literal and string form, cut short or with a byte
// too many, and nesting at and past encoding/json's limit.
var validCases = []string{
	"", " ", "{}", "[]", "[", "]", "{", `{"a"}`, `{"a":}`, `{"a":1}`, `{"a":1,}`, `[1,]`, `[,1]`, `{,}`, `{"a":1 "b":2}`, `{"a" 1}`,
	`0`, `-0`, `01`, `-`, `1.`, `1.5`, `.5`, `1e`, `1e+`, `1e+5`, `1E-5`, `1E-2`, `-1.5e10`, `-0.0e-0`, `1x`, `+1`, `truex`, `true`,
	`tru`, `nul`, `null `, `nulll`, ` false`, `falsey`, `"\u00e9"`, `"\u00g9"`, `"\u00e"`, `"\u12"`, `"\x"`, `"\q"`, `"\/"`,
	"\"\x01\"", "\"\x7f\"", "\"\xff\"", "\"\xff\xfe\"", `"abc`, `"a\"`, `"a\\"`, `[1 2]`, `{"a":1}}`, `{"a":[}]}`, `[[]`, `"x"`, `1`,
	`{"a":[1,{"b":null}]}`, `{"a":"\u00zz"}`, `"\/\b\f\n\r\t\"\\"`, `{"a":1} x`, `{} {}`, `{"a":1}{}`, `{"a":1 , "b" : [ 1 , 2 ] }`,
	"\t{\n}\r\n", "\t[\r\n1\n]\n", `[true,false,null,"",{},[]]`, ` [ ] `, `{"a":[1,-0.5e+3,"x\u00e9\n",true,false,null,{}]}`,
	`{"a":[1,2.5e3,"x\u0041",true,null]}`, `{"a":"` + strings.Repeat("x", 40) + `\n"}`, `["abc\u0041def"]`, `"abcdefghijklmnop\"qrstuvwxyz"`, `"0123456\u001f"`, "\"0123456\x1f89\"",
	strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth), strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1),
	strings.Repeat(`{"a":`, MaxDepth) + "1" + strings.Repeat("}", MaxDepth), strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
	strings.Repeat(`{"a":[`, MaxDepth/2) + strings.Repeat("]}", MaxDepth/2), `{"a":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + "}",
}

// checkValid fails unless Valid and Members say of b what json.Valid says
// (Members: valid and an object), and Members hands over each member's
// key and value whole.
func checkValid(t *testing.T, b []byte) {
	t.Helper()
	want := json.Valid(b)
	if got := Valid(b); got != want {
		t.Fatalf("Valid(%q) = %v, json.Valid says %v", b, got, want)
	}
	if want {
		checkSpace(t, b)
	}
	var keys, vals [][]byte
	ok := Members(b, func(k, v []byte) { keys, vals = append(keys, k), append(vals, v) })
	object := want && b[SkipSpace(b, 0)] == '{'
	if ok != object {
		t.Fatalf("Members(%q) = %v, expected %v (json.Valid %v)", b, ok, object, want)
	}
	if !ok {
		return
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("json.Unmarshal(%q): %v", b, err)
	}
	for n, k := range keys {
		key, kok := Unquote(nil, append(append([]byte{'"'}, k...), '"'))
		if !kok {
			t.Fatalf("Members(%q): key %q is no JSON string", b, k)
		}
		if !json.Valid(vals[n]) {
			t.Fatalf("Members(%q): value %q of %q is not valid", b, vals[n], k)
		}
		if _, found := m[string(key)]; !found {
			t.Fatalf("Members(%q): key %q not among encoding/json's", b, key)
		}
	}
}

// checkSpace fails unless ValueEndSpace, and ObjectWalk with its values
// read by ValueEndSpace, report of the valid document b the white space
// between its tokens: any when json.Compact takes some away, a line break
// when it holds one (a valid string holds none raw).
func checkSpace(t *testing.T, b []byte) {
	t.Helper()
	i := SkipSpace(b, 0)
	end := ValueEnd(b, i, 0)
	v := b[i:end]
	var c bytes.Buffer
	if err := json.Compact(&c, v); err != nil {
		t.Fatalf("json.Compact(%q): %v", v, err)
	}
	var want Space
	if c.Len() != len(v) {
		want |= SpaceAny
	}
	if bytes.ContainsAny(v, "\r\n") {
		want |= SpaceBreak
	}
	var sp Space
	if got := ValueEndSpace(b, i, 0, &sp); got != end || sp != want {
		t.Fatalf("ValueEndSpace(%q) = %d, space %b; expected %d, space %b", b, got, sp, end, want)
	}
	if v[0] != '{' {
		return
	}
	sp = 0
	got := ObjectWalk(b, i, 1, &sp, func(_ []byte, vs int) int { return ValueEndSpace(b, vs, 1, &sp) })
	if got != end || sp != want {
		t.Fatalf("ObjectWalk(%q) = %d, space %b; expected %d, space %b", b, got, sp, end, want)
	}
}

// Valid and Members say what json.Valid says, on every input, the
// fuzzer's included.
func FuzzValid(f *testing.F) {
	for _, s := range validCases {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValid(t, b) })
}

// TestValidAgrees: Valid says what json.Valid says on every line of the
// testdata tapes and mutations of them, on strings with an escape, a
// control byte, a quote or a byte past ASCII at every place within and
// beyond StringEnd's first words and its 32-byte runs (as a value, a key,
// cut short), and on random texts.
func TestValidAgrees(t *testing.T) {
	cases := append([]string(nil), validCases...)
	for k := range 80 {
		pad := strings.Repeat("abcdefgh", 10)[:k]
		for _, odd := range stringOdds {
			cases = append(cases, `{"q":"`+pad+odd+pad+`"}`, `["`+pad+odd, `"`+pad+odd+`"`, `{"`+pad+odd+`":1}`, `["`+pad+odd+pad+`",1]`)
		}
	}
	rng := rand.New(rand.NewPCG(3, 4))
	alphabet := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"`, `\`, "1", "-", ".", "e", "0", "true", "null", " ", "\n", "x", "\x00", "é", strings.Repeat("lorem ", 7)}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	valid := 0
	for _, c := range cases {
		checkValid(t, []byte(c))
		if json.Valid([]byte(c)) {
			valid++
		}
	}
	if valid < 100 {
		t.Fatalf("only %d valid texts among the cases", valid)
	}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no testdata tapes in ../../testdata")
	}
	const mutations = "{}[]\",:\\ 0123456789.eE+-tfnulx\x01\xff"
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkValid(t, line)
			for range 3 {
				if len(line) == 0 {
					break
				}
				m := append([]byte(nil), line...)
				i := rng.IntN(len(m))
				switch rng.IntN(3) {
				case 0:
					m[i] = mutations[rng.IntN(len(mutations))]
				case 1:
					m = append(m[:i], m[i+1:]...)
				default:
					m = append(m[:i], append([]byte{mutations[rng.IntN(len(mutations))]}, m[i:]...)...)
				}
				checkValid(t, m)
			}
		}
	}
}

// Unquote decodes a JSON string as encoding/json does (escapes, surrogate
// pairs, a lone surrogate or invalid UTF-8 as U+FFFD), and refuses what
// it refuses; StringEnd ends a string where encoding/json does.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{
		`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, "\"\xff\xfe ok\"", `"\x"`, `"\u12"`, `"a`, `"a"b"`, "\"\x01\"", `""`, `"é"`, `"\uD83D\uDE00"`, `"\u00E9"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		werr := json.Unmarshal(b, &want)
		if len(b) > 0 && b[0] == '"' {
			end := StringEnd(b, 0)
			if (end >= 0 && SkipSpace(b, end) == len(b)) != (werr == nil) {
				t.Fatalf("StringEnd(%q) = %d, json.Unmarshal says %v", b, end, werr)
			}
		}
		if len(b) == 0 || b[0] != '"' || b[len(b)-1] != '"' {
			return // json.Unmarshal takes other values, and spaces around one
		}
		got, ok := Unquote([]byte("pre"), b)
		if ok != (werr == nil) {
			t.Fatalf("Unquote(%q) ok %v, json.Unmarshal says %v", b, ok, werr)
		}
		if ok && string(got) != "pre"+want {
			t.Fatalf("Unquote(%q) = %q, json.Unmarshal says %q", b, got[3:], want)
		}
	})
}

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

// AppendQuoted quotes every string as encoding/json does, with and
// without escapeHTML, as a string and as bytes; Plain stops at the first
// byte a JSON string cannot hold as it is. The seeds put each byte that
// needs escaping at each position of an eight-byte word, with invalid
// UTF-8, U+2028/U+2029 and HTML characters, and random strings of those.
func FuzzAppendQuoted(f *testing.F) {
	special := []string{"\"", "\\", "<", ">", "&", "\x00", "\x1f", "\b", "\f", "\n", "\r", "\t", "\x7f", "é", "\u2028", "\u2029", "\xff", "\xe2\x80", "😀", "\xf0\x9f\x98"}
	for _, s := range special {
		for pre := range 17 {
			f.Add(strings.Repeat("a", pre) + s)
			f.Add(strings.Repeat("b", pre) + s + strings.Repeat("c", 9))
		}
	}
	alphabet := append([]string{"a", "lorem ", "0123456789abcdef"}, special...)
	rng := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		var sb strings.Builder
		for range rng.IntN(40) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		f.Add(sb.String())
	}
	f.Add("")
	f.Add("plain")
	f.Add(strings.Repeat("x", 1000))
	f.Fuzz(func(t *testing.T, s string) {
		for _, html := range []bool{false, true} {
			want := encodingJSON(t, s, html)
			if got := AppendQuoted([]byte("pre"), s, html); string(got) != "pre"+string(want) {
				t.Fatalf("string %q (escapeHTML %v): expected %s, found %s", s, html, want, got[3:])
			}
			if got := AppendQuoted(nil, []byte(s), html); string(got) != string(want) {
				t.Fatalf("bytes %q (escapeHTML %v): expected %s, found %s", s, html, want, got)
			}
		}
		for i := range len(s) + 1 {
			want := i
			for want < len(s) && s[want] >= 0x20 && s[want] != '"' && s[want] != '\\' {
				want++
			}
			if got := Plain(s, i); got != want {
				t.Fatalf("Plain(%q, %d) = %d, expected %d", s, i, got, want)
			}
		}
	})
}
