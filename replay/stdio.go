package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/rules"
)

// StdioOptions configure ServeStdio.
type StdioOptions struct {
	// Now is the clock; nil means time.Now. Only this edge reads it.
	Now func() time.Time
	// OnDivergence, if not nil, is called with each divergence as it happens.
	OnDivergence func(Divergence)
	// Rules, if set, fault the session (see rules.go): Logf is told what
	// they did, Server names the tape's server to them.
	Rules  *rules.Set
	Logf   func(string)
	Server string
	// Miss, if set, is offered each request the tape lacks (IsMiss: see
	// miss.go) with the client's line, before the client gets the
	// divergence error; it returns true when it answers the request
	// itself, as go-vcr's passthrough does (upstream.Fallthrough: a live
	// server). client writes whole lines to the client, from any
	// goroutine, between the edge's own writes; the hook may keep it.
	Miss func(req []byte, d *Divergence, client func(msgs ...[]byte) error) bool
	// Peek, if set, sees each client line before the engine does; true
	// keeps the line from the engine (a reply to a live server's own
	// request, which the hook of Miss forwards).
	Peek func(line []byte) bool
	// Stderr, if set, gets the lines the recorded server wrote on its
	// stderr, as they fall due: a host that shows a server's log shows the
	// replay's as it showed the recording's.
	Stderr io.Writer
}

// stdioEdge is ServeStdio's side of the client: the engine's outputs and
// a Miss hook's messages written to one buffered writer, under a lock
// (the hook writes from its own goroutines).
type stdioEdge struct {
	e   *Engine
	o   StdioOptions
	rx  *RuleEdge
	now func() time.Time

	mu   sync.Mutex
	bw   *bufio.Writer
	pace progressPacer
}

func newStdioEdge(e *Engine, w io.Writer, o StdioOptions, now func() time.Time) *stdioEdge {
	return &stdioEdge{e: e, o: o, rx: o.ruleEdge(), now: now, bw: bufio.NewWriterSize(w, 64<<10)}
}

// in hands a client's line to the engine (nil: one over the limit) and
// writes what it answers; a miss is offered to the Miss hook first.
func (s *stdioEdge) in(line []byte) error {
	if s.o.Peek != nil && line != nil && s.o.Peek(line) {
		return nil
	}
	s.mu.Lock()
	out, err := s.rx.In(s.e, line, s.now())
	var miss *Output
	if s.o.Miss != nil {
		for i := range out {
			if IsMiss(out[i].Divergence) {
				m := out[i]
				miss = &m
				out = append(out[:i:i], out[i+1:]...)
				break // one request a line
			}
		}
	}
	werr := writeOutputs(s.bw, out, s.o, s.rx, &s.pace)
	s.mu.Unlock()
	if miss != nil && werr == nil && !s.o.Miss(line, miss.Divergence, s.client) {
		// Not taken: the client gets the divergence after all.
		s.mu.Lock()
		werr = writeOutputs(s.bw, []Output{*miss}, s.o, s.rx, &s.pace)
		s.mu.Unlock()
	}
	return errors.Join(werr, err)
}

// write writes outputs the engine yielded by itself (Poll).
func (s *stdioEdge) write(out []Output) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return writeOutputs(s.bw, out, s.o, s.rx, &s.pace)
}

func (s *stdioEdge) flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bw.Flush()
}

// client writes a Miss hook's messages, a line each, at once.
func (s *stdioEdge) client(msgs ...[]byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range msgs {
		s.bw.Write(m)
		s.bw.WriteByte('\n')
	}
	return s.bw.Flush()
}

// ServeStdio runs e as a stdio MCP server: one JSON-RPC message a line read
// from r, the engine's outputs written to w, each at its time. It returns
// when r ends (after sending everything still queued, at its time), when ctx
// is done, or on a write error. When ctx ends, r is closed if it is an
// io.Closer (os.Stdin is), so a read waiting on an idle client ends too. At
// speed 0, a reader the runtime polls (one that accepts a read deadline: a
// non-blocking pipe or socket) is read in the calling goroutine; any other
// in a goroutine of its own, so that a read closing cannot interrupt (a
// blocking os.Stdin) does not hold ServeStdio past ctx.
func ServeStdio(ctx context.Context, e *Engine, r io.Reader, w io.Writer, o StdioOptions) error {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	e.out.stderr = o.Stderr != nil
	if e.opts.Speed <= 0 {
		return serveInstant(ctx, e, r, w, o, now)
	}
	lines := make(chan []byte, 256)
	readErr := make(chan error, 1)
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		stopped := errors.New("stopped")
		send := func(line []byte) error {
			select {
			case lines <- line:
				return nil
			case <-stop:
				return stopped
			}
		}
		err := jsonrpc.ReadLines(r, 0, send, func() error { return send(nil) })
		if err != stopped {
			readErr <- err
		}
	}()

	ed := newStdioEdge(e, w, o, now)
	write, writeIn := ed.write, ed.in
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
			return ed.flush()
		case line := <-lines:
			if err := writeIn(line); err != nil {
				return err
			}
			// Flush only when no more input waits: pipelined requests
			// share one write.
			if len(lines) == 0 {
				if err := ed.flush(); err != nil {
					return err
				}
			}
		case <-tick:
			if err := write(e.Poll(now())); err != nil {
				return err
			}
			if err := ed.flush(); err != nil {
				return err
			}
		case err := <-readErr:
			// Drain lines read before the end, then keep serving what is
			// still queued, each at its time, before returning.
			for len(lines) > 0 {
				if werr := writeIn(<-lines); werr != nil {
					return werr
				}
			}
			if werr := write(e.Poll(now())); werr != nil {
				return werr
			}
			if ferr := ed.flush(); ferr != nil {
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

// progressGap is how long a progress notification is left to land before
// a message other than progress is written after it. The TypeScript SDK
// handles a notification in a microtask but a response at once: read in
// one chunk, the response retires the request's progress handler before
// its progress notifications are handled, and they are dropped as unknown.
// Progress after progress needs no gap (no handler is retired), so the
// gap is paid once a call, not once a notification.
const progressGap = 5 * time.Millisecond

// progressPacer keeps progressGap between the last progress notification
// an edge wrote and the next message of another kind.
type progressPacer struct {
	at      time.Time // when the last progress notification was written
	pending bool      // and nothing else was written since
}

// wrote notes that o was written.
func (p *progressPacer) wrote(o Output) {
	if o.progress {
		p.at, p.pending = time.Now(), true
	} else {
		p.pending = false
	}
}

// wait is how long to wait before writing o: the rest of the gap when o
// follows a progress notification and is not one.
func (p *progressPacer) wait(o Output) time.Duration {
	if o.progress || !p.pending {
		return 0
	}
	return progressGap - time.Since(p.at)
}

// receive hands a client's line to the engine; a nil line stands for one
// over jsonrpc.MaxLine, refused with jsonrpc.LineTooLong.
func receive(e *Engine, line []byte, now time.Time) []Output {
	if line == nil {
		return []Output{{Msg: jsonrpc.LineTooLong("tapedeck replay", jsonrpc.MaxLine), At: now, Seq: -1}}
	}
	return e.Receive(line, now)
}

func writeOutputs(bw *bufio.Writer, out []Output, o StdioOptions, rx *RuleEdge, pace *progressPacer) error {
	out, cut := rx.Out(out)
	for _, m := range out {
		if m.Divergence != nil && o.OnDivergence != nil && m.Divergence.Resolution != Pending {
			o.OnDivergence(*m.Divergence)
		}
		if m.Stderr != nil && o.Stderr != nil {
			// Server log lines are best effort, as the server's own
			// stderr is: a closed stderr stops nothing.
			_, _ = o.Stderr.Write(m.Stderr)
		}
		if m.Msg == nil {
			continue
		}
		if d := max(m.hold, pace.wait(m)); d > 0 {
			if err := bw.Flush(); err != nil {
				return err
			}
			time.Sleep(d)
		}
		bw.Write(m.Msg)
		if err := bw.WriteByte('\n'); err != nil {
			return err
		}
		pace.wrote(m)
	}
	if cut != nil {
		_ = bw.Flush()
		return cut
	}
	return nil
}

// serveInstant is ServeStdio at speed 0: nothing is ever queued for later.
func serveInstant(ctx context.Context, e *Engine, r io.Reader, w io.Writer, o StdioOptions, now func() time.Time) error {
	src := newChunkSource(r)
	defer src.stop()
	ed := newStdioEdge(e, w, o, now)
	writeIn := ed.in
	var pending []byte // a line begun in an earlier chunk
	skipping := false  // the rest of a line over jsonrpc.MaxLine is dropped
	for {
		buf, rerr, ok := src.next(ctx)
		if !ok {
			return ed.flush() // ctx is done
		}
		data := buf
		for {
			i := bytes.IndexByte(data, '\n')
			if i < 0 {
				break
			}
			// One copy: the engine may keep the message, and the chunk's
			// buffer is read into again.
			if skipping { // the end of an over-long line
				skipping, data = false, data[i+1:]
				continue
			}
			var line []byte
			if len(pending) == 0 {
				line = bytes.Clone(data[:i+1])
			} else {
				line = append(pending[:len(pending):len(pending)], data[:i+1]...)
				pending = pending[:0]
			}
			if len(line) > jsonrpc.MaxLine {
				line = nil
			}
			if line == nil || len(bytes.TrimSpace(line)) > 0 {
				if err := writeIn(line); err != nil {
					return err
				}
			}
			data = data[i+1:]
		}
		if !skipping {
			pending = append(pending, data...)
		}
		if len(pending) > jsonrpc.MaxLine {
			pending, skipping = nil, true
			if err := writeIn(nil); err != nil {
				return err
			}
		}
		src.release(buf)
		if rerr != nil {
			if !skipping && len(bytes.TrimSpace(pending)) > 0 { // a last line without its newline
				if err := writeIn(pending); err != nil {
					return err
				}
			}
			if err := ed.flush(); err != nil {
				return err
			}
			if errors.Is(rerr, io.EOF) || ctx.Err() != nil {
				return nil // the end of input, or ctx closed r
			}
			return rerr
		}
		// Flush only when no more input waits: pipelined requests share
		// one write.
		if !src.more() {
			if err := ed.flush(); err != nil {
				return err
			}
		}
	}
}

// chunkSource hands serveInstant what r yields, a read at a time.
//
// A read of a pipe the runtime polls (an *os.File in non-blocking mode, as
// os.Pipe makes and cmd/tapedeck makes stdin when it is a pipe or socket)
// ends when ServeStdio closes r, so it is done in the serving goroutine.
// Any other read may block for good on an idle client (closing a blocking
// os.Stdin does not interrupt it), so a goroutine does it, and the loop
// waits for it or for ctx; that costs a goroutine hand-over per read.
type chunkSource struct {
	r      io.Reader
	direct bool
	buf    []byte // direct: the one buffer

	chunks chan chunk // goroutine: reads done
	free   chan []byte
	done   chan struct{}
}

type chunk struct {
	b   []byte
	err error
}

func newChunkSource(r io.Reader) *chunkSource {
	if interruptible(r) {
		return &chunkSource{r: r, direct: true, buf: make([]byte, 64<<10)}
	}
	s := &chunkSource{r: r, chunks: make(chan chunk, 2), free: make(chan []byte, 3), done: make(chan struct{})}
	for range 3 {
		s.free <- make([]byte, 64<<10)
	}
	go s.readLoop()
	return s
}

// interruptible reports whether a blocked r.Read ends when r is closed:
// files and connections the runtime polls accept a read deadline.
func interruptible(r io.Reader) bool {
	d, ok := r.(interface{ SetReadDeadline(time.Time) error })
	return ok && d.SetReadDeadline(time.Time{}) == nil
}

func (s *chunkSource) readLoop() {
	for {
		var buf []byte
		select {
		case buf = <-s.free:
		case <-s.done:
			return
		}
		n, err := s.r.Read(buf)
		select {
		case s.chunks <- chunk{buf[:n], err}:
		case <-s.done:
			return
		}
		if err != nil {
			return
		}
	}
}

// next returns the next chunk read and the read's error; ok is false when
// ctx ended first.
func (s *chunkSource) next(ctx context.Context) (b []byte, err error, ok bool) {
	if s.direct {
		n, err := s.r.Read(s.buf)
		if err != nil && ctx.Err() != nil {
			return nil, nil, false // ctx closed r
		}
		return s.buf[:n], err, true
	}
	select {
	case <-ctx.Done():
		return nil, nil, false
	case c := <-s.chunks:
		return c.b, c.err, true
	}
}

// release gives back a chunk's buffer once its bytes were used.
func (s *chunkSource) release(b []byte) {
	if !s.direct {
		s.free <- b[:cap(b)]
	}
}

// more reports whether another chunk is known to be waiting.
func (s *chunkSource) more() bool { return !s.direct && len(s.chunks) > 0 }

func (s *chunkSource) stop() {
	if !s.direct {
		close(s.done)
	}
}
