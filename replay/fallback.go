package replay

// Fall through to the live server
//
// ServeStdioFallback is ServeStdio where the tape answers while the client
// follows it, and a request the tape cannot answer (a strict mismatch or
// the end of the tape, a keyed call never recorded or repeated more often)
// goes to the live server instead of a divergence error: the server is
// started on the first such request and opened with the client's own
// initialize (a 2026-07-28 client's requests need none), the server's
// answers, notifications and requests reach the client, the client's
// replies to the server's requests go back to it, and every message of
// the live exchange is appended to a tape as a new episode
// ($transport/start with "episode": "new"), as go-vcr's
// ModeReplayWithNewEpisodes does.
//
// What a server started halfway cannot have: the state the recorded
// calls built (files written, a cart filled, a subscription made), since
// the tape answered those and the live server never saw them; it has only
// what its own start and the client's initialize give it.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// Fallback is the live server a replay falls through to.
type Fallback struct {
	// Command and Args start a stdio server; or URL names a Streamable
	// HTTP one.
	Command string
	Args    []string
	URL     string
	// Tape receives the live episodes' lines (the replayed tape opened to
	// append, or a new file).
	Tape io.Writer
	// Server names the server on the tape (the replayed server's name, so
	// that a later replay serves the new episodes too).
	Server string
	// Stderr receives the live server's stderr; nil discards it.
	Stderr io.Writer
}

// FellThrough says a request went to the live server.
type FellThrough = debug.FellThrough

// fellThroughReason reports whether a divergence means the tape lacks the
// request (which the live server may answer) rather than a reply gone
// wrong.
func fellThroughReason(r Reason) bool {
	switch r {
	case ReasonMismatch, ReasonUnknown, ReasonRepeat, ReasonBeyondEnd:
		return true
	}
	return false
}

// liveInitID is the id of the client's initialize sent again to the live
// server: its answer is not the client's business.
const liveInitID = `"tapedeck-fallback-initialize"`

// Fallthrough is the live server of a fallback, for an edge that serves a
// tape: Observe each client message first, and hand Take each divergence;
// the live server's messages go to out.
type Fallthrough struct {
	fb      *Fallback
	out     func(msgs ...[]byte) error
	w       *tape.Writer
	initMsg []byte

	mu        sync.Mutex
	conn      Conn
	closeConn func()
	started   bool
	startErr  error
	liveAsks  map[string]bool // ids of the live server's requests to the client
	fell      []FellThrough
	readerEnd chan struct{}
}

// lockedLines writes whole lines to the client from several goroutines.
type lockedLines struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (l *lockedLines) write(msgs ...[]byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, m := range msgs {
		l.w.Write(m)
		l.w.WriteByte('\n')
	}
	if err := l.w.Flush(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}

// NewFallthrough returns the fallback to fb's live server; out writes
// messages to the client.
func NewFallthrough(fb *Fallback, out func(msgs ...[]byte) error) *Fallthrough {
	return &Fallthrough{fb: fb, out: out, w: tape.NewWriter(fb.Tape), liveAsks: map[string]bool{}}
}

// Observe looks at a client's message before the engine does: it keeps
// the client's initialize (the live server is opened with it), and sends a
// reply to the live server's own request to it, reporting handled.
func (s *Fallthrough) Observe(line []byte) (handled bool) {
	msg := bytes.TrimSpace(line)
	es := tape.Classify(msg)
	if len(es) != 1 {
		return false
	}
	e := es[0]
	if e.Kind == tape.KindRequest && e.Method == "initialize" {
		s.mu.Lock()
		s.initMsg = bytes.Clone(msg)
		s.mu.Unlock()
	}
	s.mu.Lock()
	live := e.Kind == tape.KindResponse && s.liveAsks[string(e.ID)]
	if live {
		delete(s.liveAsks, string(e.ID))
	}
	s.mu.Unlock()
	if live {
		_ = s.toLive(msg)
	}
	return live
}

// Takes reports whether d is a divergence the live server answers: a
// request the tape lacks.
func Takes(d *Divergence) bool {
	return d != nil && len(d.RequestID) > 0 && fellThroughReason(d.Reason)
}

// Take sends the request behind divergence d (Takes(d)) to the live
// server, starting it first; an error says it could not be started, and
// the client should get the divergence instead.
func (s *Fallthrough) Take(ctx context.Context, d *Divergence, raw []byte) error {
	if err := s.start(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.fell = append(s.fell, FellThrough{Method: d.Method, ID: d.RequestID, Reason: d.Reason})
	s.mu.Unlock()
	return s.toLive(bytes.TrimSpace(raw))
}

// Fell lists the requests that went to the live server.
func (s *Fallthrough) Fell() []FellThrough {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]FellThrough(nil), s.fell...)
}

// Close stops the live server, if one ran.
func (s *Fallthrough) Close() { s.stop() }

// ServeStdioFallback serves e over stdio as ServeStdio does at speed 0,
// falling through to fb's live server for what the tape cannot answer (see
// the comment at the top of this file). It returns the requests that fell
// through; FallbackReport takes them out of the engine's report's
// divergences.
func ServeStdioFallback(ctx context.Context, e *Engine, r io.Reader, w io.Writer, o StdioOptions, fb *Fallback) ([]FellThrough, error) {
	if c, ok := r.(io.Closer); ok {
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
	}
	out := &lockedLines{w: bufio.NewWriterSize(w, 64<<10)}
	ft := NewFallthrough(fb, out.write)
	err := ReadLines(r, 0, func(line []byte) error {
		if ft.Observe(line) {
			return nil
		}
		var msgs [][]byte
		var fell *Divergence
		for _, o2 := range e.Receive(line, time.Now()) {
			if d := o2.Divergence; Takes(d) {
				fell = d
				continue
			}
			if d := o2.Divergence; d != nil && o.OnDivergence != nil && d.Resolution != Pending {
				o.OnDivergence(*d)
			}
			if o2.Msg != nil {
				msgs = append(msgs, o2.Msg)
			}
		}
		if len(msgs) > 0 {
			if err := out.write(msgs...); err != nil {
				return err
			}
		}
		if fell == nil {
			return nil
		}
		if err := ft.Take(ctx, fell, line); err != nil {
			// No live server: the client gets the divergence, and a word why.
			msg := fmt.Sprintf("%s (tapedeck replay --fallback: the live server could not be started: %v)", fell.Message, err)
			return out.write(errorResponse(fell.RequestID, CodeDiverged, msg, nil))
		}
		return nil
	}, func() error { return out.write(LineTooLong(MaxLine)) })
	ft.Close()
	if err != nil && ctx.Err() != nil {
		err = nil
	}
	return ft.Fell(), err
}

// toLive sends a message to the live server and appends it to the tape.
func (s *Fallthrough) toLive(msg []byte) error {
	_ = s.w.Write(msg, tape.Meta{Dir: tape.DirSend, Server: s.fb.Server, Time: time.Now()})
	s.mu.Lock()
	c := s.conn
	s.mu.Unlock()
	if c == nil {
		return nil
	}
	_ = c.Send(context.Background(), bytes.Clone(msg)) // a server gone: the client waits as it would
	return nil
}

// start runs the live server once and opens it with the client's
// initialize.
func (s *Fallthrough) start(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.started {
		return s.startErr
	}
	s.started = true
	s.startErr = s.launch(ctx)
	return s.startErr
}

// launch connects the live server (its process, or its URL); mu is held.
func (s *Fallthrough) launch(ctx context.Context) error {
	params := map[string]any{"episode": "new", "recorder": "tapedeck replay --fallback"}
	if s.fb.URL != "" {
		c := NewHTTPConn(s.fb.URL, nil)
		s.conn, s.closeConn = c, func() { _ = c.Close() }
		params["transport"], params["upstream"] = "http", s.fb.URL
	} else {
		cmd := exec.Command(s.fb.Command, s.fb.Args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		cmd.Stderr = s.fb.Stderr
		in, err := cmd.StdinPipe()
		if err != nil {
			return err
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			return err
		}
		if err := cmd.Start(); err != nil {
			return err
		}
		c := NewStdioConn(in, out)
		s.conn, s.closeConn = c, func() { in.Close(); stopProcess(cmd); _ = c.Close() }
		params["transport"], params["command"], params["args"], params["pid"] = "stdio", s.fb.Command, s.fb.Args, cmd.Process.Pid
	}
	_ = s.w.WriteLifecycle(tape.MethodStart, params, tape.Meta{Server: s.fb.Server, Time: time.Now()})
	if s.initMsg != nil {
		if err := s.initialise(ctx); err != nil {
			s.closeConn()
			s.conn = nil
			return err
		}
	}
	s.readerEnd = make(chan struct{})
	go s.readLive(s.conn)
	return nil
}

// initialise sends the client's initialize (with an id of ours) and
// waits, within a bound, for the answer, then says initialized.
func (s *Fallthrough) initialise(ctx context.Context) error {
	init, err := withID(s.initMsg, liveInitID)
	if err != nil {
		return err
	}
	ictx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.conn.Send(ictx, init); err != nil {
		return err
	}
	for {
		msg, err := s.conn.Recv(ictx)
		if err != nil {
			return fmt.Errorf("the live server did not answer initialize: %w", err)
		}
		es := tape.Classify(bytes.TrimSpace(msg))
		if len(es) == 1 && es[0].Kind == tape.KindResponse && string(es[0].ID) == liveInitID {
			if es[0].Error {
				return fmt.Errorf("the live server refused initialize: %s", bytes.TrimSpace(msg))
			}
			break
		}
	}
	return s.conn.Send(ictx, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`))
}

// withID returns a request with its id replaced.
func withID(req []byte, id string) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(req, &m); err != nil {
		return nil, err
	}
	m["id"] = json.RawMessage(id)
	return json.Marshal(m)
}

// readLive hands the live server's messages to the client and the tape.
func (s *Fallthrough) readLive(c Conn) {
	defer close(s.readerEnd)
	for {
		msg, err := c.Recv(context.Background())
		if err != nil {
			return
		}
		msg = bytes.TrimSpace(msg)
		if len(msg) == 0 {
			continue
		}
		_ = s.w.Write(msg, tape.Meta{Dir: tape.DirRecv, Server: s.fb.Server, Time: time.Now()})
		if es := tape.Classify(msg); len(es) == 1 && es[0].Kind == tape.KindRequest {
			s.mu.Lock()
			s.liveAsks[string(es[0].ID)] = true
			s.mu.Unlock()
		}
		_ = s.out(msg)
	}
}

// stopProcess waits for a server whose stdin is closed, then signals it.
func stopProcess(cmd *exec.Cmd) {
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(2 * time.Second):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
}

// stop ends the live server, if one ran.
func (s *Fallthrough) stop() {
	s.mu.Lock()
	closeConn, end := s.closeConn, s.readerEnd
	s.mu.Unlock()
	if closeConn == nil {
		return
	}
	closeConn()
	if end != nil {
		<-end
	}
	_ = s.w.WriteLifecycle(tape.MethodClose, map[string]any{"episode": "new", "reason": "the client closed stdin"}, tape.Meta{Server: s.fb.Server, Time: time.Now()})
}

// FallbackReport takes the divergences that fell through to the live
// server out of rep: they were answered, by the server instead of the
// tape.
func FallbackReport(rep *Report, fell []FellThrough) {
	rep.FellThrough = fell
	if len(fell) == 0 {
		return
	}
	ids := map[string]bool{}
	for _, f := range fell {
		ids[string(f.ID)] = true
	}
	kept := rep.Divergences[:0]
	for _, d := range rep.Divergences {
		if fellThroughReason(d.Reason) && ids[string(d.RequestID)] {
			continue
		}
		kept = append(kept, d)
	}
	rep.Divergences = kept
}

// ErrorResponse is a JSON-RPC error answer to id (its JSON text).
func ErrorResponse(id []byte, code int, msg string) []byte {
	return errorResponse(id, code, msg, nil)
}
