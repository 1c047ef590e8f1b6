package record

import (
	"io"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// BenchmarkSinkMessage is the per-message cost of writing a 1 KiB request
// to a tape (classification, _meta, one Write) without I/O.
func BenchmarkSinkMessage(b *testing.B) {
	sk, batch := newRecorder(io.Discard, "echo", nil, nil).stream(tape.DirSend)
	msg := []byte(`{"jsonrpc":"2.0","id":1,"method":"echo","params":{"data":"` + strings.Repeat("x", 1024) + `"}}`)
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if err := sk.message(msg, tape.DirSend, nil); err != nil {
			b.Fatal(err)
		}
		if err := batch.flush(); err != nil {
			b.Fatal(err)
		}
	}
}
