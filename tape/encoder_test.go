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

// TestEncoderMicroseconds: a KeepMicroseconds Encoder's lines are those of a
// KeepMicroseconds Writer, for times with and without a part below the
// millisecond, in either order (the millisecond cache must not leak).
func TestEncoderMicroseconds(t *testing.T) {
	e := NewEncoder(DirSend, "s").KeepMicroseconds()
	base := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"m"}`)
	for _, ns := range []int{123456789, 123000000, 123456000, 123000999, 124000000, 123456789} {
		ts := base.Add(time.Duration(ns))
		var want bytes.Buffer
		if err := NewWriter(&want).KeepMicroseconds().Write(msg, Meta{Dir: DirSend, Server: "s", Time: ts}); err != nil {
			t.Fatal(err)
		}
		got, ok := e.AppendLine(nil, msg, ts)
		if !ok || string(got) != want.String() {
			t.Errorf("%d ns: got  %q (ok %v)\nwant %q", ns, got, ok, want.String())
		}
	}
}

// FuzzEncoderAgreesWithClassify checks that the Encoder takes exactly the
// lines Classify sees as one plain (non-lifecycle) message without _meta,
// and that its line is then the Writer's.
func FuzzEncoderAgreesWithClassify(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":[1,"]"]}}`,
		`{"jsonrpc":"2.0","id":null,"error":{"code":1}}`,
		`{"jsonrpc":"2.0","id":null,"method":"x"}`,
		`{"jsonrpc":"2.0","id":true,"result":{}}`,
		`{"jsonrpc":"2.0","method":1}`,
		`{"jsonrpc":"2.0","method":"$transport/x"}`,
		`{"jsonrpc":"2.0","method":"x","_meta":{"dir":"send"}}`,
		`{"jsonrpc":"2.0","id":1}`,
		`{"id":"a\"b","result":"x"} `,
		`{"method":"x",}`,
		`{"method":"x"}}`,
		`{}`,
	} {
		f.Add(s)
	}
	ts := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, msg string) {
		if strings.ContainsAny(msg, "\r\n") {
			return // lines reach the Encoder split and trimmed
		}
		e := NewEncoder(DirSend, "s")
		got, ok := e.AppendLine(nil, []byte(msg), ts)
		es := Classify([]byte(msg))
		trimmed := strings.TrimSpace(msg)
		want := len(es) == 1 && es[0].Kind != KindInvalid && es[0].Kind != KindLifecycle &&
			len(trimmed) > 1 && trimmed[0] == '{' && trimmed[len(trimmed)-1] == '}' && !hasMeta(trimmed)
		if ok != want {
			t.Fatalf("%q: encoder took it %v, classify says %v (%+v)", msg, ok, want, es)
		}
		if ok {
			var w bytes.Buffer
			if err := NewWriter(&w).Write([]byte(msg), Meta{Dir: DirSend, Server: "s", Time: ts}); err != nil || w.String() != string(got) {
				t.Fatalf("%q: encoder %q, writer %q (%v)", msg, got, w.String(), err)
			}
		}
	})
}

// hasMeta reports a top-level _meta member, by the classifier's reading.
func hasMeta(msg string) bool {
	var c classifier
	found := false
	_, _ = c.members([]byte(msg), 0, func(key []byte, _ span) { found = found || string(key) == "_meta" })
	return found
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
