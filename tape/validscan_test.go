package tape

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// checkValidScan fails unless validValueEnd, validObjectEnd and
// validStringEnd say of b, from each of its first bytes and each quote,
// what jsonscan's ValueEnd, ObjectEnd and StringEnd say, and the whole
// of b what json.Valid says.
func checkValidScan(t *testing.T, b []byte) {
	t.Helper()
	i := jsonscan.SkipSpace(b, 0)
	got := validValueEnd(b, i, 0)
	if want := jsonscan.ValueEnd(b, i, 0); got != want {
		t.Fatalf("validValueEnd(%q) = %d, jsonscan.ValueEnd %d", b, got, want)
	}
	if ok := got >= 0 && jsonscan.SkipSpace(b, got) == len(b); ok != json.Valid(b) {
		t.Fatalf("validValueEnd(%q) = %d: valid %v, json.Valid says %v", b, got, ok, json.Valid(b))
	}
	if len(b) > 4096 {
		return // the nesting cases: from each place would be quadratic
	}
	for k := range b {
		switch b[k] {
		case '"':
			if got, want := validStringEnd(b, k), jsonscan.StringEnd(b, k); got != want {
				t.Fatalf("validStringEnd(%q, %d) = %d, jsonscan.StringEnd %d", b, k, got, want)
			}
		case '{':
			var gk, wk []string
			got := validObjectEnd(b, k, 1, func(key, val []byte) { gk = append(gk, string(key)+"="+string(val)) })
			want := jsonscan.ObjectEnd(b, k, 1, func(key, val []byte) { wk = append(wk, string(key)+"="+string(val)) })
			if got != want || strings.Join(gk, "\x00") != strings.Join(wk, "\x00") {
				t.Fatalf("validObjectEnd(%q, %d) = %d %q, jsonscan.ObjectEnd %d %q", b, k, got, gk, want, wk)
			}
		}
		if k < 64 {
			if got, want := validValueEnd(b, k, 1), jsonscan.ValueEnd(b, k, 1); got != want {
				t.Fatalf("validValueEnd(%q, %d) = %d, jsonscan.ValueEnd %d", b, k, got, want)
			}
		}
	}
}

// TestValidScanAgrees: ReadCallsMapped's validity check says what
// jsonscan's says (and json.Valid) on strings with an escape, a control
// byte, a quote or a byte past ASCII at every place within and beyond
// the first word and the 32-byte runs, on random texts, on every line of
// the testdata tapes and mutations of them, and on nesting at
// encoding/json's limit.
func TestValidScanAgrees(t *testing.T) {
	var cases []string
	for k := range 80 {
		pad := strings.Repeat("abcdefgh", 10)[:k]
		for _, odd := range []string{`\"`, `\\`, `\n`, `\u0041`, `\u00zz`, `\q`, "\x00", "\x01", "\x1f", "\x7f", "\x80", "é", "\xff", `"`, " ", ""} {
			cases = append(cases, `{"q":"`+pad+odd+pad+`"}`, `["`+pad+odd, `"`+pad+odd+`"`, `{"`+pad+odd+`":1}`, `["`+pad+odd+pad+`",1]`)
		}
	}
	cases = append(cases,
		strings.Repeat("[", jsonscan.MaxDepth)+strings.Repeat("]", jsonscan.MaxDepth),
		strings.Repeat("[", jsonscan.MaxDepth+1)+strings.Repeat("]", jsonscan.MaxDepth+1),
		strings.Repeat(`{"a":`, jsonscan.MaxDepth)+"1"+strings.Repeat("}", jsonscan.MaxDepth),
		strings.Repeat(`{"a":`, jsonscan.MaxDepth+1)+"1"+strings.Repeat("}", jsonscan.MaxDepth+1),
		`{"a":[1,-0.5e+3,"x\u00e9\n",true,false,null,{}]}`, `[tru]`, `[nulll]`, `{"a":01}`, `{"a":-}`, `{"a":x}`, `{"a":1 "b":2}`,
	)
	rng := rand.New(rand.NewPCG(5, 6))
	alphabet := []string{"{", "}", "[", "]", ",", ":", `"a"`, `"`, `\`, "1", "-", ".", "e", "0", "true", "null", " ", "\n", "x", "\x00", "é", strings.Repeat("lorem ", 7)}
	for range 20000 {
		var b strings.Builder
		for range rng.IntN(14) {
			b.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		cases = append(cases, b.String())
	}
	paths, _ := filepath.Glob("../testdata/*.jsonl")
	if len(paths) == 0 {
		t.Fatal("no testdata tapes in ../testdata")
	}
	const mutations = "{}[]\",:\\ 0123456789.eE+-tfnulx\x01\xff"
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			cases = append(cases, string(line))
			for range 3 {
				if len(line) == 0 {
					break
				}
				m := []byte(string(line))
				i := rng.IntN(len(m))
				switch rng.IntN(3) {
				case 0:
					m[i] = mutations[rng.IntN(len(mutations))]
				case 1:
					m = append(m[:i], m[i+1:]...)
				default:
					m = append(m[:i], append([]byte{mutations[rng.IntN(len(mutations))]}, m[i:]...)...)
				}
				cases = append(cases, string(m))
			}
		}
	}
	valid := 0
	for _, c := range cases {
		checkValidScan(t, []byte(c))
		if json.Valid([]byte(c)) {
			valid++
		}
	}
	if valid < 1000 {
		t.Fatalf("only %d valid texts among the %d cases", valid, len(cases))
	}
}

func FuzzValidScan(f *testing.F) {
	for _, s := range []string{`{"a":"` + strings.Repeat("x", 40) + `\n"}`, `["abc\u0041def"]`, "\"\x01\"", `{"a":[1,{"b":null}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkValidScan(t, b) })
}
