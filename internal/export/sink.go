package export

import (
	"bufio"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/internal/outfile"
)

// sink is where an export writes: a bufio.Writer, or a gatherWriter when
// the output is a file (stdout to a file, a pipe or /dev/null, or export
// -o's temporary file). WriteAlias writes bytes that stay as they are
// until the next Flush (a message's parts in the tape's mapping), which
// a gatherWriter hands to the kernel without copying them.
type sink interface {
	io.Writer
	io.ByteWriter
	io.StringWriter
	WriteAlias(p []byte)
	Flush() error
}

// newSink is a gatherWriter for an output that is a file, else a
// bufio.Writer of size bytes.
func newSink(w io.Writer, size int) sink {
	if f := outputFile(w); f != nil {
		if g := newGatherWriter(f); g != nil {
			return g
		}
	}
	return bufSink{bufio.NewWriterSize(w, size)}
}

// outputFile is the file w writes to, when it is one: *os.File or an
// outfile.File (export -o).
func outputFile(w io.Writer) *os.File {
	switch f := w.(type) {
	case *os.File:
		return f
	case *outfile.File:
		return f.File
	}
	return nil
}

// bufSink is a bufio.Writer as a sink: WriteAlias copies, but for a piece
// as large as the buffer, which goes to the writer without a copy.
type bufSink struct{ *bufio.Writer }

// WriteAlias writes p to w; one that would fill w's buffer and more
// flushes what w holds first, so that p goes to w's writer without a copy
// through the buffer (bufio copies as much of p as fits when it holds
// bytes). An error stays in w and ends the export at its next write.
func (w bufSink) WriteAlias(p []byte) {
	if len(p) >= w.Size() && w.Buffered() > 0 {
		w.Flush()
	}
	w.Write(p)
}
