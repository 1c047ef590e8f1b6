package export

import (
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// BenchmarkHAREscape: escaping a 64 KiB answer of plain text (the
// realistic profile's large answers) as HAR writes its bodies.
func BenchmarkHAREscape(b *testing.B) {
	s := []byte(`{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum dolor sit amet, consectetur ", 1640) + `"}]}}`)
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = appendHAREscaped(dst[:0], s)
	}
}

func BenchmarkHAREscapeJSONScan(b *testing.B) {
	s := []byte(`{"jsonrpc":"2.0","id":13,"result":{"content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum dolor sit amet, consectetur ", 1640) + `"}]}}`)
	dst := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(len(s)))
	for b.Loop() {
		dst = jsonscan.AppendQuoted(dst[:0], s, false)
	}
}
