// Package vcr records and replays MCP sessions in Go tests, as go-vcr does
// for HTTP: a Recorder is an mcp.Transport (the go-sdk's) that either
// records whatever goes through a real transport to a tape, or serves the
// tape in-process through tapedeck's replay engine, with no subprocess and
// no socket. The tape is the same file tapedeck record writes and
// tapedeck replay, debug and open read.
//
// In a test, one line:
//
//	transport := vcr.NewT(t, "testdata/search.tape.jsonl", func() mcp.Transport { return realTransport })
//	session, err := client.Connect(ctx, transport, nil)
//
// The first run (no tape yet) records against the real transport; the
// next ones replay the tape with the server absent, and a call that
// departs from it fails the test with the difference, as tapedeck replay
// prints it.
//
// vcr is the only package of tapedeck that imports the go-sdk outside
// tests.
package vcr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// Mode is when a Recorder records and when it replays (go-vcr's modes).
type Mode int

const (
	// RecordOnce replays the tape when it exists, else records it.
	RecordOnce Mode = iota
	// ReplayOnly replays the tape; a missing tape is an error.
	ReplayOnly
	// RecordOnly records always, replacing the tape.
	RecordOnly
	// Passthrough uses the real transport and writes nothing.
	Passthrough
)

// go-vcr's "replay with new episodes" has no MCP counterpart here: a
// session is stateful, so the real server cannot answer the calls a tape
// lacks without having seen the calls the tape answered. A call missing
// from a tape is a divergence; RecordOnly records the session again.

func (m Mode) String() string {
	if m < 0 || int(m) >= 4 {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return [...]string{"record-once", "replay-only", "record-only", "passthrough"}[m]
}

// Options tune a Recorder.
type Options struct {
	Mode Mode
	// Match is the replay's matching: replay.Strict (the default),
	// replay.Keyed or replay.Loose.
	Match replay.Mode
	// Ignore lists paths left out when matching, e.g.
	// "params.arguments.ts" (as tapedeck replay --ignore).
	Ignore []string
	// Server names the server on the tape ("server" when empty).
	Server string
	// BeforeSave may change each message before it is written (redaction):
	// it gets the message's JSON and returns what to write.
	BeforeSave func(msg []byte) []byte
}

// Recorder is an mcp.Transport that records or replays one session.
type Recorder struct {
	path string
	real func() mcp.Transport
	opts Options

	mu        sync.Mutex
	recording bool
	replaying *replayConn
	file      *os.File
	w         *tape.Writer
	werr      error
}

// New returns a Recorder of the tape at path; real makes the transport to
// the real server, used when recording or passing through (it may be nil
// for ReplayOnly).
func New(path string, real func() mcp.Transport, o Options) (*Recorder, error) {
	r := &Recorder{path: path, real: real, opts: o}
	if o.Server == "" {
		r.opts.Server = "server"
	}
	_, err := os.Stat(path)
	exists := err == nil
	switch o.Mode {
	case ReplayOnly:
		if !exists {
			return nil, fmt.Errorf("vcr: replay only: no tape at %s", path)
		}
	case RecordOnly:
		r.recording = true
	case RecordOnce:
		r.recording = !exists
	case Passthrough:
	default:
		return nil, fmt.Errorf("vcr: unknown mode %d", o.Mode)
	}
	if (r.recording || o.Mode == Passthrough) && real == nil {
		return nil, fmt.Errorf("vcr: %s with no tape at %s needs the real transport", o.Mode, path)
	}
	return r, nil
}

// Recording reports whether the Recorder records (else it replays or
// passes through).
func (r *Recorder) Recording() bool { return r.recording }

// Connect implements mcp.Transport.
func (r *Recorder) Connect(ctx context.Context) (mcp.Connection, error) {
	switch {
	case r.opts.Mode == Passthrough:
		return r.real().Connect(ctx)
	case r.recording:
		return r.record(ctx)
	}
	return r.replay()
}

func (r *Recorder) record(ctx context.Context) (mcp.Connection, error) {
	if r.opts.Mode == RecordOnly {
		if err := os.Remove(r.path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("vcr: %w", err)
		}
	}
	f, _, err := tape.Create(r.path, false)
	if err != nil {
		return nil, fmt.Errorf("vcr: record: %w", err)
	}
	conn, err := r.real().Connect(ctx)
	if err != nil {
		f.Close()
		os.Remove(r.path)
		return nil, err
	}
	r.mu.Lock()
	r.file, r.w = f, tape.NewWriter(f)
	r.note(r.w.WriteLifecycle(tape.MethodStart, map[string]any{"transport": "go-sdk", "recorder": "tapedeck/vcr"}, tape.Meta{Server: r.opts.Server, Time: time.Now()}))
	r.mu.Unlock()
	return &recConn{Connection: conn, r: r}, nil
}

// write records one message; mu is taken.
func (r *Recorder) write(msg jsonrpc.Message, dir tape.Dir) {
	b, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		r.mu.Lock()
		r.note(fmt.Errorf("encode a message: %w", err))
		r.mu.Unlock()
		return
	}
	if r.opts.BeforeSave != nil {
		b = r.opts.BeforeSave(b)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		r.note(r.w.Write(b, tape.Meta{Dir: dir, Server: r.opts.Server, Time: time.Now()}))
	}
}

func (r *Recorder) note(err error) {
	if err != nil && r.werr == nil {
		r.werr = err
	}
}

// recConn records both directions of a real connection.
type recConn struct {
	mcp.Connection
	r    *Recorder
	once sync.Once
}

func (c *recConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	m, err := c.Connection.Read(ctx)
	if err == nil {
		c.r.write(m, tape.DirRecv)
	}
	return m, err
}

func (c *recConn) Write(ctx context.Context, m jsonrpc.Message) error {
	c.r.write(m, tape.DirSend)
	return c.Connection.Write(ctx, m)
}

func (c *recConn) Close() error {
	err := c.Connection.Close()
	c.once.Do(func() {
		c.r.mu.Lock()
		defer c.r.mu.Unlock()
		if c.r.w != nil {
			c.r.note(c.r.w.WriteLifecycle(tape.MethodClose, map[string]any{"reason": "the client closed the session"}, tape.Meta{Server: c.r.opts.Server, Time: time.Now()}))
			c.r.note(c.r.file.Close())
			c.r.w = nil
		}
	})
	return err
}

func (r *Recorder) replay() (mcp.Connection, error) {
	x, err := tape.OpenIndex(r.path)
	if err != nil {
		return nil, fmt.Errorf("vcr: %w", err)
	}
	eo := replay.EngineOptions{Mode: r.opts.Match}
	if len(x.Servers()) > 1 {
		eo.Server = r.opts.Server
	}
	for _, p := range r.opts.Ignore {
		path, err := tape.ParsePath(p)
		if err != nil {
			x.Close()
			return nil, fmt.Errorf("vcr: ignore %q: %w", p, err)
		}
		eo.Ignore = append(eo.Ignore, path)
	}
	e, err := replay.NewEngine(x, eo)
	if err != nil {
		x.Close()
		return nil, fmt.Errorf("vcr: %w", err)
	}
	c := &replayConn{x: x, e: e, signal: make(chan struct{}, 1), closed: make(chan struct{})}
	r.mu.Lock()
	r.replaying = c
	r.mu.Unlock()
	return c, nil
}

// replayConn serves the tape through the replay engine, in process.
type replayConn struct {
	x      *tape.Index
	e      *replay.Engine
	mu     sync.Mutex
	queue  [][]byte
	divs   []replay.Divergence
	signal chan struct{}
	closed chan struct{}
	once   sync.Once
}

func (c *replayConn) Write(ctx context.Context, m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	for _, o := range c.e.Receive(b, time.Now()) {
		if o.Divergence != nil {
			c.divs = append(c.divs, *o.Divergence)
		}
		if o.Msg != nil {
			c.queue = append(c.queue, o.Msg)
		}
	}
	c.mu.Unlock()
	select {
	case c.signal <- struct{}{}:
	default:
	}
	return nil
}

func (c *replayConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		c.mu.Lock()
		if len(c.queue) > 0 {
			b := c.queue[0]
			c.queue = c.queue[1:]
			c.mu.Unlock()
			return jsonrpc.DecodeMessage(b)
		}
		c.mu.Unlock()
		select {
		case <-c.signal:
		case <-c.closed:
			return nil, io.EOF
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (c *replayConn) Close() error {
	c.once.Do(func() { close(c.closed) })
	return nil
}

func (c *replayConn) SessionID() string { return "" }

// Stop ends the recording or the replay and returns what went wrong: an
// error writing the tape, or the replay's divergences and the recorded
// calls the client never made, in the words tapedeck replay uses.
func (r *Recorder) Stop() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.w != nil {
		r.note(r.file.Close())
		r.w = nil
	}
	if r.werr != nil {
		return fmt.Errorf("vcr: writing %s: %w", r.path, r.werr)
	}
	c := r.replaying
	if c == nil {
		return nil
	}
	r.replaying = nil
	c.Close()
	defer c.x.Close()
	c.mu.Lock()
	rep := c.e.Report()
	c.mu.Unlock()
	if err := rep.Err(); err != nil {
		var b strings.Builder
		fmt.Fprintf(&b, "vcr: the client departed from %s: %v", r.path, err)
		for _, d := range rep.Divergences {
			b.WriteString("\n  " + d.Message)
		}
		for _, u := range rep.Unused {
			fmt.Fprintf(&b, "\n  recorded request never sent by the client: %s (tape line %d)", u.Method, u.Line)
		}
		return errors.New(b.String())
	}
	return nil
}

// NewT is New for a test: the Recorder is stopped when the test ends, and
// a failure to write the tape, a divergence or an unused recorded call
// fails the test with the difference.
func NewT(t testing.TB, path string, real func() mcp.Transport, opts ...Options) *Recorder {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	r, err := New(path, real, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := r.Stop(); err != nil {
			t.Error(err)
		}
	})
	return r
}
