package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"time"
)

// StdioOptions configure ServeStdio.
type StdioOptions struct {
	// Now is the clock; nil means time.Now. Only this edge reads it.
	Now func() time.Time
	// OnDivergence, if not nil, is called with each divergence as it happens.
	OnDivergence func(Divergence)
}

// ServeStdio runs e as a stdio MCP server: one JSON-RPC message a line read
// from r, the engine's outputs written to w, each at its time. It returns
// when r ends (after sending everything still queued, at its time), when ctx
// is done, or on a write error. When ctx ends, r is closed if it is an
// io.Closer (os.Stdin is), so a read waiting on an idle client ends too.
func ServeStdio(ctx context.Context, e *Engine, r io.Reader, w io.Writer, o StdioOptions) error {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	if e.opts.Speed <= 0 {
		return serveInstant(ctx, e, r, w, o, now)
	}
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				select {
				case lines <- line:
				case <-stop:
					return
				}
			}
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = nil
				}
				readErr <- err
				return
			}
		}
	}()

	bw := bufio.NewWriterSize(w, 64<<10)
	write := func(out []Output) error { return writeOutputs(bw, out, o) }
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var inputErr error
	inputDone := false
	for {
		var tick <-chan time.Time
		if due, ok := e.NextDue(); ok {
			d := due.Sub(now())
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			tick = timer.C
		}
		select {
		case <-ctx.Done():
			return bw.Flush()
		case line := <-lines:
			if err := write(e.Receive(line, now())); err != nil {
				return err
			}
			// Flush only when no more input waits: pipelined requests
			// share one write.
			if len(lines) == 0 {
				if err := bw.Flush(); err != nil {
					return err
				}
			}
		case <-tick:
			if err := write(e.Poll(now())); err != nil {
				return err
			}
			if err := bw.Flush(); err != nil {
				return err
			}
		case err := <-readErr:
			// Drain lines read before the end, then keep serving what is
			// still queued, each at its time, before returning.
			for len(lines) > 0 {
				if werr := write(e.Receive(<-lines, now())); werr != nil {
					return werr
				}
			}
			if werr := write(e.Poll(now())); werr != nil {
				return werr
			}
			if ferr := bw.Flush(); ferr != nil {
				return ferr
			}
			if err != nil && ctx.Err() != nil {
				err = nil // the read ended because ctx closed r
			}
			readErr, inputErr, inputDone = nil, err, true
		}
		if inputDone {
			if _, ok := e.NextDue(); !ok {
				return inputErr
			}
		}
	}
}

func writeOutputs(bw *bufio.Writer, out []Output, o StdioOptions) error {
	for _, m := range out {
		if m.Divergence != nil && o.OnDivergence != nil && m.Divergence.Resolution != Pending {
			o.OnDivergence(*m.Divergence)
		}
		if m.Msg == nil {
			continue
		}
		bw.Write(m.Msg)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
	}
	return nil
}

// serveInstant is ServeStdio at speed 0: nothing is ever queued for later.
// A goroutine reads whole chunks (one hand-over per read, however many
// pipelined messages it holds) so the loop can also watch ctx: a read of an
// idle client's stdin cannot be interrupted, but it need not be waited for.
func serveInstant(ctx context.Context, e *Engine, r io.Reader, w io.Writer, o StdioOptions, now func() time.Time) error {
	type chunk struct {
		b   []byte
		err error
	}
	chunks := make(chan chunk, 2)
	free := make(chan []byte, 3)
	for range 3 {
		free <- make([]byte, 64<<10)
	}
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			var buf []byte
			select {
			case buf = <-free:
			case <-stop:
				return
			}
			n, err := r.Read(buf)
			select {
			case chunks <- chunk{buf[:n], err}:
			case <-stop:
				return
			}
			if err != nil {
				return
			}
		}
	}()
	bw := bufio.NewWriterSize(w, 64<<10)
	var pending []byte // a line begun in an earlier chunk
	for {
		var c chunk
		select {
		case <-ctx.Done():
			return bw.Flush()
		case c = <-chunks:
		}
		data := c.b
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			// A copy: the engine may keep the message, and the chunk's
			// buffer is read into again.
			line := append(pending[:len(pending):len(pending)], data[:i+1]...)
			if len(pending) == 0 {
				line = bytes.Clone(data[:i+1])
			}
			pending = pending[:0]
			if len(bytes.TrimSpace(line)) > 0 {
				if err := writeOutputs(bw, e.Receive(line, now()), o); err != nil {
					return err
				}
			}
			data = data[i+1:]
		}
		pending = append(pending, data...)
		free <- c.b[:cap(c.b)]
		if c.err != nil {
			if len(bytes.TrimSpace(pending)) > 0 { // a last line without its newline
				if err := writeOutputs(bw, e.Receive(pending, now()), o); err != nil {
					return err
				}
			}
			if err := bw.Flush(); err != nil {
				return err
			}
			if errors.Is(c.err, io.EOF) || ctx.Err() != nil {
				return nil // the end of input, or ctx closed r
			}
			return c.err
		}
		// Flush only when no more input waits: pipelined requests share
		// one write.
		if len(chunks) == 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
		}
	}
}
