package upstream

// Fall through to the live server
//
// A Fallthrough is the Miss hook of a serving edge (replay.StdioOptions):
// the tape answers while the client follows it, and a request the tape
// cannot answer (a strict mismatch or the end of the tape, a keyed call
// never recorded or repeated more often: replay.IsMiss) goes to the live
// server instead of a divergence error: the server is
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
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/replay"
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
	// append, or a new file), recorded through a record.Session.
	Tape io.Writer
	// Redact, if set, redacts the episodes' copy of each message.
	Redact *tape.Redactor
	// Server names the server on the tape (the replayed server's name, so
	// that a later replay serves the new episodes too).
	Server string
	// Stderr receives the live server's stderr; nil discards it.
	Stderr io.Writer
}

// liveInitID is the id of the client's initialize sent again to the live
// server: its answer is not the client's business.
const liveInitID = `"tapedeck-fallback-initialize"`

// Fallthrough is the live server of a fallback, for an edge that serves a
// tape: Observe each client message first, and hand Take each divergence;
// the live server's messages go to out.
type Fallthrough struct {
	fb      *Fallback
	rec     *record.Session // from the live server's start (mu)
	ctx     context.Context // ends at Close
	cancel  context.CancelFunc
	initMsg []byte

	mu        sync.Mutex
	out       func(msgs ...[]byte) error // to the client, from Miss or Take
	conn      Conn
	closeConn func()
	started   bool
	startErr  error
	liveAsks  map[string]bool // ids of the live server's requests to the client
	fell      []replay.FellThrough
	readerEnd chan struct{}
}

// NewFallthrough returns the fall-through to fb's live server, for one
// client: install Peek and Miss as a serving edge's hooks
// (replay.StdioOptions), and Close it when the client is gone.
func NewFallthrough(fb *Fallback) *Fallthrough {
	ctx, cancel := context.WithCancel(context.Background())
	return &Fallthrough{fb: fb, ctx: ctx, cancel: cancel, liveAsks: map[string]bool{}}
}

// Peek looks at a client's message before the engine does: it keeps the
// client's initialize (the live server is opened with it), and sends a
// reply to the live server's own request to it, reporting handled.
func (s *Fallthrough) Peek(line []byte) (handled bool) {
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

// Miss is a serving edge's hook (replay.StdioOptions.Miss): it sends req,
// the request behind miss d, to the live server, starting the server
// first; its messages reach the client through client. It takes every
// miss: when the live server cannot be started, it answers the client
// the divergence error with the reason.
func (s *Fallthrough) Miss(req []byte, d *replay.Divergence, client func(msgs ...[]byte) error) bool {
	if err := s.take(d, req, client); err != nil {
		// No live server: the client gets the divergence, and a word why.
		msg := fmt.Sprintf("%s (the live server could not be started: %v)", d.Message, err)
		_ = client(jsonrpc.ErrorResponse(d.RequestID, replay.CodeDiverged, msg, nil))
	}
	return true
}

// take sends the request behind miss d to the live server, starting it
// first; an error says it could not be started.
func (s *Fallthrough) take(d *replay.Divergence, raw []byte, client func(msgs ...[]byte) error) error {
	s.mu.Lock()
	if s.out == nil {
		s.out = client
	}
	s.mu.Unlock()
	if err := s.start(s.ctx); err != nil {
		return err
	}
	s.mu.Lock()
	s.fell = append(s.fell, replay.FellThrough{Method: d.Method, ID: d.RequestID, Reason: d.Reason})
	s.mu.Unlock()
	return s.toLive(bytes.TrimSpace(raw))
}

// Fell lists the requests that went to the live server.
func (s *Fallthrough) Fell() []replay.FellThrough {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]replay.FellThrough(nil), s.fell...)
}

// Close stops the live server, if one ran, and returns the first error
// writing its episode to the tape.
func (s *Fallthrough) Close() error {
	s.cancel()
	s.stop()
	s.mu.Lock()
	rec := s.rec
	s.mu.Unlock()
	if rec == nil {
		return nil
	}
	return rec.Close()
}

// toLive sends a message to the live server and appends it to the tape.
func (s *Fallthrough) toLive(msg []byte) error {
	s.mu.Lock()
	c, rec := s.conn, s.rec
	s.mu.Unlock()
	if rec != nil {
		rec.Message(tape.DirSend, msg)
	}
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
	s.rec = record.NewSession(record.SessionOptions{Tape: s.fb.Tape, Server: s.fb.Server, Redact: s.fb.Redact,
		Start: params, CloseReason: "the client closed stdin"})
	if s.initMsg != nil {
		if err := s.initialise(ctx); err != nil {
			s.closeConn()
			s.conn, s.closeConn = nil, nil
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
		s.mu.Lock()
		rec := s.rec
		s.mu.Unlock()
		rec.Message(tape.DirRecv, msg)
		if es := tape.Classify(msg); len(es) == 1 && es[0].Kind == tape.KindRequest {
			s.mu.Lock()
			s.liveAsks[string(es[0].ID)] = true
			s.mu.Unlock()
		}
		s.mu.Lock()
		out := s.out
		s.mu.Unlock()
		_ = out(msg)
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
}
