package importer

import (
	"bytes"
	"context"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape"
)

// mappedInput returns the rest of r, from its offset, mapped in place
// when r is a regular file (as import's command line opens every input,
// a pipe spooled to one) that maps: the input is held whole until its
// records are sorted, so its bytes are read where they are instead of
// being copied into fresh memory. ctx is the import's (ctxReader's), for
// checks between lines. ok false: read r.
func mappedInput(r io.Reader) (data []byte, ctx context.Context, release func(), ok bool) {
	ctx = context.Background()
	if c, isCtx := r.(ctxReader); isCtx {
		ctx, r = c.ctx, c.r
	}
	f, isFile := r.(*os.File)
	if !isFile {
		return nil, nil, nil, false
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil, nil, nil, false
	}
	off, err := f.Seek(0, io.SeekCurrent)
	if err != nil || off >= st.Size() {
		return nil, nil, nil, false
	}
	data, unmap, err := mapFile(f, st.Size())
	if err != nil {
		return nil, nil, nil, false
	}
	return data[off:], ctx, unmap, true
}

// otlpMapped is OTLP of data, the input's bytes mapped in place: its
// lines are read where they are (the spans keep slices of them until the
// tape is written).
func otlpMapped(ctx context.Context, data []byte, w *tape.Writer, o Options) (Result, error) {
	var spans []traceSpan
	for line, i := 1, 0; i < len(data); line++ {
		if err := ctx.Err(); err != nil {
			return Result{}, err
		}
		end := len(data)
		if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
			end = i + k + 1
		}
		var err error
		if spans, err = addOTLPLine(spans, bytes.TrimSpace(data[i:end]), line); err != nil {
			return Result{}, err
		}
		i = end
	}
	return otlpSpans(spans, w, o)
}
