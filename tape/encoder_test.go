package tape

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestEncoderMatchesWriter checks that the Encoder's lines are the Writer's.
func TestEncoderMatchesWriter(t *testing.T) {
	e := NewEncoder(DirRecv, `odd "name" <&>`)
	ts := time.Date(2026, 5, 16, 12, 0, 0, 123456789, time.FixedZone("x", 3600))
	for _, msg := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"a":"<&>é"}}`,
		`  {"jsonrpc":"2.0","method":"notifications/progress","params":{}}  `,
		`{"jsonrpc":"2.0","id":"x","method":"m"}`,
	} {
		var want bytes.Buffer
		if err := NewWriter(&want).Write([]byte(msg), Meta{Dir: DirRecv, Server: `odd "name" <&>`, Time: ts}); err != nil {
			t.Fatal(err)
		}
		for range 2 { // the second time from the timestamp cache
			got, ok := e.AppendLine(nil, []byte(msg), ts)
			if !ok || string(got) != want.String() {
				t.Errorf("got  %q (ok %v)\nwant %q", got, ok, want.String())
			}
		}
	}
	for _, msg := range []string{"", "not json", `{"a":1}`, `[{"jsonrpc":"2.0","method":"x"}]`, "{\"jsonrpc\":\"2.0\",\n\"method\":\"x\"}",
		`{"jsonrpc":"2.0","method":"$transport/start"}`, `{"jsonrpc":"2.0","method":"x"`, `{"jsonrpc":"2.0","method":"x"} {}`} {
		if got, ok := e.AppendLine([]byte("keep"), []byte(msg), ts); ok || string(got) != "keep" {
			t.Errorf("%q: accepted (%q); want it left to a Writer", msg, got)
		}
	}
}

func BenchmarkEncoder(b *testing.B) {
	e := NewEncoder(DirSend, "echo")
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"data":"` + strings.Repeat("x", 1024) + `"}}`)
	var buf []byte
	now := time.Now()
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		buf, _ = e.AppendLine(buf[:0], msg, now)
	}
}
