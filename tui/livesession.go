package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// EngineSession is a Live session: a replay.Engine (created with
// Options.Hold) serving clients that connect to a listener, one at a time,
// with newline-delimited JSON-RPC (what "tapedeck attach" relays from a
// client's stdio). The engine's answers are held until the debugger's
// playback delivers the tape messages they replay: a breakpoint holds them.
// Messages the engine makes itself (divergence errors) go at once.
type EngineSession struct {
	x   *tape.Index
	ln  net.Listener
	now func() time.Time

	mu       sync.Mutex
	e        *replay.Engine
	conn     net.Conn
	released int             // tape messages before it are delivered
	queue    []replay.Output // waiting for their delivery
	held     int             // the divergence awaiting Resolve, or 0

	events chan LiveEvent
	done   chan struct{}
	once   sync.Once
}

// NewEngineSession serves e on ln. Call Close to stop.
func NewEngineSession(x *tape.Index, e *replay.Engine, ln net.Listener) *EngineSession {
	s := &EngineSession{x: x, e: e, ln: ln, now: time.Now, events: make(chan LiveEvent, 256), done: make(chan struct{})}
	go s.accept()
	return s
}

// Addr is where clients connect.
func (s *EngineSession) Addr() string { return s.ln.Addr().String() }

func (s *EngineSession) emit(ev LiveEvent) {
	select {
	case s.events <- ev:
	case <-s.done:
	}
}

func (s *EngineSession) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
			default:
				s.emit(LiveEvent{Err: fmt.Errorf("debug listener: %w", err)})
			}
			return
		}
		s.mu.Lock()
		if s.conn != nil {
			s.mu.Unlock()
			fmt.Fprintln(c, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"tapedeck debug: a client is already attached"}}`)
			c.Close()
			continue
		}
		s.conn = c
		s.mu.Unlock()
		s.emit(LiveEvent{State: "connected", Connected: true})
		s.serve(c)
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		s.emit(LiveEvent{State: "disconnected"})
	}
}

// serve reads the client's messages until it goes away.
func (s *EngineSession) serve(c net.Conn) {
	defer c.Close()
	br := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := br.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			s.mu.Lock()
			outs := s.e.Receive(line, s.now())
			evs := s.handle(outs)
			s.mu.Unlock()
			for _, ev := range evs {
				s.emit(ev)
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.emit(LiveEvent{Err: fmt.Errorf("debug client: %w", err)})
			}
			return
		}
	}
}

// handle sends or queues outputs and returns the events they raise. It is
// called with mu held.
func (s *EngineSession) handle(outs []replay.Output) []LiveEvent {
	var evs []LiveEvent
	for _, o := range outs {
		if d := o.Divergence; d != nil && d.Resolution == replay.Pending {
			s.held = d.ID
			evs = append(evs, LiveEvent{Divergence: s.convert(*d)})
		}
		if o.Msg == nil {
			continue
		}
		if o.Seq < 0 || o.Seq < s.released {
			s.write(o.Msg)
		} else {
			s.queue = append(s.queue, o)
		}
	}
	return evs
}

func (s *EngineSession) write(msg []byte) {
	if s.conn == nil {
		return
	}
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_, _ = s.conn.Write(b) // a client gone away is reported by its reader
}

// convert turns the engine's divergence into what the diff view shows.
func (s *EngineSession) convert(d replay.Divergence) *Divergence {
	out := &Divergence{Seq: d.Expected, Reason: d.Message}
	if d.Expected >= 0 {
		if e, err := s.x.Message(d.Expected); err == nil {
			out.Expected = e.Raw
		}
	}
	actual := map[string]any{"jsonrpc": "2.0", "method": d.Method}
	if len(d.RequestID) > 0 {
		actual["id"] = d.RequestID
	}
	if len(d.Params) > 0 {
		actual["params"] = d.Params
	}
	out.Actual, _ = json.Marshal(actual) // only raw messages and strings: cannot fail
	for _, op := range d.Diff {
		out.Paths = append(out.Paths, pointerPath(op.Path))
	}
	return out
}

// pointerPath turns a JSON pointer (/params/arguments/a) into a dotted path.
func pointerPath(p string) string {
	p = strings.TrimPrefix(p, "/")
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return strings.Join(parts, ".")
}

// Next blocks until the session has something to report.
func (s *EngineSession) Next() LiveEvent {
	select {
	case ev := <-s.events:
		return ev
	case <-s.done:
		return LiveEvent{State: "closed", Closed: true}
	}
}

// Deliver releases the engine's answers that replay tape messages seqs or
// earlier.
func (s *EngineSession) Deliver(seqs []int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, q := range seqs {
		s.released = max(s.released, q+1)
	}
	rest := s.queue[:0]
	for _, o := range s.queue {
		if o.Seq < s.released {
			s.write(o.Msg)
		} else {
			rest = append(rest, o)
		}
	}
	s.queue = rest
}

// Resolve answers the held divergence.
func (s *EngineSession) Resolve(r Resolution) {
	rr := map[Resolution]replay.Resolution{ResolveAnswer: replay.AnswerRecorded, ResolveError: replay.SendError, ResolveSkip: replay.SkipRecorded}[r]
	s.mu.Lock()
	id := s.held
	s.held = 0
	outs, err := s.e.Resolve(id, rr, s.now())
	var evs []LiveEvent
	if err == nil {
		evs = s.handle(outs)
	}
	s.mu.Unlock()
	if err != nil {
		s.emit(LiveEvent{Err: err})
	}
	for _, ev := range evs {
		s.emit(ev)
	}
}

// Close stops listening and drops the client.
func (s *EngineSession) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		s.mu.Unlock()
	})
	return err
}
