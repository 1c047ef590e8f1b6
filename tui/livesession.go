package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// EngineSession is a Live session: a replay.Engine (created with
// EngineOptions.Hold) serving one live client on one listener, over either
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
//
// What was meant for a stdio client that goes away (answers not delivered
// yet, divergences awaiting a choice) goes away with it: the divergences
// are resolved with the divergence error, which reaches no one, and the
// disconnect reports how many of each were dropped.
type EngineSession struct {
	x            *tape.Index
	ln           net.Listener
	now          func() time.Time
	h            *replay.HTTPHandler
	srv          *http.Server
	hl           *connListener
	writeTimeout time.Duration

	rawMu sync.Mutex
	raw   map[net.Conn]bool // connections not handed to HTTP, an attached one included: Close closes them without mu

	mu        sync.Mutex
	e         *replay.Engine   // the stdio path drives it under mu; the HTTP path through h
	transport string           // "", then the first client's: "stdio" or "http"
	conn      net.Conn         // the attached stdio client
	dead      bool             // conn stopped reading: nothing more is written to it
	httpOn    bool             // an HTTP client is connected (a message came, no DELETE since)
	released  int              // stdio: tape messages before it are delivered
	queue     []replay.Output  // stdio: waiting for their delivery
	held      []heldDivergence // the divergences awaiting Resolve, oldest first

	evMu   sync.Mutex
	events []LiveEvent
	signal chan struct{}
	done   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// heldDivergence names a divergence awaiting Resolve: the HTTP session it
// happened in ("" over stdio) and its engine's number for it.
type heldDivergence struct {
	session string
	id      int
}

// SessionOptions configure an EngineSession.
type SessionOptions struct {
	// AllowHosts lists Host header values accepted over HTTP besides
	// loopback ones, e.g. the --listen host; "*" accepts any
	// (replay.HTTPOptions.AllowHosts).
	AllowHosts []string
	// AllowOrigins lists Origin header values accepted besides loopback
	// ones (replay.HTTPOptions.AllowOrigins).
	AllowOrigins []string
	// WriteTimeout bounds a write to an attached stdio client; 0 means
	// DefaultWriteTimeout. A client that does not read for that long is
	// dropped as disconnected.
	WriteTimeout time.Duration
}

// DefaultWriteTimeout is how long an attached stdio client may leave the
// session's answers unread before it is dropped.
const DefaultWriteTimeout = 5 * time.Second

// NewEngineSession serves e on ln, over stdio lines and Streamable HTTP.
// Call Close to stop.
func NewEngineSession(x *tape.Index, e *replay.Engine, ln net.Listener, o SessionOptions) *EngineSession {
	s := &EngineSession{
		x: x, e: e, ln: ln, now: time.Now,
		writeTimeout: o.WriteTimeout,
		raw:          map[net.Conn]bool{},
		signal:       make(chan struct{}, 1),
		done:         make(chan struct{}),
		hl:           &connListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})},
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = DefaultWriteTimeout
	}
	s.h = replay.NewHTTPHandler(e, replay.HTTPOptions{
		Gated:        true,
		Admit:        s.admit,
		OnProgress:   s.httpProgressed,
		OnDivergence: s.httpDivergence,
		AllowHosts:   o.AllowHosts,
		AllowOrigins: o.AllowOrigins,
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
// A listener on an unspecified address (0.0.0.0, [::]) is named by the
// loopback address, which clients can dial and the Host check accepts.
func (s *EngineSession) Addr() string {
	a, ok := s.ln.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsUnspecified() {
		return s.ln.Addr().String()
	}
	// Go serves both families on an unspecified address (it reports
	// 0.0.0.0 as [::]), so IPv4's loopback reaches it.
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
}

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
		s.rawMu.Lock()
		select {
		case <-s.done: // Close has closed the others already
			s.rawMu.Unlock()
			c.Close()
			return
		default:
		}
		s.raw[c] = true
		s.rawMu.Unlock()
		s.wg.Add(1)
		go func() { defer s.wg.Done(); s.route(c) }()
	}
}

// route tells the transports apart by the first byte: an HTTP request
// starts with its method (GET, POST, DELETE), a JSON-RPC line with { or [.
func (s *EngineSession) route(c net.Conn) {
	forget := func() {
		s.rawMu.Lock()
		delete(s.raw, c)
		s.rawMu.Unlock()
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
	s.transport, s.conn, s.dead = "stdio", c, false
	s.mu.Unlock()
	s.emit(LiveEvent{Kind: LiveConnected, Transport: "stdio"})
	defer func() {
		s.mu.Lock()
		answers, divs := s.dropClient()
		s.conn = nil
		s.mu.Unlock()
		s.emit(LiveEvent{Kind: LiveDisconnected, Dropped: answers, Abandoned: divs})
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

// dropClient forgets what was meant for the stdio client going away, so
// that none of it reaches the next one: its held divergences are resolved
// with the divergence error (written to no one) and its undelivered answers
// dropped. It returns how many of each; mu is held.
func (s *EngineSession) dropClient() (answers, divergences int) {
	s.dead = true // what the resolutions yield goes nowhere
	held := s.held
	s.held = nil
	for _, h := range held {
		outs, err := s.e.Resolve(h.id, replay.SendError, s.now())
		if err != nil {
			continue
		}
		divergences++
		s.handle(outs)
	}
	if divergences > 0 {
		s.progressed(s.e.Progress())
	}
	answers = len(s.queue)
	clear(s.queue)
	s.queue = s.queue[:0]
	return answers, divergences
}

// handle sends or queues the stdio path's outputs; mu is held.
func (s *EngineSession) handle(outs []replay.Output) {
	for _, o := range outs {
		if d := o.Divergence; d != nil && d.Resolution == replay.Pending {
			s.held = append(s.held, heldDivergence{id: d.ID})
			s.emit(LiveEvent{Kind: LiveDiverged, Divergence: s.convert(*d)})
		}
		if o.Msg == nil {
			continue
		}
		if (o.Seq < 0 || o.Seq < s.released) && s.write(o.Msg) {
			continue
		}
		if o.Seq >= 0 {
			s.queue = append(s.queue, o) // counted as dropped if its client goes away first
		}
	}
}

// write sends msg to the attached stdio client, within the write timeout:
// a client that does not read is closed (its reader then reports the
// disconnect), so that mu is never held for long. It reports whether msg
// was written; mu is held.
func (s *EngineSession) write(msg []byte) bool {
	if s.conn == nil || s.dead {
		return false
	}
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	if _, err := s.conn.Write(b); err != nil {
		s.dead = true
		s.conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.emit(LiveEvent{Kind: LiveFailed, Err: fmt.Errorf("debug client: it read nothing for %v: dropped as disconnected", s.writeTimeout)})
		}
		return false
	}
	return true
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
	s.httpSeen()
	s.mu.Lock()
	s.held = append(s.held, heldDivergence{session: d.Session, id: d.ID})
	s.mu.Unlock()
	s.emit(LiveEvent{Kind: LiveDiverged, Divergence: s.convert(d)})
}

// httpProgressed reports the progress an HTTP client's message made; the
// first one connects the client. It runs with the handler's lock held.
func (s *EngineSession) httpProgressed(reached, awaiting int) {
	s.httpSeen()
	s.progressed(reached, awaiting)
}

// httpSeen reports an HTTP client connected when its first message reached
// the engine (after the handler accepted its request).
func (s *EngineSession) httpSeen() {
	s.mu.Lock()
	connect := !s.httpOn
	s.httpOn = true
	s.mu.Unlock()
	if connect {
		s.emit(LiveEvent{Kind: LiveConnected, Transport: "http"})
	}
}

// admit claims the session for HTTP when the handler accepts a request
// (a request it refuses, from a port scan or a rebinding page, claims
// nothing), unless a stdio client has it.
func (s *EngineSession) admit(*http.Request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.transport == "stdio" {
		return errors.New("tapedeck debug: this session serves a client attached over stdio (tapedeck attach); one kind of client a session")
	}
	s.transport = "http"
	return nil
}

// serveHTTP hands a request to the replay HTTP handler; a DELETE that ends
// the client's session disconnects it.
func (s *EngineSession) serveHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodDelete {
		s.h.ServeHTTP(w, r)
		return
	}
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	s.h.ServeHTTP(sw, r)
	if sw.status < 300 {
		s.mu.Lock()
		was := s.httpOn
		s.httpOn = false
		s.mu.Unlock()
		if was {
			s.emit(LiveEvent{Kind: LiveDisconnected})
		}
	}
}

// convert turns the engine's divergence into what the diff view shows.
func (s *EngineSession) convert(d replay.Divergence) *Divergence {
	out := &Divergence{Seq: d.Expected, Reason: d.Message, Session: d.Session, ID: d.ID}
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
		if o.Seq < s.released && s.write(o.Msg) {
			continue
		}
		rest = append(rest, o) // not due, or its client stopped reading: dropped when it goes
	}
	clear(s.queue[len(rest):])
	s.queue = rest
	s.mu.Unlock()
	s.h.Release(upTo)
}

// Resolve answers divergence d, as the session reported it: over HTTP,
// the one of d's session (each session numbers its divergences from 1).
func (s *EngineSession) Resolve(d *Divergence, r Resolution) {
	rr := map[Resolution]replay.Resolution{ResolveAnswer: replay.AnswerRecorded, ResolveError: replay.SendError, ResolveSkip: replay.SkipRecorded}[r]
	key := heldDivergence{session: d.Session, id: d.ID}
	s.mu.Lock()
	i := slices.Index(s.held, key)
	if i < 0 {
		s.mu.Unlock()
		s.emit(LiveEvent{Kind: LiveFailed, Err: fmt.Errorf("the divergence at #%d no longer awaits a choice: its client went away", d.Seq)})
		return
	}
	s.held = slices.Delete(s.held, i, i+1)
	id := key.id
	if s.transport == "http" {
		s.mu.Unlock()
		if err := s.h.Resolve(key.session, id, rr); err != nil {
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
		// Closing the connections first, without mu, ends a write to a
		// client that does not read, which holds mu.
		s.rawMu.Lock()
		for c := range s.raw {
			c.Close()
		}
		s.rawMu.Unlock()
		s.h.Close()
		s.srv.Close()
		s.hl.Close()
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
