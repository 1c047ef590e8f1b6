package record

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"testing/iotest"
)

// FuzzRelayLines: whatever a peer writes, in whatever chunks, the relay
// forwards every byte as it was, and records each line once, whole (or by
// size when over the limit), in order.
func FuzzRelayLines(f *testing.F) {
	for _, s := range []string{"", "a\n", "a\r\nb", "\n\n", `{"jsonrpc":"2.0","id":1,"method":"x"}` + "\n", strings.Repeat("x", 300) + "\nshort\n"} {
		f.Add([]byte(s), uint8(1), uint16(64))
	}
	f.Fuzz(func(t *testing.T, in []byte, half uint8, limit uint16) {
		lim := 16 + int(limit)%512
		var out bytes.Buffer
		var got []string
		r := bytes.NewReader(in)
		var src io.Reader = r
		if half%2 == 1 {
			src = iotest.HalfReader(r)
		}
		err := relayLinesMax(src, &out, lim, func(l []byte) { got = append(got, string(l)) }, nil,
			func(size int64, _ []byte, _ bool) { got = append(got, "<oversize>") })
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), in) {
			t.Fatalf("forwarded %q, want the input %q", out.Bytes(), in)
		}
		lines := strings.Split(string(in), "\n")
		if strings.HasSuffix(string(in), "\n") || len(in) == 0 {
			lines = lines[:len(lines)-1]
		}
		if len(got) != len(lines) {
			t.Fatalf("recorded %d lines, the input has %d: %q", len(got), len(lines), got)
		}
		for i, l := range lines {
			l = strings.TrimSuffix(l, "\r")
			if got[i] != "<oversize>" && got[i] != l {
				t.Fatalf("line %d recorded %q, want %q", i, got[i], l)
			}
		}
	})
}
