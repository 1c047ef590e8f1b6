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
// A live server that ends (exits, or its URL stops answering) leaves no
// request unanswered: each one it had not answered gets a JSON-RPC error
// (replay.CodeNoAnswer) at once, and so does every later one that falls
// through; one that does not answer within Fallback.Timeout gets the
// error then (a late answer goes on the tape, not to the client). The tape
// records each such request ($transport/unanswered) and
// replay.FellThrough.Outcome says what happened.
//
// What a server started halfway cannot have: the state the recorded
// calls built (files written, a cart filled, a subscription made), since
// the tape answered those and the live server never saw them; it has only
// what its own start and the client's initialize give it.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/proc"
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
	// Timeout bounds the wait for each answer of the live server (its
	// initialize's too); zero means DefaultLiveTimeout.
	Timeout time.Duration
}

// DefaultLiveTimeout is how long a live server may take to answer.
const DefaultLiveTimeout = 30 * time.Second

// liveInitID is the id of the client's initialize sent again to the live
// server: its answer is not the client's business.
const liveInitID = `"tapedeck-fallback-initialize"`

// Fallthrough is the live server of a fallback, for an edge that serves a
// tape: its Peek sees each client message first, and its Miss takes each
// miss; the live server's messages go to the client Miss was given.
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
	pending   map[string]*awaited // requests sent to the live server, by id
	expired   map[string]bool     // ids answered with a timeout error
	gone      string              // why the live server answers no more
	closing   bool                // Close was called
}

// awaited is a request the live server has not answered yet.
type awaited struct {
	fell  int // its index in fell
	timer *time.Timer
}

// NewFallthrough returns the fall-through to fb's live server, for one
// client: install Peek and Miss as a serving edge's hooks
// (replay.StdioOptions), and Close it when the client is gone.
func NewFallthrough(fb *Fallback) *Fallthrough {
	ctx, cancel := context.WithCancel(context.Background())
	return &Fallthrough{fb: fb, ctx: ctx, cancel: cancel, liveAsks: map[string]bool{},
		pending: map[string]*awaited{}, expired: map[string]bool{}}
}

func (s *Fallthrough) timeout() time.Duration {
	if s.fb.Timeout > 0 {
		return s.fb.Timeout
	}
	return DefaultLiveTimeout
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
// the divergence error, the reason first; when the live server has ended,
// or does not answer within the timeout, it answers the client an error
// (replay.CodeNoAnswer) saying so.
func (s *Fallthrough) Miss(req []byte, d *replay.Divergence, client func(msgs ...[]byte) error) bool {
	if err := s.take(d, req, client); err != nil {
		// No live server: the client gets the divergence, and a word why.
		msg := fmt.Sprintf("the live server could not be started: %v; and the tape cannot answer it: %s", err, d.Message)
		_ = client(jsonrpc.ErrorResponse(d.RequestID, replay.CodeDiverged, msg, nil))
	}
	return true
}

// take sends the request behind miss d to the live server, starting it
// first; an error says it could not be started. A live server that has
// ended, or that does not answer within the timeout, gets the client an
// error (unanswered) instead of an answer.
func (s *Fallthrough) take(d *replay.Divergence, raw []byte, client func(msgs ...[]byte) error) error {
	s.mu.Lock()
	if s.out == nil {
		s.out = client
	}
	s.mu.Unlock()
	if err := s.start(s.ctx); err != nil {
		return err
	}
	id := string(d.RequestID)
	s.mu.Lock()
	s.fell = append(s.fell, replay.FellThrough{Method: d.Method, ID: d.RequestID, Reason: d.Reason})
	a := &awaited{fell: len(s.fell) - 1}
	if gone := s.gone; gone != "" {
		s.mu.Unlock()
		s.unanswered(id, a, gone)
		return nil
	}
	s.pending[id] = a
	a.timer = time.AfterFunc(s.timeout(), func() {
		s.mu.Lock()
		if s.closing || s.pending[id] != a {
			s.mu.Unlock()
			return
		}
		delete(s.pending, id)
		s.expired[id] = true
		s.mu.Unlock()
		s.unanswered(id, a, fmt.Sprintf("the live server did not answer in %s", s.timeout()))
	})
	s.mu.Unlock()
	if err := s.toLive(bytes.TrimSpace(raw)); err != nil {
		s.mu.Lock()
		mine := s.pending[id] == a
		delete(s.pending, id)
		s.mu.Unlock()
		if mine {
			a.timer.Stop()
			s.unanswered(id, a, "the live server could not be sent it: "+err.Error())
		}
	}
	return nil
}

// unanswered answers the client's request id, which the live server will
// not answer, with an error saying why, and records it on the tape.
func (s *Fallthrough) unanswered(id string, a *awaited, why string) {
	s.mu.Lock()
	f := &s.fell[a.fell]
	f.Outcome = why
	method := f.Method
	rec, out := s.rec, s.out
	s.mu.Unlock()
	if rec != nil {
		rec.Lifecycle(tape.MethodUnanswered, map[string]any{"method": method, "id": json.RawMessage(id), "reason": why})
	}
	_ = out(jsonrpc.ErrorResponse([]byte(id), replay.CodeNoAnswer, why, nil))
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

// toLive sends a message to the live server and appends it to the tape;
// the error says the server could not be sent it.
func (s *Fallthrough) toLive(msg []byte) error {
	s.mu.Lock()
	c, rec := s.conn, s.rec
	s.mu.Unlock()
	if rec != nil {
		rec.Message(tape.DirSend, msg)
	}
	if c == nil {
		return errors.New("no live server")
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout())
	defer cancel()
	return c.Send(ctx, bytes.Clone(msg))
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
		stderr := s.fb.Stderr
		if stderr == nil {
			stderr = io.Discard
		}
		p, err := proc.Start(proc.Spec{Command: s.fb.Command, Args: s.fb.Args, Stderr: stderr})
		if err != nil {
			return err
		}
		c := NewStdioConn(p.Stdin, p.Stdout)
		s.conn, s.closeConn = c, func() { p.Stop(stopGrace, stopGrace); _ = c.Close() }
		params["transport"], params["command"], params["args"], params["pid"] = "stdio", s.fb.Command, s.fb.Args, p.Pid()
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
	ictx, cancel := context.WithTimeout(ctx, s.timeout())
	defer cancel()
	if err := s.conn.Send(ictx, init); err != nil {
		return fmt.Errorf("the live server could not be sent initialize: %w", err)
	}
	for {
		msg, err := s.conn.Recv(ictx)
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return fmt.Errorf("the live server did not answer initialize in %s", s.timeout())
		}
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
// When the server's messages end, before Close, every request it had not
// answered gets an error.
func (s *Fallthrough) readLive(c Conn) {
	defer close(s.readerEnd)
	for {
		msg, err := c.Recv(context.Background())
		if err != nil {
			s.ended(err)
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
		forward := true
		if es := tape.Classify(msg); len(es) == 1 {
			id := string(es[0].ID)
			s.mu.Lock()
			switch es[0].Kind {
			case tape.KindRequest:
				s.liveAsks[id] = true
			case tape.KindResponse:
				if a := s.pending[id]; a != nil {
					a.timer.Stop()
					delete(s.pending, id)
					s.fell[a.fell].Outcome = replay.OutcomeAnswered
				} else if s.expired[id] {
					forward = false // the client already got the timeout's error
				}
			}
			s.mu.Unlock()
		}
		if forward {
			s.mu.Lock()
			out := s.out
			s.mu.Unlock()
			_ = out(msg)
		}
	}
}

// ended marks the live server gone (unless Close ended it) and answers
// each request it had not answered.
func (s *Fallthrough) ended(err error) {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	s.gone = "the live server ended before answering"
	if err != nil && !errors.Is(err, io.EOF) {
		s.gone += " (" + err.Error() + ")"
	}
	left := s.pending
	s.pending = map[string]*awaited{}
	s.mu.Unlock()
	ids := make([]string, 0, len(left))
	for id := range left {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return left[ids[i]].fell < left[ids[j]].fell })
	for _, id := range ids {
		left[id].timer.Stop()
		s.unanswered(id, left[id], s.gone)
	}
}

// stopGrace is how long the live server has to exit once its stdin is
// closed, and then after SIGTERM, before SIGKILL.
const stopGrace = 2 * time.Second

// stop ends the live server, if one ran; the episode's close record says
// why the live server ended, if it ended first.
func (s *Fallthrough) stop() {
	s.mu.Lock()
	closeConn, end, rec := s.closeConn, s.readerEnd, s.rec
	s.closing = true
	for _, a := range s.pending {
		a.timer.Stop()
	}
	s.mu.Unlock()
	if closeConn == nil {
		return
	}
	closeConn()
	if end != nil {
		<-end
	}
	s.mu.Lock()
	gone := s.gone
	s.mu.Unlock()
	if gone != "" && rec != nil {
		rec.SetCloseReason(gone)
	}
}
