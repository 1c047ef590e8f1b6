package mcptest_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

func fixedClock() time.Time {
	return time.Date(2026, 5, 16, 12, 0, 0, 123_456_789, time.FixedZone("x", 3600))
}

func TestTapeWriter(t *testing.T) {
	tests := []struct {
		name  string
		dir   string
		msg   string
		extra map[string]any
		want  string
	}{
		{
			name: "request",
			dir:  mcptest.DirSend,
			msg:  `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`,
			want: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"s","ts":"2026-05-16T11:00:00.123Z"}}`,
		},
		{
			name:  "extra keys sorted after the standard ones",
			dir:   mcptest.DirRecv,
			msg:   "  {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n",
			extra: map[string]any{"transport": "http", "status": 200, "session": "abc"},
			want:  `{"jsonrpc":"2.0","id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T11:00:00.123Z","session":"abc","status":200,"transport":"http"}}`,
		},
		{
			name: "empty object",
			dir:  mcptest.DirRecv,
			msg:  `{ }`,
			want: `{ "_meta":{"dir":"recv","server":"s","ts":"2026-05-16T11:00:00.123Z"}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			tw := mcptest.NewTapeWriter(&buf)
			tw.Now = fixedClock
			if err := tw.Write(tt.dir, "s", []byte(tt.msg), tt.extra); err != nil {
				t.Fatal(err)
			}
			if got := buf.String(); got != tt.want+"\n" {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestTapeWriterRejectsNonObjects(t *testing.T) {
	for _, msg := range []string{``, `[]`, `"x"`, `{"a":1`} {
		tw := mcptest.NewTapeWriter(&bytes.Buffer{})
		if err := tw.Write(mcptest.DirSend, "s", []byte(msg), nil); err == nil {
			t.Errorf("Write(%q) = nil error, want one", msg)
		}
	}
}

func TestTapeWriterLifecycle(t *testing.T) {
	var buf bytes.Buffer
	tw := mcptest.NewTapeWriter(&buf)
	tw.Now = fixedClock
	if err := tw.Lifecycle("s", "$transport/start", nil); err != nil {
		t.Fatal(err)
	}
	want := `{"jsonrpc":"2.0","method":"$transport/start","_meta":{"dir":"lifecycle","server":"s","ts":"2026-05-16T11:00:00.123Z"}}` + "\n"
	if got := buf.String(); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestTapeWriterKeepsFirstError(t *testing.T) {
	tw := mcptest.NewTapeWriter(failingWriter{})
	err := tw.Write(mcptest.DirSend, "s", []byte(`{}`), nil)
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("Write error = %v, want disk full", err)
	}
	if tw.Err() == nil {
		t.Errorf("Err() = nil after a failed write")
	}
}
