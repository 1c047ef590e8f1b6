package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// EngineSession is a Live session: a replay.Engine (created with
// Options.Hold) serving one live client on one listener, over either
// transport, told apart by the connection's first byte:
//
//   - newline-delimited JSON-RPC, what "tapedeck attach" relays from a
//     client's stdio (one attached client at a time);
//   - MCP Streamable HTTP at /mcp, served by replay.HTTPHandler (an HTTP
//     request starts with its method, in capitals).
//
// The first client's transport serves the whole session: the engine's
// place on the tape belongs to one client, so the other transport is
// refused with a message saying why.
//
// The engine's answers are held until the debugger's playback delivers the
// tape messages they replay (Deliver), so a breakpoint holds them; messages
// the engine makes itself (divergence errors) go at once. A divergence waits
// for Resolve. After each client message the session reports how far the
// client has brought the tape (LiveProgress), which playback follows.
type EngineSession struct {
	x   *tape.Index
	ln  net.Listener
	now func() time.Time
	h   *replay.HTTPHandler
	srv *http.Server
	hl  *connListener

	mu        sync.Mutex
	e         *replay.Engine // the stdio path drives it under mu; the HTTP path through h
	transport string         // "", then the first client's: "stdio" or "http"
	conn      net.Conn       // the attached stdio client
	httpOn    bool           // an HTTP client is connected (a POST came, no DELETE since)
	raw       map[net.Conn]bool
	released  int             // stdio: tape messages before it are delivered
	queue     []replay.Output // stdio: waiting for their delivery
	held      []int           // the divergences awaiting Resolve, oldest first

	evMu   sync.Mutex
	events []LiveEvent
	signal chan struct{}
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// NewEngineSession serves e on ln, over stdio lines and Streamable HTTP.
// Call Close to stop.
func NewEngineSession(x *tape.Index, e *replay.Engine, ln net.Listener) *EngineSession {
	s := &EngineSession{
		x: x, e: e, ln: ln, now: time.Now,
		raw:    map[net.Conn]bool{},
		signal: make(chan struct{}, 1),
		done:   make(chan struct{}),
		hl:     &connListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})},
	}
	s.h = replay.NewHTTPHandler(e, replay.HTTPOptions{
		Gated:        true,
		OnProgress:   s.progressed,
		OnDivergence: s.httpDivergence,
	})
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	reached, awaiting := e.Progress()
	s.emit(LiveEvent{Kind: LiveProgress, Reached: reached, Awaiting: awaiting})
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.accept() }()
	go func() { defer s.wg.Done(); _ = s.srv.Serve(s.hl) }()
	return s
}

// Addr is where clients connect: "tapedeck attach ADDR" or http://ADDR/mcp.
func (s *EngineSession) Addr() string { return s.ln.Addr().String() }

// URL is the Streamable HTTP endpoint.
func (s *EngineSession) URL() string { return "http://" + s.Addr() + "/mcp" }

// emit queues ev for Next; it never blocks, so the HTTP handler's hooks can
// call it with the handler's lock held.
func (s *EngineSession) emit(ev LiveEvent) {
	s.evMu.Lock()
	s.events = append(s.events, ev)
	s.evMu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Next blocks until the session has something to report.
func (s *EngineSession) Next() LiveEvent {
	for {
		s.evMu.Lock()
		if len(s.events) > 0 {
			ev := s.events[0]
			s.events = s.events[1:]
			s.evMu.Unlock()
			return ev
		}
		s.evMu.Unlock()
		select {
		case <-s.signal:
		case <-s.done:
			return LiveEvent{Kind: LiveClosed}
		}
	}
}

func (s *EngineSession) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
			default:
				s.emit(LiveEvent{Kind: LiveFailed, Err: fmt.Errorf("debug listener: %w", err)})
			}
			return
		}
		s.mu.Lock()
		s.raw[c] = true
		s.mu.Unlock()
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.route(c) }()
	}
}

// route tells the transports apart by the first byte: an HTTP request
// starts with its method (GET, POST, DELETE), a JSON-RPC line with { or [.
func (s *EngineSession) route(c net.Conn) {
	forget := func() {
		s.mu.Lock()
		delete(s.raw, c)
		s.mu.Unlock()
	}
	br := bufio.NewReaderSize(c, 64<<10)
	b, err := br.Peek(1)
	if err != nil {
		forget()
		c.Close()
		return
	}
	pc := &peekedConn{Conn: c, r: br}
	if b[0] >= 'A' && b[0] <= 'Z' {
		forget() // the HTTP server owns it now
		select {
		case s.hl.conns <- pc:
		case <-s.hl.done:
			c.Close()
		}
		return
	}
	defer forget()
	s.serveStdio(pc)
}

// serveStdio serves an attached client until it goes away.
func (s *EngineSession) serveStdio(c *peekedConn) {
	defer c.Close()
	s.mu.Lock()
	refuse := ""
	switch {
	case s.transport == "http":
		refuse = "tapedeck debug: this session serves an HTTP client; one kind of client a session"
	case s.conn != nil:
		refuse = "tapedeck debug: a client is already attached"
	}
	if refuse != "" {
		s.mu.Unlock()
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":%q}}`+"\n", refuse)
		return
	}
	s.transport, s.conn = "stdio", c
	s.mu.Unlock()
	s.emit(LiveEvent{Kind: LiveConnected, Transport: "stdio"})
	defer func() {
		s.mu.Lock()
		s.conn = nil
		s.mu.Unlock()
		s.emit(LiveEvent{Kind: LiveDisconnected})
	}()
	for {
		line, err := c.r.ReadBytes('\n')
		if len(strings.TrimSpace(string(line))) > 0 {
			s.mu.Lock()
			s.handle(s.e.Receive(line, s.now()))
			s.progressed(s.e.Progress())
			s.mu.Unlock()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
				s.emit(LiveEvent{Kind: LiveFailed, Err: fmt.Errorf("debug client: %w", err)})
			}
			return
		}
	}
}

// handle sends or queues the stdio path's outputs; mu is held.
func (s *EngineSession) handle(outs []replay.Output) {
	for _, o := range outs {
		if d := o.Divergence; d != nil && d.Resolution == replay.Pending {
			s.held = append(s.held, d.ID)
			s.emit(LiveEvent{Kind: LiveDiverged, Divergence: s.convert(*d)})
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
}

func (s *EngineSession) write(msg []byte) {
	if s.conn == nil {
		return
	}
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_, _ = s.conn.Write(b) // a client gone away is reported by its reader
}

// progressed reports the engine's progress. The HTTP handler calls it with
// its lock held, the stdio path with mu held: it takes neither.
func (s *EngineSession) progressed(reached, awaiting int) {
	s.emit(LiveEvent{Kind: LiveProgress, Reached: reached, Awaiting: awaiting})
}

// httpDivergence takes the HTTP handler's divergences; only held ones
// (pending) stop the debugger. It runs with the handler's lock held, which
// is only ever taken before mu.
func (s *EngineSession) httpDivergence(d replay.Divergence) {
	if d.Resolution != replay.Pending {
		return
	}
	s.mu.Lock()
	s.held = append(s.held, d.ID)
	s.mu.Unlock()
	s.emit(LiveEvent{Kind: LiveDiverged, Divergence: s.convert(d)})
}

// serveHTTP hands a request to the replay HTTP handler, after claiming the
// session for HTTP; a POST connects the client, a DELETE that ends its
// session disconnects it.
func (s *EngineSession) serveHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	if s.transport == "stdio" {
		s.mu.Unlock()
		http.Error(w, "tapedeck debug: this session serves a client attached over stdio (tapedeck attach); one kind of client a session", http.StatusConflict)
		return
	}
	s.transport = "http"
	connect := r.Method == http.MethodPost && !s.httpOn
	s.httpOn = s.httpOn || r.Method == http.MethodPost
	s.mu.Unlock()
	if connect {
		s.emit(LiveEvent{Kind: LiveConnected, Transport: "http"})
	}
	if r.Method != http.MethodDelete {
		s.h.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.h.ServeHTTP(sw, r)
	if sw.status < 300 {
		s.mu.Lock()
		s.httpOn = false
		s.mu.Unlock()
		s.emit(LiveEvent{Kind: LiveDisconnected})
	}
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

// Deliver releases the engine's answers that replay tape messages seqs or
// earlier.
func (s *EngineSession) Deliver(seqs []int) {
	upTo := 0
	for _, q := range seqs {
		upTo = max(upTo, q+1)
	}
	s.mu.Lock()
	s.released = max(s.released, upTo)
	rest := s.queue[:0]
	for _, o := range s.queue {
		if o.Seq < s.released {
			s.write(o.Msg)
		} else {
			rest = append(rest, o)
		}
	}
	s.queue = rest
	s.mu.Unlock()
	s.h.Release(upTo)
}

// Resolve answers the oldest held divergence: the debugger shows them one
// at a time, in the order they happened.
func (s *EngineSession) Resolve(r Resolution) {
	rr := map[Resolution]replay.Resolution{ResolveAnswer: replay.AnswerRecorded, ResolveError: replay.SendError, ResolveSkip: replay.SkipRecorded}[r]
	s.mu.Lock()
	if len(s.held) == 0 {
		s.mu.Unlock()
		s.emit(LiveEvent{Kind: LiveFailed, Err: errors.New("no divergence awaits a choice")})
		return
	}
	id := s.held[0]
	s.held = s.held[1:]
	if s.transport == "http" {
		s.mu.Unlock()
		if err := s.h.Resolve(id, rr); err != nil {
			s.emit(LiveEvent{Kind: LiveFailed, Err: err})
		}
		return
	}
	outs, err := s.e.Resolve(id, rr, s.now())
	if err == nil {
		s.handle(outs)
		s.progressed(s.e.Progress())
	}
	s.mu.Unlock()
	if err != nil {
		s.emit(LiveEvent{Kind: LiveFailed, Err: err})
	}
}

// Close stops listening, drops the client and waits for the session's
// goroutines.
func (s *EngineSession) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ln.Close()
		s.h.Close()
		s.srv.Close()
		s.hl.Close()
		s.mu.Lock()
		if s.conn != nil {
			s.conn.Close()
		}
		for c := range s.raw {
			c.Close()
		}
		s.mu.Unlock()
		s.wg.Wait()
	})
	return err
}

// peekedConn is a connection whose first bytes were read to tell the
// transports apart: reads go through the buffer that holds them.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// connListener hands the connections routed to HTTP to the http.Server.
type connListener struct {
	addr  net.Addr
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *connListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *connListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *connListener) Addr() net.Addr { return l.addr }

// statusWriter remembers the status a handler wrote.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	w.status = code
	w.ResponseWriter.WriteHeader(code)
}
