package importer

import (
	"encoding/json"
	"testing"
)

// validJSON is json.Valid, in one pass that skips a string's plain bytes
// eight at a time: the two agree on every input, the fuzzer's included.
func FuzzValidJSON(f *testing.F) {
	for _, s := range []string{
		`{"a":[1,-0.5e+3,"x\u00e9\n",true,false,null,{}]}`, `"abcdefghijklmnop\"qrstuvwxyz"`, `"0123456\u001f"`,
		"\"0123456\x1f89\"", `01`, `-`, `1.`, `1e`, `[1,]`, `{"a" 1}`, `{"a":1,}`, ` [ ] `, `"\x"`, `"\u12"`, `tru`, `nulll`,
		"\"\xff\xfe\"", `{"a":1}{}`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid says %v", b, got, want)
		}
	})
}

func TestValidJSONDepth(t *testing.T) {
	for _, n := range []int{maxDepth, maxDepth + 1} {
		for _, open := range []string{"[", `{"a":`} {
			b := []byte{}
			for range n {
				b = append(b, open...)
			}
			for range n {
				if open == "[" {
					b = append(b, ']')
				} else {
					b = append(b, '}')
				}
			}
			if got, want := validJSON(b), json.Valid(b); got != want {
				t.Errorf("%d levels of %s: validJSON %v, json.Valid %v", n, open, got, want)
			}
		}
	}
}

// unquote decodes a JSON string as encoding/json does (escapes, surrogate
// pairs, a lone surrogate or invalid UTF-8 as U+FFFD), and refuses what
// it refuses.
func FuzzUnquote(f *testing.F) {
	for _, s := range []string{
		`"plain"`, `"a\"b\\c\/d\b\f\n\r\t"`, `"\u00e9\u4e2d"`, `"\ud83d\ude00"`, `"\ud83d"`, `"\ud83dx"`, `"\ude00\ud83d"`,
		`"\ud83d\u0041"`, "\"\xff\xfe ok\"", `"\x"`, `"\u12"`, `"a`, `"a"b"`, "\"\x01\"", `""`, `"é"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var want string
		werr := json.Unmarshal(b, &want)
		if len(b) == 0 || b[0] != '"' || b[len(b)-1] != '"' {
			return // json.Unmarshal takes other values, and spaces around one
		}
		got, ok := unquote(nil, b)
		if ok != (werr == nil) {
			t.Fatalf("unquote(%q) ok %v, json.Unmarshal says %v", b, ok, werr)
		}
		if ok && string(got) != want {
			t.Fatalf("unquote(%q) = %q, json.Unmarshal says %q", b, got, want)
		}
	})
}
