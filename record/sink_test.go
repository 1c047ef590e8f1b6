package record

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// A relayed line recorded through sink.line is the tape line
// sink.message makes of it, byte for byte, whatever the line holds: plain
// messages on the fast path, anything else through the Writer.
func TestSinkLineIsMessage(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"data":"` + strings.Repeat("x", 1024) + `"}}`,
		`  {"jsonrpc":"2.0","id":"a","result":{}}  `,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}`,
		`{"jsonrpc":"2.0","id":2,"method":"m","params":{"_meta":{"k":1}},"_meta":{"own":true}}`,
		`{"jsonrpc":"2.0","id":3,` + "\r" + `"method":"m"}`,
		`[{"jsonrpc":"2.0","id":4,"method":"a"},{"jsonrpc":"2.0","id":5,"method":"b"}]`,
		`not json at all`,
		`{"jsonrpc":"2.0","id":"0\0","method":"m"}`,
		`{}`,
		``,
		`   `,
	}
	at := time.Date(2025, 6, 1, 12, 0, 0, 123456789, time.UTC)
	now := func() time.Time { return at }
	for _, dir := range []tape.Dir{tape.DirSend, tape.DirRecv} {
		var viaLine, viaMessage bytes.Buffer
		ls, lb := newRecorder(&viaLine, "srv", nil, now).stream(dir)
		ms, mb := newRecorder(&viaMessage, "srv", nil, now).stream(dir)
		for _, l := range lines {
			if err := ls.line([]byte(l), dir); err != nil {
				t.Fatalf("line(%q): %v", l, err)
			}
			if err := ms.message([]byte(l), dir, nil); err != nil {
				t.Fatalf("message(%q): %v", l, err)
			}
			if err := lb.flush(); err != nil {
				t.Fatal(err)
			}
			if err := mb.flush(); err != nil {
				t.Fatal(err)
			}
			if viaLine.String() != viaMessage.String() {
				t.Fatalf("%s: after %q, sink.line wrote\n%s\nexpected what sink.message wrote\n%s", dir, l, viaLine.String(), viaMessage.String())
			}
		}
		if n := strings.Count(viaLine.String(), "\n"); n < len(lines)-2 {
			t.Errorf("%s: %d tape lines for %d relayed lines (2 blank): expected at least %d", dir, n, len(lines), len(lines)-2)
		}
	}
}

// countingWriter counts the writes it takes.
type countingWriter struct{ writes, bytes int }

func (c *countingWriter) Write(b []byte) (int, error) {
	c.writes++
	c.bytes += len(b)
	return len(b), nil
}

// The chunk a client with 64 requests of 1 KiB in flight gets back (64
// answers of about 1.1 KB) reaches its stdout in one write, not two.
func TestWatchedWriterOneWriteAWindow(t *testing.T) {
	var c countingWriter
	w := &watchedWriter{w: &c, broken: func() { t.Error("broken called on a writer that never fails") }}
	chunk := bytes.Repeat([]byte(`{"jsonrpc":"2.0","id":12345,"result":{"data":"`+strings.Repeat("x", 1024)+`"}}`+"\n"), 64)
	if n, err := w.Write(chunk); n != len(chunk) || err != nil {
		t.Fatalf("Write of %d bytes returned %d, %v", len(chunk), n, err)
	}
	if c.writes != 1 || c.bytes != len(chunk) {
		t.Errorf("a %d-byte chunk went to the client in %d writes (%d bytes): expected 1 write of all of it", len(chunk), c.writes, c.bytes)
	}
	if _, written := w.progress(); written != int64(len(chunk)) {
		t.Errorf("progress says %d bytes written, expected %d", written, len(chunk))
	}
}

// The lines of one read are stamped with one clock reading, taken when the
// first of them is recorded; the next read's lines with a later one.
func TestStdioOneClockReadingARead(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		clock = clock.Add(time.Millisecond)
		return clock
	}
	in := `{"jsonrpc":"2.0","method":"a"}` + "\n" + `{"jsonrpc":"2.0","method":"b"}` + "\n" + `{"jsonrpc":"2.0","method":"c"}` + "\n"
	var tp syncBuffer
	// One Read of a strings.Reader returns all three lines; cat's stdin is
	// read until it ends.
	s := &Stdio{Command: "cat", Tape: &tp, Now: now}
	if _, err := s.Run(context.Background(), strings.NewReader(in), io.Discard, io.Discard); err != nil {
		t.Fatal(err)
	}
	stamps := map[time.Time]int{}
	sent := 0
	for _, e := range readTape(t, tp.Bytes()) {
		if e.Dir == tape.DirSend {
			sent++
			stamps[e.Time]++
		}
	}
	if sent != 3 || len(stamps) != 1 {
		t.Errorf("the 3 lines of one read were recorded as %d sent messages with %d different stamps %v: expected 3 with one", sent, len(stamps), stamps)
	}
}
