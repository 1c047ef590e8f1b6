package importer

import (
	"bytes"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// stdUnescape reads what jsonscan.Unescape reads: escapes in runs,
// surrogates paired and lone, invalid UTF-8.
func TestStdUnescapeAgrees(t *testing.T) {
	for _, s := range []string{
		``, `plain`, `a\"b\\c\/d\b\f\n\r\t`, `\u00e9\ud83d\ude00x`, `\ud83dz\ud83d\\\u00e9`, `\ud83d\u0041`, `\udc00\ud83d`,
		`{\"jsonrpc\":\"2.0\",\"id\":1,\"params\":{\"text\":\"line\\nnext é€😀\"}}`, "bytes \xff\xe9 and \\n", `tail\\`,
	} {
		raw := []byte(`"` + s + `"`)
		if jsonscan.StringEnd(raw, 0) != len(raw) {
			t.Fatalf("%q is not a valid string", s)
		}
		in := raw[1 : len(raw)-1]
		if got, want := stdUnescape([]byte("x"), in), jsonscan.Unescape([]byte("x"), in); !bytes.Equal(got, want) {
			t.Errorf("stdUnescape(%q) = %q, jsonscan.Unescape %q", s, got, want)
		}
	}
}

func FuzzStdUnescape(f *testing.F) {
	f.Add([]byte(`a\"b\u00e9\ud83d\ude00\ud83dz`))
	f.Fuzz(func(t *testing.T, s []byte) {
		raw := append(append([]byte{'"'}, s...), '"')
		if jsonscan.StringEnd(raw, 0) != len(raw) {
			return
		}
		if got, want := stdUnescape(nil, s), jsonscan.Unescape(nil, s); !bytes.Equal(got, want) {
			t.Fatalf("stdUnescape(%q) = %q, jsonscan.Unescape %q", s, got, want)
		}
	})
}
