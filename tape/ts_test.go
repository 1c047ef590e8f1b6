package tape

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestTimestampMicroseconds: a KeepMicroseconds Writer keeps a time's microseconds (six
// fractional digits, still RFC 3339) and writes a whole-millisecond time
// as before; the classifier reads both back exactly, and latencies below a
// millisecond print in µs.
func TestTimestampMicroseconds(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 123_000_000, time.UTC)
	var buf bytes.Buffer
	w := NewWriter(&buf).KeepMicroseconds()
	req := []byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`)
	resp := []byte(`{"jsonrpc":"2.0","id":1,"result":{}}`)
	if err := w.Write(req, Meta{Dir: DirSend, Server: "s", Time: t0}); err != nil {
		t.Fatal(err)
	}
	if err := w.Write(resp, Meta{Dir: DirRecv, Server: "s", Time: t0.Add(250*time.Microsecond + 999)}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if !strings.Contains(lines[0], `"ts":"2026-03-01T10:00:00.123Z"`) || !strings.Contains(lines[1], `"ts":"2026-03-01T10:00:00.123250Z"`) {
		t.Fatalf("tape:\n%s\nwant the request's ts in milliseconds, the answer's in microseconds", buf.String())
	}
	x := NewIndex(bytes.NewReader(buf.Bytes()))
	if err := x.Extend(int64(buf.Len()), func() bool { return true }); err != nil {
		t.Fatal(err)
	}
	if got := x.Entry(1).Time; !got.Equal(t0.Add(250 * time.Microsecond)) {
		t.Fatalf("read back %v, want %v", got, t0.Add(250*time.Microsecond))
	}
	p := x.Pair(0)
	if p.Latency != 250*time.Microsecond || FormatLatency(1, p.Latency) != "250µs" {
		t.Fatalf("latency %v printed %q, want 250µs", p.Latency, FormatLatency(1, p.Latency))
	}
	var plain bytes.Buffer
	NewWriter(&plain).Write(resp, Meta{Dir: DirRecv, Server: "s", Time: t0.Add(250 * time.Microsecond)})
	if !strings.Contains(plain.String(), `"ts":"2026-03-01T10:00:00.123Z"`) {
		t.Fatalf("a plain Writer wrote %s, want milliseconds as the Encoder writes", plain.String())
	}
	// The fast path checks fields as time.Parse does, in either form.
	for _, bad := range []string{`"2026-13-01T10:00:00.123456Z"`, `"2026-02-30T10:00:00.123456Z"`, `"2026-03-01T10:00:00.12345xZ"`} {
		if _, ok := parseTS([]byte(bad)); ok {
			t.Errorf("parseTS(%s) accepted it", bad)
		}
	}
}
