package debug

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/tapetest"
)

// t0 is the first timestamp of the test tapes.
var t0 = tapetest.T0

// line is one message of a test tape: dir, milliseconds after t0, JSON
// (a tapetest.Line, kept local so the tests' literals stay short).
type line struct {
	dir tape.Dir
	ms  int
	msg string
}

// buildIndex writes lines as a tape for server "s" and indexes it.
func buildIndex(t testing.TB, lines ...line) *tape.Index {
	t.Helper()
	return buildIndexServer(t, "s", lines...)
}

func buildIndexServer(t testing.TB, server string, lines ...line) *tape.Index {
	t.Helper()
	x, _ := buildIndexBytes(t, server, lines...)
	return x
}

// buildIndexBytes is buildIndexServer that also returns the tape's bytes,
// which the index reads message bodies from: a test may change them.
func buildIndexBytes(t testing.TB, server string, lines ...line) (*tape.Index, []byte) {
	t.Helper()
	ls := make([]tapetest.Line, len(lines))
	for i, l := range lines {
		ls[i] = tapetest.Line{Dir: l.dir, MS: l.ms, Msg: l.msg}
	}
	return tapetest.Build(t, server, ls...)
}

const (
	send = tape.DirSend
	recv = tape.DirRecv
	life = tape.DirLifecycle // msg is the lifecycle method
)

// writeSyntheticTape writes a tape of n messages for server "bench": n/2
// tools/call requests whose params hold paramBytes of text and a counter
// (distinct when distinct is true), each followed by its response.
func writeSyntheticTape(tb testing.TB, path string, n, paramBytes int, distinct bool) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	pad := strings.Repeat("x", paramBytes)
	ts := t0
	for i := 0; i < n/2; i++ {
		k := i
		if !distinct {
			k = 0
		}
		stamp := ts.Format("2006-01-02T15:04:05.000Z")
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"echo","arguments":{"k":%d,"pad":"%s"}},"_meta":{"dir":"send","server":"bench","ts":"%s"}}`+"\n", i, k, pad, stamp)
		fmt.Fprintf(w, `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"answer %d"}]},"_meta":{"dir":"recv","server":"bench","ts":"%s"}}`+"\n", i, k, stamp)
		ts = ts.Add(time.Millisecond)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
