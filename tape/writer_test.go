package tape

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var ts0 = time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)

// countingWriter records each Write call, to check one call per message.
type countingWriter struct{ calls [][]byte }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.calls = append(c.calls, bytes.Clone(p))
	return len(p), nil
}

func TestWriterSplicesMeta(t *testing.T) {
	tests := []struct {
		name, msg, want string
		meta            Meta
	}{
		{"request", `{"jsonrpc":"2.0","id":1,"method":"ping"}`,
			`{"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirSend, Server: "s", Time: ts0}},
		{"bytes kept", `{ "id" : 1 , "result" : { "b" : 1 , "a" : "é\u00e9" } }`,
			`{ "id" : 1 , "result" : { "b" : 1 , "a" : "é\u00e9" } ,"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0}},
		{"extra keys sorted", `{"jsonrpc":"2.0","method":"n"}`,
			`{"jsonrpc":"2.0","method":"n","_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z","session":"abc","status":200}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0, Extra: map[string]any{"status": 200, "session": "abc"}}},
		{"multi-line body compacted", "{\n  \"id\": 1,\n  \"result\": {}\n}",
			`{"id":1,"result":{},"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`,
			Meta{Dir: DirRecv, Server: "s", Time: ts0}},
		{"empty object", `{}`, `{"_meta":{"dir":"recv","server":"s","ts":"2026-05-16T12:00:00.000Z"}}`, Meta{Dir: DirRecv, Server: "s", Time: ts0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cw countingWriter
			if err := NewWriter(&cw).Write([]byte(tt.msg), tt.meta); err != nil {
				t.Fatal(err)
			}
			if len(cw.calls) != 1 {
				t.Fatalf("%d Write calls, want 1", len(cw.calls))
			}
			if got := strings.TrimSuffix(string(cw.calls[0]), "\n"); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.WriteLifecycle(MethodStart, map[string]any{"command": "srv"}, Meta{Server: "s", Time: ts0}))
	must(w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), Meta{Dir: DirSend, Server: "s", Time: ts0}))
	must(w.Write([]byte(`[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","method":"n"}]`), Meta{Dir: DirRecv, Server: "s", Time: ts0.Add(time.Second)}))
	must(w.WriteInvalid([]byte("Server listening on stdio"), Meta{Dir: DirRecv, Server: "s", Time: ts0}))
	if err := w.Write([]byte("plain text"), Meta{}); !errors.Is(err, ErrMalformed) {
		t.Fatalf("writing text: %v, want ErrMalformed", err)
	}
	r := NewReader(&buf)
	got := readAll(t, r)
	kinds := []Kind{KindLifecycle, KindRequest, KindResponse, KindNotification, KindLifecycle}
	if len(got) != len(kinds) {
		t.Fatalf("read back %d entries, want %d", len(got), len(kinds))
	}
	for i, k := range kinds {
		if got[i].Kind != k || got[i].Server != "s" {
			t.Errorf("entry %d: %v of %q, want %v of \"s\"", i, got[i].Kind, got[i].Server, k)
		}
	}
	if got[0].Dir != DirLifecycle || got[4].Method != MethodInvalid || !bytes.Contains(got[4].Raw, []byte(`"text":"Server listening on stdio"`)) {
		t.Errorf("lifecycle records: %s / %s", got[0].Raw, got[4].Raw)
	}
	if !got[2].Time.Equal(ts0.Add(time.Second)) || !bytes.Contains(got[2].Raw, []byte(`"batch":`)) {
		t.Errorf("batch element: %s", got[2].Raw)
	}
	if len(r.Warnings()) != 0 {
		t.Errorf("warnings: %v", r.Warnings())
	}
}

func TestCreate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a", "b", "t.jsonl")
	f, err := Create(path, false)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	st, _ := os.Stat(path)
	dst, _ := os.Stat(filepath.Dir(path))
	if st.Mode().Perm() != 0o600 || dst.Mode().Perm() != 0o700 {
		t.Errorf("modes %v and %v, want 0600 file in a 0700 directory", st.Mode().Perm(), dst.Mode().Perm())
	}
	if _, err := Create(path, false); !errors.Is(err, os.ErrExist) {
		t.Errorf("second Create: %v, want ErrExist", err)
	}
	f, err = Create(path, true)
	if err != nil {
		t.Fatalf("append: %v", err)
	}
	f.Close()
}
