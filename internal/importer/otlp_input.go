package importer

import (
	"bytes"
	"context"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
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
	data, unmap, err := mmap.Map(f, 0, st.Size(), mmap.Populate)
	if err != nil {
		return nil, nil, nil, false
	}
	if afterMap != nil {
		afterMap()
	}
	return data[off:], ctx, func() { _ = unmap() }, true
}

// otlpMapped is OTLP of data, the input's bytes mapped in place: its
// lines are read where they are (the spans keep slices of them until the
// tape is written), on as many goroutines as there are processors, a line
// at a time in order, their spans put back in the lines' order. The error
// is the first line's that fails, as one goroutine reading them in order
// would find it. The file cut shorter meanwhile is mmap.ErrShrank (the
// line being read's, on a worker), not a crash.
func otlpMapped(ctx context.Context, data []byte, w *tape.Writer, o Options) (_ Result, err error) {
	defer mmap.Catch(&err)()
	var lines [][]byte
	for i := 0; i < len(data); {
		end := len(data)
		if k := bytes.IndexByte(data[i:], '\n'); k >= 0 {
			end = i + k + 1
		}
		lines = append(lines, data[i:end])
		i = end
	}
	read := make([][]traceSpan, len(lines))
	errs := make([]error, len(lines))
	var next, failed atomic.Int64
	failed.Store(int64(len(lines)))
	work := func() {
		k := int64(-1)
		err := mmap.Guard(func() error { // on each goroutine: a fault is its own
			for {
				k = next.Add(1) - 1
				if k >= int64(len(lines)) || k > failed.Load() {
					return nil
				}
				err := ctx.Err()
				if err == nil {
					read[k], err = addOTLPLine(nil, bytes.TrimSpace(lines[k]), int(k)+1)
				}
				if err != nil {
					return err
				}
			}
		})
		if err != nil {
			errs[k] = err
			for f := failed.Load(); k < f && !failed.CompareAndSwap(f, k); f = failed.Load() {
			}
		}
	}
	atStage("lines")
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), len(lines)) - 1 {
		wg.Go(work)
	}
	work()
	wg.Wait()
	n := 0
	for k := range lines {
		if errs[k] != nil {
			return Result{}, errs[k]
		}
		n += len(read[k])
	}
	spans := make([]traceSpan, 0, n)
	for _, s := range read {
		spans = append(spans, s...)
	}
	atStage("write")
	return otlpSpans(spans, w, o)
}
