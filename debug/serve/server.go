// Package serve is the server side of "tapedeck debug": a replay.Engine
// serving one live client over the network while a debugger decides when
// the engine's answers go out (Deliver) and how each divergence is
// answered (Resolve). The debugger talks to it only through Next, Deliver,
// Resolve and Close, as delve's terminal talks to its service, so the TUI
// holds no network code.
//
// # Design
//
// A Server listens on one address and tells the transports apart by a
// connection's first byte (server.go):
//
//   - newline-delimited JSON-RPC, what "tapedeck attach" relays from a
//     client's stdio (stdio.go; one attached client at a time);
//   - MCP Streamable HTTP at /mcp, served by replay.HTTPHandler (http.go;
//     an HTTP request starts with its method, in capitals).
//
// The first client's transport serves the whole session: the engine's
// place on the tape belongs to one client, so the other transport is
// refused with a message saying why.
//
// The engine (created with replay.EngineOptions.Hold) has its answers held
// until the debugger's playback delivers the tape messages they replay (a
// replay.Gate on either path), so a breakpoint holds them; messages the
// engine makes itself (divergence errors) go at once. A divergence waits
// for Resolve. After each client message the server reports how far the
// client has brought the tape (Progress), which playback follows.
//
// What was meant for a stdio client that goes away (answers not delivered
// yet, divergences awaiting a choice) goes away with it: the divergences
// are resolved with the divergence error, which reaches no one, and the
// disconnect reports how many of each were dropped.
//
// Locks: evMu guards only the event queue and is taken last; mu guards the
// client and the stdio path's engine; rawMu the connections not handed to
// HTTP, so Close can close them without waiting for mu. The HTTP handler
// calls the server's hooks after releasing its own lock, so no order
// between the two packages' locks needs keeping.
package serve

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// Server is a live debug session: one engine, one listener, one client at
// a time. Read its events with Next; a debugger implements its breakpoints
// with Deliver and answers divergences with Resolve.
type Server struct {
	x            *tape.Index
	opts         replay.EngineOptions // each run's engines are made with them
	ln           net.Listener
	now          func() time.Time
	srv          *http.Server
	hl           *connListener
	writeTimeout time.Duration
	probeTimeout time.Duration
	runIdle      time.Duration
	allowHosts   []string
	allowOrigins []string
	tapeInits    int   // the recorded sessions (initialize requests) of the tape's server
	sessionEnds  []int // HTTP: where the tape waits once recorded session k+1 is done (sessionEnds[k]: recorded session k+2's first client message)

	hmu sync.Mutex
	h   *replay.HTTPHandler // the run's; replaced when a run ends

	rawMu sync.Mutex
	raw   map[net.Conn]bool // connections not handed to HTTP, an attached one included: Close closes them without mu

	mu        sync.Mutex
	e         *replay.Engine             // the stdio path drives it under mu; the HTTP path through h
	transport string                     // "", then the first client's: "stdio" or "http"
	conn      net.Conn                   // the attached stdio client
	dead      bool                       // conn stopped reading: nothing more is written to it
	httpOn    bool                       // an HTTP client is connected (a message came, no DELETE since)
	gate      replay.Gate[replay.Output] // stdio: answers waiting for their delivery
	held      []heldDivergence           // the divergences awaiting Resolve, oldest first

	// Runs (run.go).
	run        int               // the current or last run's number, from 1
	runOn      bool              // a run is under way
	runs       []debug.RunReport // the runs that ended
	inits      int               // HTTP: initializes the run served
	announced  int               // HTTP: the client sessions of the run reported Connected
	inflight   int               // HTTP: requests being served, GET streams aside
	idle       *time.Timer       // HTTP: ends a run quiet after the tape's end or a recorded session's
	awaiting   int               // HTTP: where the run's latest progress left the tape waiting
	restarting bool              // stdio: Restart closed the client

	evMu     sync.Mutex
	events   []debug.Event
	signal   chan struct{}
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup
	fallback func() Fallthrough
	ft       Fallthrough // the stdio client's, while one is attached (mu)
	rules    *rules.Set
}

// heldDivergence names a divergence awaiting Resolve: the HTTP session it
// happened in ("" over stdio) and its engine's number for it.
type heldDivergence struct {
	session string
	id      int
}

// Options configure a Server.
type Options struct {
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
	// ProbeTimeout is how long a new connection may take to send its first
	// byte that is not white space before it is closed, claiming nothing
	// (a port probe, a health check); 0 means DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// RunIdle is how long an HTTP client may stay quiet after the tape's
	// last recorded client message before its run ends; 0 means
	// DefaultRunIdle.
	RunIdle time.Duration
	// Fallback, if set, makes for each attached stdio client what answers
	// what the tape cannot from a live server (upstream.Fallthrough),
	// instead of holding the divergence.
	Fallback func() Fallthrough
	// Rules, if set, fault an attached stdio client's session as replay
	// --rules does (replay.RuleEdge); what they did is told as Notes. A
	// delay is not applied: playback times the answers here.
	Rules *rules.Set
}

// Fallthrough answers from a live server the requests the tape lacks,
// for one attached stdio client: upstream.Fallthrough, as a serving
// edge's hooks (replay.StdioOptions.Peek and Miss).
type Fallthrough interface {
	Peek(line []byte) bool
	Miss(req []byte, d *replay.Divergence, client func(msgs ...[]byte) error) bool
	Fell() []replay.FellThrough
	Close() error // the first error writing the tape
}

// DefaultProbeTimeout is Options.ProbeTimeout's default.
const DefaultProbeTimeout = 10 * time.Second

// DefaultWriteTimeout is how long an attached stdio client may leave the
// server's answers unread before it is dropped.
const DefaultWriteTimeout = 5 * time.Second

// Listen listens on addr (HOST:PORT; port 0 picks one) and serves e there
// (NewServer).
func Listen(x *tape.Index, e *replay.Engine, addr string, o Options) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("debug --listen %s: %w", addr, err)
	}
	s, err := NewServer(x, e, ln, o)
	if err != nil {
		ln.Close()
		return nil, err
	}
	return s, nil
}

// NewServer serves e, an engine created with replay.EngineOptions.Hold
// over the tape x, on ln, over stdio lines and Streamable HTTP. Call Close
// to stop.
func NewServer(x *tape.Index, e *replay.Engine, ln net.Listener, o Options) (*Server, error) {
	s := &Server{
		x: x, e: e, opts: e.Options(), ln: ln, now: time.Now,
		writeTimeout: o.WriteTimeout, probeTimeout: o.ProbeTimeout, runIdle: o.RunIdle,
		allowHosts: o.AllowHosts, allowOrigins: o.AllowOrigins, fallback: o.Fallback, rules: o.Rules,
		raw:    map[net.Conn]bool{},
		signal: make(chan struct{}, 1),
		done:   make(chan struct{}),
		hl:     &connListener{addr: ln.Addr(), conns: make(chan net.Conn), done: make(chan struct{})},
	}
	if s.writeTimeout <= 0 {
		s.writeTimeout = DefaultWriteTimeout
	}
	if s.probeTimeout <= 0 {
		s.probeTimeout = DefaultProbeTimeout
	}
	if s.runIdle <= 0 {
		s.runIdle = DefaultRunIdle
	}
	s.tapeInits = tapeInitializes(x, s.opts.Server)
	// HTTP clients are served by the handler's own engines (one a recorded
	// session); e serves an attached stdio client.
	h, err := s.newHandler()
	if err != nil {
		return nil, err
	}
	s.h = h
	s.sessionEnds = sessionEnds(x, s.opts.Server, h.Sessions())
	s.srv = &http.Server{Handler: http.HandlerFunc(s.serveHTTP), ReadHeaderTimeout: 10 * time.Second}
	reached, awaiting := e.Progress()
	s.emit(debug.Event{Kind: debug.Progress, Reached: reached, Awaiting: awaiting})
	s.wg.Add(2)
	go func() { defer s.wg.Done(); s.accept() }()
	go func() { defer s.wg.Done(); _ = s.srv.Serve(s.hl) }()
	return s, nil
}

// Addr is where clients connect: "tapedeck attach ADDR" or http://ADDR/mcp.
// A listener on an unspecified address (0.0.0.0, [::]) is named by the
// loopback address, which clients can dial and the Host check accepts.
func (s *Server) Addr() string {
	a, ok := s.ln.Addr().(*net.TCPAddr)
	if !ok || !a.IP.IsUnspecified() {
		return s.ln.Addr().String()
	}
	// Go serves both families on an unspecified address (it reports
	// 0.0.0.0 as [::]), so IPv4's loopback reaches it.
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(a.Port))
}

// URL is the Streamable HTTP endpoint.
func (s *Server) URL() string { return "http://" + s.Addr() + "/mcp" }

// emit queues ev for Next; it never blocks, so any path can call it.
func (s *Server) emit(ev debug.Event) {
	s.evMu.Lock()
	s.events = append(s.events, ev)
	s.evMu.Unlock()
	select {
	case s.signal <- struct{}{}:
	default:
	}
}

// Next blocks until the server has something to report; after Close it
// reports Closed.
func (s *Server) Next() debug.Event {
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
			return debug.Event{Kind: debug.Closed}
		}
	}
}

func (s *Server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			select {
			case <-s.done:
			default:
				s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("debug listener: %w", err)})
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

// route tells the transports apart by the first byte that is not white
// space: an HTTP request starts with its method (GET, POST, DELETE), a
// JSON-RPC line with { or [. A connection that sends neither within the
// probe timeout (a port probe, a health check sending a newline) is closed
// and claims nothing.
func (s *Server) route(c net.Conn) {
	forget := func() {
		s.rawMu.Lock()
		delete(s.raw, c)
		s.rawMu.Unlock()
	}
	br := bufio.NewReaderSize(c, 64<<10)
	_ = c.SetReadDeadline(time.Now().Add(s.probeTimeout))
	var first byte
	for {
		b, err := br.Peek(1)
		if err != nil {
			forget()
			c.Close()
			return
		}
		if b[0] != ' ' && b[0] != '\t' && b[0] != '\r' && b[0] != '\n' {
			first = b[0]
			break
		}
		_, _ = br.Discard(1)
	}
	_ = c.SetReadDeadline(time.Time{})
	if !(first >= 'A' && first <= 'Z') && first != '{' && first != '[' {
		forget()
		c.Close() // not MCP: claims nothing
		return
	}
	pc := &peekedConn{Conn: c, r: br}
	if first >= 'A' && first <= 'Z' {
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

// progressed reports the engine's progress. The stdio path calls it with
// mu held: it takes no lock but evMu.
func (s *Server) progressed(reached, awaiting int) {
	s.emit(debug.Event{Kind: debug.Progress, Reached: reached, Awaiting: awaiting})
}

// divergence turns the engine's divergence into the one reported.
func (s *Server) divergence(d replay.Divergence) *debug.LiveDivergence {
	return debug.NewLiveDivergence(d, s.x)
}

// Deliver releases the engine's answers that replay tape messages seqs or
// earlier, in client run run (Event.RunNo; 0 for the run under way). A
// delivery meant for a run that has ended is dropped: it must not release
// the next run's answers past its breakpoints.
func (s *Server) Deliver(run int, seqs []int) {
	upTo := 0
	for _, q := range seqs {
		upTo = max(upTo, q+1)
	}
	s.mu.Lock()
	if run > 0 && (run != s.run || !s.runOn) {
		s.mu.Unlock()
		return
	}
	for _, o := range s.gate.Release(upTo) {
		if !s.write(o.Msg) {
			s.gate.Hold(o.Seq, o) // its client stopped reading: dropped when it goes
		}
	}
	s.mu.Unlock()
	s.handler().Release(upTo)
}

// Resolve answers divergence d, as the server reported it, with r:
// replay.AnswerRecorded, replay.SendError or replay.SkipRecorded. Over
// HTTP, d names the divergence of d's session (each session numbers its
// divergences from 1). A failure is reported as a Failed event.
func (s *Server) Resolve(d *debug.LiveDivergence, r replay.Resolution) {
	if r != replay.AnswerRecorded && r != replay.SendError && r != replay.SendErrorKeep && r != replay.SkipRecorded {
		s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("the divergence at #%d: expected a resolution of recorded, error, error-keep or skip, got %s", d.Expected, r)})
		return
	}
	key := heldDivergence{session: d.Session, id: d.ID}
	s.mu.Lock()
	i := slices.Index(s.held, key)
	if i < 0 {
		s.mu.Unlock()
		s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("the divergence at #%d no longer awaits a choice: its client went away", d.Expected)})
		return
	}
	s.held = slices.Delete(s.held, i, i+1)
	if s.transport == "http" {
		s.mu.Unlock()
		if err := s.handler().Resolve(key.session, key.id, r); err != nil {
			s.emit(debug.Event{Kind: debug.Failed, Err: err})
		}
		return
	}
	outs, err := s.e.Resolve(key.id, r, s.now())
	if err == nil {
		s.handle(outs)
		s.progressed(s.e.Progress())
	}
	s.mu.Unlock()
	if err != nil {
		s.emit(debug.Event{Kind: debug.Failed, Err: err})
	}
}

// Close stops listening, drops the client and waits for the server's
// goroutines.
func (s *Server) Close() error {
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
		s.mu.Lock()
		after := s.endRun("the debugger closed the session")
		s.mu.Unlock()
		after()
		s.handler().Close()
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
