package library

import (
	"strings"
	"testing"
	"time"
	"unicode"
)

// FuzzQuery feeds search lines to SplitQuery and ftsQuery: the tokens are
// the line's text outside unquoted spaces, and what reaches FTS5 is only
// quoted phrases (with their quotes doubled), prefixes and operators
// between them, so no search line is FTS5 syntax of its own.
func FuzzQuery(f *testing.F) {
	for _, s := range []string{`echo`, `tools/call "get sum" NOT error`, `a* OR b`, `"unterminated`, `NEAR(a b) col:x ^y`, `OR OR NOT`, `"" "a""b"`, "\u00a0x\ty\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		toks := SplitQuery(s)
		var joined strings.Builder
		for _, tok := range toks {
			if tok == "" {
				t.Fatalf("SplitQuery(%q) has an empty token", s)
			}
			joined.WriteString(tok)
		}
		var want strings.Builder
		quoted := false
		for _, r := range s {
			if r == '"' {
				quoted = !quoted
			}
			if quoted || !unicode.IsSpace(r) {
				want.WriteRune(r)
			}
		}
		if joined.String() != want.String() {
			t.Fatalf("SplitQuery(%q) = %q: lost or added text", s, toks)
		}
		q, _ := ftsQuery(s)
		checkFTS(t, s, q)
	})
}

// checkFTS checks q is phrases ("...", quotes doubled, optionally *) and
// operators between them.
func checkFTS(t *testing.T, s, q string) {
	t.Helper()
	prevOp := true
	for i := 0; i < len(q); {
		switch {
		case q[i] == ' ':
			i++
		case q[i] == '"':
			j := i + 1
			for {
				k := strings.IndexByte(q[j:], '"')
				if k < 0 {
					t.Fatalf("ftsQuery(%q) = %q: an unterminated phrase", s, q)
				}
				j += k + 1
				if j < len(q) && q[j] == '"' {
					j++
					continue
				}
				break
			}
			if j < len(q) && q[j] == '*' {
				j++
			}
			if j < len(q) && q[j] != ' ' {
				t.Fatalf("ftsQuery(%q) = %q: text after a phrase at %d", s, q, j)
			}
			i, prevOp = j, false
		default:
			end := strings.IndexByte(q[i:], ' ')
			if end < 0 {
				end = len(q) - i
			}
			op := q[i : i+end]
			if !isOperator(op) || prevOp {
				t.Fatalf("ftsQuery(%q) = %q: %q where a phrase was expected", s, q, op)
			}
			i, prevOp = i+end, true
		}
	}
	if prevOp && q != "" {
		t.Fatalf("ftsQuery(%q) = %q ends with an operator", s, q)
	}
}

// FuzzParseAge feeds --since and --older-than values: an error or a time,
// never a panic.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"24h", "7d", "2w", "2026-01-31", "2026-01-31T10:00:00Z", "", "d", "-1d", "1e308w"} {
		f.Add(s)
	}
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseAge(s, now); err != nil && err.Error() == "" {
			t.Fatal("an empty error")
		}
	})
}
