package importer

import (
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// inspectorStringEnd ends a string where jsonscan.StringEnd does, and
// refuses what it refuses: escapes (valid and not), control characters,
// quotes escaped or not, long runs between them, a missing end.
func FuzzInspectorStringEnd(f *testing.F) {
	long := strings.Repeat("lorem ipsum ", 10)
	for _, s := range []string{
		`""`, `"a"`, `"` + long + `"`, `"` + long + `\"` + long + `"`, `"` + long + `\n` + long + `\\"x"`,
		`"` + long + "\x01" + long + `"`, `"` + long + "\n\"", `"\u00e9` + long + `"`, `"\u00g9"`, `"\x"`, `"` + long,
		`"` + long + `\`, `"\u12"`, "\"\xff\xfe" + long + "\"", `"a\\\\\"b"` + long + `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		if got, want := inspectorStringEnd(b, 0), jsonscan.StringEnd(b, 0); got != want {
			t.Errorf("%q: %d, jsonscan.StringEnd %d", b, got, want)
		}
	})
}
