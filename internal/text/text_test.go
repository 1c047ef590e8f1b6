package text

import (
	"bytes"
	"testing"
)

func TestSafe(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"tools/call", "tools/call"},
		{"a\nb\tc", "a\nb\tc"},
		{"\x1b]0;PWNED\x07", `\x1b]0;PWNED\x07`},
		{"\x1b[2J", `\x1b[2J`},
		{"\x1b]52;c;aGk=\x07", `\x1b]52;c;aGk=\x07`},
		{"over\rwrite", `over\x0dwrite`},
		{"csi\u009b2J", `csi\u009b2J`},
		{"é ✓ \u00a0", "é ✓ \u00a0"},
		{"del\x7f", `del\x7f`},
		{"\x1b[31mred\x1b[0m", `\x1b[31mred\x1b[0m`}, // Safe keeps no colour
	} {
		if got := Safe(tt.in); got != tt.want {
			t.Errorf("Safe(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestWriterKeepsColours(t *testing.T) {
	var b bytes.Buffer
	w := NewWriter(&b)
	in := "\x1b[31mFAIL\x1b[0m tools/call \x1b]0;PWNED\x07 \x1b[2J\n"
	if n, err := w.Write([]byte(in)); n != len(in) || err != nil {
		t.Fatalf("Write = %d, %v", n, err)
	}
	if want := "\x1b[31mFAIL\x1b[0m tools/call \\x1b]0;PWNED\\x07 \\x1b[2J\n"; b.String() != want {
		t.Errorf("wrote %q, want %q", b.String(), want)
	}
}
