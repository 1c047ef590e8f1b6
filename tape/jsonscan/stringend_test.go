package jsonscan

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// stringEndRef is StringEnd read a byte at a time: the reference the fast
// one is held to.
func stringEndRef(b []byte, i int) int {
	for i++; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return i + 1
		case c < 0x20:
			return -1
		case c == '\\':
			i++
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(b) {
					return -1
				}
				for _, h := range b[i+1 : i+5] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return -1
					}
				}
				i += 4
			default:
				return -1
			}
		}
	}
	return -1
}

// checkStringEnd fails unless StringEnd says what stringEndRef says from
// each quote of b.
func checkStringEnd(t *testing.T, b []byte) {
	t.Helper()
	for k, c := range b {
		if c == '"' {
			if got, want := StringEnd(b, k), stringEndRef(b, k); got != want {
				t.Fatalf("StringEnd(%q, %d) = %d, a byte at a time %d", b, k, got, want)
			}
		}
	}
}

// stringOdds are the bytes a string's scan stops at or must not miss.
var stringOdds = []string{`\"`, `\\`, `\/`, `\n`, `\u0041`, `\u00zz`, `\u12`, `\q`, `\`, "\x00", "\x01", "\x1f", " ", "\x7f", "\x80", "é", "\xff", `"`, ""}

// TestStringEndAgrees: StringEnd ends a string where a byte-at-a-time
// reading does with an escape, a control byte, a quote or a byte past
// ASCII at every place within and beyond the first words and the 32-byte
// runs of a long one, after another escape, cut short; on random strings
// of those and long plain runs; and from every quote of the testdata
// tapes' lines.
func TestStringEndAgrees(t *testing.T) {
	for k := range 100 {
		pad := strings.Repeat("abcdefgh", 13)[:k]
		for _, odd := range stringOdds {
			for _, s := range []string{`"` + pad + odd + pad + `"`, `"` + pad + odd, `"` + pad + odd + `"`, `"` + pad + `\"` + pad + odd + pad + `"x`,
				`"` + pad + odd + `\n` + pad + odd + pad + `"` + pad} {
				checkStringEnd(t, []byte(s))
			}
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	parts := append([]string{"a", "lorem ipsum dolor sit amet ", strings.Repeat("x", 100)}, stringOdds...)
	for range 30000 {
		var s strings.Builder
		s.WriteByte('"')
		for range rng.IntN(16) {
			s.WriteString(parts[rng.IntN(len(parts))])
		}
		checkStringEnd(t, []byte(s.String()))
	}
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "*.jsonl"))
	if len(paths) == 0 {
		t.Fatal("no testdata tapes in ../../testdata")
	}
	quotes := 0
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range bytes.Split(data, []byte("\n")) {
			checkStringEnd(t, line)
			quotes += bytes.Count(line, []byte(`"`))
		}
	}
	if quotes < 1000 {
		t.Fatalf("only %d quotes in the testdata tapes", quotes)
	}
}

// FuzzStringEnd: StringEnd says what a byte-at-a-time reading says from
// every quote of any input.
func FuzzStringEnd(f *testing.F) {
	long := strings.Repeat("lorem ipsum ", 10)
	for _, s := range []string{
		`"abc"`, `"a\"b"`, `"\\"`, `"\u00e9x"`, `"\u00g9"`, `"\x"`, "\"a\tb\"", `"unterminated`, `""`,
		`"abcdefgh\"ijklmnop\\qrstuvwx\u00e9"`, "\"a\x01\"", `"` + strings.Repeat(`x\"`, 40) + `"`,
		`"` + long + `"`, `"` + long + `\"` + long + `"`, `"` + long + `\n` + long + `\\"x"`, `"` + long + "\x01" + long + `"`,
		`"` + long + "\n\"", `"\u00e9` + long + `"`, `"` + long, `"` + long + `\`, "\"\xff\xfe" + long + "\"", `"a\\\\\"b"` + long + `"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		checkStringEnd(t, b)
	})
}
