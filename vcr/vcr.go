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
	"encoding/json"
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

	"github.com/tapedeck/tapedeck/record"
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
	// ReplayWithNewEpisodes replays the tape (recording it first when it
	// is missing); a request the tape cannot answer goes to the real
	// server, connected on demand and initialised with the client's own
	// initialize, and the exchange is appended to the tape. The server
	// started halfway has seen none of the calls the tape answered: state
	// those calls made (a created file, a set log level) is not there.
	ReplayWithNewEpisodes
)

func (m Mode) String() string {
	if m < 0 || int(m) >= 5 {
		return fmt.Sprintf("Mode(%d)", int(m))
	}
	return [...]string{"record-once", "replay-only", "record-only", "passthrough", "replay-with-new-episodes"}[m]
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

	ignore []tape.Path // opts.Ignore, parsed by New

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
	for _, p := range o.Ignore {
		path, err := tape.ParsePath(p)
		if err != nil {
			return nil, fmt.Errorf("vcr: ignore %q: %w", p, err)
		}
		r.ignore = append(r.ignore, path)
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
	case RecordOnce, ReplayWithNewEpisodes:
		r.recording = !exists
	case Passthrough:
	default:
		return nil, fmt.Errorf("vcr: unknown mode %d", o.Mode)
	}
	if (r.recording || o.Mode == Passthrough || o.Mode == ReplayWithNewEpisodes) && real == nil {
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
	eo := replay.EngineOptions{Mode: r.opts.Match, Ignore: r.ignore}
	if len(x.Servers()) > 1 {
		eo.Server = r.opts.Server
	}
	e, err := replay.NewEngine(x, eo)
	if err != nil {
		x.Close()
		return nil, fmt.Errorf("vcr: %w", err)
	}
	c := &replayConn{x: x, e: e, signal: make(chan struct{}, 1), closed: make(chan struct{}), forwarded: map[string]bool{}, liveAsks: map[string]bool{}}
	if r.opts.Mode == ReplayWithNewEpisodes {
		c.r = r
	}
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

	// New episodes (r set): the client's initialize, the real server's
	// connection once a request fell through, the tape appended to, the
	// ids of the requests sent to it and of its own requests to the client.
	r         *Recorder
	initMsg   []byte
	live      mcp.Connection
	liveErr   error
	file      *os.File
	rec       *record.Session // the new episode's recording
	recErr    error           // the first error writing it, once closed
	forwarded map[string]bool
	liveAsks  map[string]bool
}

func (c *replayConn) Write(ctx context.Context, m jsonrpc.Message) error {
	b, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	c.mu.Lock()
	req, isReq := m.(*jsonrpc.Request)
	if c.r != nil && isReq && req.Method == "initialize" {
		c.initMsg = b
	}
	if resp, ok := m.(*jsonrpc.Response); ok && c.live != nil && c.liveAsks[idText(resp.ID)] {
		// The client's reply to the real server's own request.
		delete(c.liveAsks, idText(resp.ID))
		c.mu.Unlock()
		c.append(b, tape.DirSend)
		return c.live.Write(ctx, m)
	}
	var fallThrough bool
	for _, o := range c.e.Receive(b, time.Now()) {
		if d := o.Divergence; d != nil && c.r != nil && isReq && req.ID.IsValid() && newEpisode(d.Reason) {
			fallThrough = true // the real server answers it, not the divergence error
			c.forwarded[idText(req.ID)] = true
			continue
		}
		if o.Divergence != nil {
			c.divs = append(c.divs, *o.Divergence)
		}
		if o.Msg != nil {
			c.queue = append(c.queue, o.Msg)
		}
	}
	c.mu.Unlock()
	if fallThrough {
		if err := c.toLive(ctx, m, b); err != nil {
			return err
		}
	}
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
	c.once.Do(func() {
		close(c.closed)
		c.mu.Lock()
		defer c.mu.Unlock()
		if c.live != nil {
			c.live.Close()
		}
		if c.rec != nil {
			c.recErr = errors.Join(c.rec.Close(), c.file.Close())
			c.file, c.rec = nil, nil
		}
	})
	return nil
}

// newEpisode reports whether a divergence means the tape lacks the request
// (which the real server may answer) rather than a reply gone wrong.
func newEpisode(r replay.Reason) bool {
	switch r {
	case replay.ReasonMismatch, replay.ReasonUnknown, replay.ReasonRepeat, replay.ReasonBeyondEnd:
		return true
	}
	return false
}

// idText is an id as JSON text (5, "abc"), as replay.Divergence.RequestID.
func idText(id jsonrpc.ID) string {
	b, _ := json.Marshal(id.Raw())
	return string(b)
}

// initID is the id of the client's initialize sent again to the real
// server: its answer is the real server's, not the client's business.
const initID = "tapedeck-vcr-initialize"

// toLive sends request m (b encoded) to the real server, connecting and
// initialising it first, and appends it to the tape.
func (c *replayConn) toLive(ctx context.Context, m jsonrpc.Message, b []byte) error {
	c.mu.Lock()
	if c.live == nil && c.liveErr == nil {
		c.liveErr = c.startLive(ctx)
	}
	live, err := c.live, c.liveErr
	c.mu.Unlock()
	if err != nil {
		return fmt.Errorf("vcr: the tape has no answer, and the real server: %w", err)
	}
	c.append(b, tape.DirSend)
	return live.Write(ctx, m)
}

// startLive connects the real server and initialises it with the client's
// initialize; mu is held.
func (c *replayConn) startLive(ctx context.Context) error {
	conn, err := c.r.real().Connect(ctx)
	if err != nil {
		return err
	}
	// A 2025-era client opened with initialize: the real server gets it
	// again. A 2026-07-28 client's requests stand alone: nothing to open.
	if c.initMsg != nil {
		if err := initialise(ctx, conn, c.initMsg); err != nil {
			conn.Close()
			return err
		}
	}
	f, _, err := tape.Create(c.r.path, true)
	if err != nil {
		conn.Close()
		return err
	}
	c.live, c.file = conn, f
	c.rec = record.NewSession(record.SessionOptions{Tape: f, Server: c.r.opts.Server,
		Start:       map[string]any{"transport": "go-sdk", "recorder": "tapedeck/vcr", "episode": "new"},
		CloseReason: "the client closed the session"})
	go c.readLive(conn)
	return nil
}

// initialise sends the client's initialize (with an id of ours) and
// notifications/initialized to a real server's connection.
func initialise(ctx context.Context, conn mcp.Connection, initMsg []byte) error {
	init, err := jsonrpc.DecodeMessage(initMsg)
	if err != nil {
		return err
	}
	req := init.(*jsonrpc.Request)
	id, err := jsonrpc.MakeID(initID)
	if err != nil {
		return err
	}
	if err := conn.Write(ctx, &jsonrpc.Request{ID: id, Method: req.Method, Params: req.Params}); err != nil {
		return err
	}
	for {
		m, err := conn.Read(ctx)
		if err != nil {
			return err
		}
		if r, ok := m.(*jsonrpc.Response); ok && r.ID.Raw() == initID {
			if r.Error != nil {
				return r.Error
			}
			break
		}
	}
	return conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized"})
}

// readLive hands what the real server sends to the client, and to the tape.
func (c *replayConn) readLive(conn mcp.Connection) {
	for {
		m, err := conn.Read(context.Background())
		if err != nil {
			return
		}
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			continue
		}
		c.append(b, tape.DirRecv)
		c.mu.Lock()
		if r, ok := m.(*jsonrpc.Request); ok && r.ID.IsValid() {
			c.liveAsks[idText(r.ID)] = true
		}
		c.queue = append(c.queue, b)
		c.mu.Unlock()
		select {
		case c.signal <- struct{}{}:
		default:
		}
	}
}

// append writes a new episode's message to the tape.
func (c *replayConn) append(b []byte, dir tape.Dir) {
	if c.r.opts.BeforeSave != nil {
		b = c.r.opts.BeforeSave(b)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec != nil {
		c.rec.Message(dir, b)
	}
}

func (c *replayConn) SessionID() string { return "" }

// Stop ends the recording or the replay and returns what went wrong: an
// error writing the tape, or the replay's divergences and the recorded
// calls the client never made, in the words tapedeck replay uses. The
// latter wraps replay.ErrDiverged (errors.Is holds).
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
	if c.recErr != nil {
		c.mu.Unlock()
		return fmt.Errorf("vcr: writing the new episode to %s: %w", r.path, c.recErr)
	}
	rep := c.e.Report()
	if c.r != nil {
		// New episodes: what fell through to the real server is no
		// divergence, and the recorded calls the client left are no fault.
		rep.Divergences = slicesDeleteFunc(rep.Divergences, func(d replay.Divergence) bool { return c.forwarded[string(d.RequestID)] })
		rep.Unused = nil
	}
	c.mu.Unlock()
	if err := rep.Err(); err != nil {
		var b strings.Builder
		for _, d := range rep.Divergences {
			b.WriteString("\n  " + d.Message)
		}
		for _, u := range rep.Unused {
			fmt.Fprintf(&b, "\n  recorded request never sent by the client: %s (tape line %d)", u.Method, u.Line)
		}
		return fmt.Errorf("vcr: the client departed from %s: %w%s", r.path, err, b.String())
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

func slicesDeleteFunc[T any](s []T, del func(T) bool) []T {
	out := s[:0]
	for _, v := range s {
		if !del(v) {
			out = append(out, v)
		}
	}
	return out
}
