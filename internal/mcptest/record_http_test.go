package mcptest

import (
	"bytes"
	"io"
	"strings"
	"testing"
)

// TestSSETeeSplitEvents feeds an SSE body to the fixture recorder's tee in
// pieces cut inside lines and events: each event with data is recorded once,
// whole, with its id; the body passes through unchanged.
func TestSSETeeSplitEvents(t *testing.T) {
	body := "id: 0\ndata:\n\nid: e1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"a\"}\n\n" +
		"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\n"
	var tape bytes.Buffer
	tee := &sseTee{body: io.NopCloser(&chunks{s: body, n: 5}), rt: &RecordingRoundTripper{Tape: NewTapeWriter(&tape), Server: "s"}, extra: map[string]any{"sse": true}}
	got, err := io.ReadAll(tee)
	if err != nil || string(got) != body {
		t.Fatalf("the tee passed %q, %v; want the body as it came", got, err)
	}
	lines := strings.Split(strings.TrimSpace(tape.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"method":"a"`) || !strings.Contains(lines[0], `"event":"e1"`) ||
		!strings.Contains(lines[1], `"id":1,"result":{}`) || strings.Contains(lines[1], `"event"`) {
		t.Fatalf("tape:\n%s\nwant the two messages, the first with event e1", tape.String())
	}
}

// chunks reads s n bytes at a time.
type chunks struct {
	s string
	n int
}

func (c *chunks) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	k := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[k:]
	return k, nil
}
