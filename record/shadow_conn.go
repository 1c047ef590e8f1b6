package record

// B's POSTs over plain HTTP/1.1 without net/http's client: net/http's
// Transport hands each request to a connection's writer goroutine and its
// answer back from a reader goroutine, and the shadow added a goroutine a
// request of its own (to keep B's copies in order), so one copy cost five
// or six goroutine wake-ups on a machine the client shares. Here the lane
// writes the request on an idle connection itself (in order, by
// construction) and each connection's one reader, parked in a read while
// the connection is idle, takes the answer when it comes: one wake-up a
// copy. Used for an http:// B with no ShadowOptions.Transport and no proxy
// in the environment; otherwise net/http does the requests.

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// shadowWriteWait bounds writing one request to B: a B that stops reading
// holds the lane no longer.
const shadowWriteWait = time.Second

// shadowMaxHeader bounds the headers of B's answer, as net/http's
// Transport does by default (MaxResponseHeaderBytes 0: 10 MB).
const shadowMaxHeader = 10 << 20

// shadowConns are B's connections of one httpShadow.
type shadowConns struct {
	t    *httpShadow
	addr string // host:port to dial
	host string // the Host header
	uri  string // the request target

	mu     sync.Mutex
	idle   []*shadowConn
	all    map[*shadowConn]struct{}
	closed bool
}

// shadowConn is one connection to B and the call it carries.
type shadowConn struct {
	cs   *shadowConns
	c    net.Conn
	br   *bufio.Reader
	wbuf []byte
	// readLimit bounds what br may read from c: an answer's headers
	// (1xx answers included) no more than shadowMaxHeader, as net/http's
	// Transport; owned by the reader.
	readLimit int64
	// reused: c carried a call before (B may have closed it as idle).
	reused bool

	mu   sync.Mutex
	call *shadowCall // the request written, its answer not yet read
}

// shadowCall is one POST to B.
type shadowCall struct {
	s   *shadow
	l   *shadowLane
	it  shadowItem
	msg []byte
	hm  tape.HTTPMeta // the request's side: session, protocol
	// retry: the request may be written again on a new connection if
	// writing it on an idle one fails (B closed that); never once written,
	// as net/http does not send a POST again.
	retry bool
	again bool       // written again: on a new connection
	done  chan error // not nil: the lane waits for the answer
}

// newShadowConns returns the connections for u, or nil if net/http must
// do the requests (a proxy, or not plain http).
func newShadowConns(t *httpShadow, u *url.URL) *shadowConns {
	if u.Scheme != "http" || u.User != nil {
		return nil
	}
	if p, err := http.ProxyFromEnvironment(&http.Request{URL: u}); err != nil || p != nil {
		return nil
	}
	host := u.Host
	addr := host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return &shadowConns{t: t, addr: addr, host: host, uri: u.RequestURI(), all: map[*shadowConn]struct{}{}}
}

// get returns an idle connection, or dials one (fresh: always).
func (cs *shadowConns) get(ctx context.Context, fresh bool) (*shadowConn, error) {
	cs.mu.Lock()
	if n := len(cs.idle); n > 0 && !fresh {
		c := cs.idle[n-1]
		cs.idle = cs.idle[:n-1]
		cs.mu.Unlock()
		return c, nil
	}
	cs.mu.Unlock()
	d := net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	nc, err := d.DialContext(ctx, "tcp", cs.addr)
	if err != nil {
		return nil, err
	}
	c := &shadowConn{cs: cs, c: nc}
	c.br = bufio.NewReaderSize(c, 16<<10)
	cs.mu.Lock()
	if cs.closed {
		cs.mu.Unlock()
		nc.Close()
		return nil, context.Canceled
	}
	cs.all[c] = struct{}{}
	cs.mu.Unlock()
	go c.readLoop()
	return c, nil
}

// put makes c idle again.
func (cs *shadowConns) put(c *shadowConn) {
	c.reused = true
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if !cs.closed {
		cs.idle = append(cs.idle, c)
	}
}

// drop forgets c and closes it.
func (cs *shadowConns) drop(c *shadowConn) {
	cs.mu.Lock()
	delete(cs.all, c)
	for i, x := range cs.idle {
		if x == c {
			cs.idle = append(cs.idle[:i], cs.idle[i+1:]...)
			break
		}
	}
	cs.mu.Unlock()
	c.c.Close()
}

// close closes every connection: the calls in flight end with
// context.Canceled, as net/http's requests of a cancelled context do.
func (cs *shadowConns) close() {
	cs.mu.Lock()
	cs.closed = true
	all := make([]*shadowConn, 0, len(cs.all))
	for c := range cs.all {
		all = append(all, c)
	}
	cs.idle = nil
	cs.mu.Unlock()
	for _, c := range all {
		c.c.Close()
	}
}

// post writes call's request on a connection; its answer is read by the
// connection's reader. The error is the writing's (the call is over).
func (cs *shadowConns) post(call *shadowCall) error {
	c, err := cs.get(cs.t.ctx, call.again)
	if err != nil {
		return cs.urlError(err)
	}
	c.wbuf = cs.appendRequest(c.wbuf[:0], call)
	call.retry = call.retry && c.reused
	c.mu.Lock()
	c.call = call
	c.mu.Unlock()
	c.c.SetWriteDeadline(time.Now().Add(shadowWriteWait))
	if _, err := c.c.Write(c.wbuf); err != nil {
		c.mu.Lock()
		mine := c.call == call
		c.call = nil
		c.mu.Unlock()
		cs.drop(c)
		if !mine {
			return nil // the reader took the call (B closed the connection): it ends it
		}
		if call.retry {
			call.retry, call.again = false, true
			return cs.post(call)
		}
		return cs.urlError(err)
	}
	if cap(c.wbuf) > 64<<10 {
		c.wbuf = nil
	}
	return nil
}

// isClosed says whether the shadow stopped.
func (cs *shadowConns) isClosed() bool {
	cs.mu.Lock()
	closed := cs.closed
	cs.mu.Unlock()
	return closed || cs.t.ctx.Err() != nil
}

func (cs *shadowConns) urlError(err error) error {
	if cs.isClosed() {
		err = context.Canceled
	}
	return &url.Error{Op: "Post", URL: cs.t.o.URL.String(), Err: err}
}

// appendRequest is the POST of call, as net/http writes it.
func (cs *shadowConns) appendRequest(b []byte, call *shadowCall) []byte {
	b = append(b, "POST "...)
	b = append(b, cs.uri...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, cs.host...)
	b = append(b, "\r\nUser-Agent: Go-http-client/1.1\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(call.msg)), 10)
	b = append(b, "\r\nAccept: application/json, text/event-stream\r\nContent-Type: application/json\r\n"...)
	header := func(k, v string) {
		if v != "" {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	header("Mcp-Method", call.it.mcpMethod)
	header("Mcp-Name", call.it.mcpName)
	header("Mcp-Protocol-Version", call.hm.Protocol)
	header("Mcp-Session-Id", call.hm.Session)
	b = append(b, "\r\n"...)
	return append(b, call.msg...)
}

// headerValueOK says whether v can be written as a header's value as it
// is (net/http rejects the same).
func headerValueOK(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// Read is c.c's, within readLimit.
func (c *shadowConn) Read(p []byte) (int, error) {
	if c.readLimit <= 0 {
		return 0, errHeaderLimit
	}
	if int64(len(p)) > c.readLimit {
		p = p[:c.readLimit]
	}
	n, err := c.c.Read(p)
	c.readLimit -= int64(n)
	return n, err
}

// errHeaderLimit is net/http's error for an answer's headers over its limit.
var errHeaderLimit = errors.New("net/http: server response headers exceeded " + strconv.Itoa(shadowMaxHeader) + " bytes; aborted")

// readLoop reads the answers on c, one a call, until c fails or closes.
func (c *shadowConn) readLoop() {
	for {
		c.readLimit = shadowMaxHeader
		_, err := c.br.Peek(1) // parked here while c is idle
		c.mu.Lock()
		call := c.call
		c.call = nil
		c.mu.Unlock()
		if err != nil || call == nil {
			// B closed c (idle, or as a request was written), or sent
			// what nobody asked for.
			c.cs.drop(c)
			if call != nil {
				if err == nil {
					err = errors.New("B answered before it was asked")
				}
				call.finish(c.cs.urlError(err))
			}
			return
		}
		resp, err := http.ReadResponse(c.br, nil)
		for err == nil && resp.StatusCode >= 100 && resp.StatusCode < 200 && resp.StatusCode != http.StatusSwitchingProtocols {
			resp, err = http.ReadResponse(c.br, nil) // an informational answer (103 Early Hints): the answer follows
		}
		if err != nil {
			if c.readLimit <= 0 {
				err = errHeaderLimit
			}
			c.cs.drop(c)
			// net/http's words for an answer it could not read.
			call.finish(c.cs.urlError(fmt.Errorf("net/http: HTTP/1.x transport connection broken: %w", err)))
			return
		}
		c.readLimit = math.MaxInt64
		hm := call.hm
		hm.Status = resp.StatusCode
		err = call.s.answer(call.l, resp, hm)
		if err != nil && c.cs.isClosed() {
			err = context.Canceled // the shadow stopped: as net/http's body of a cancelled request
		}
		// The answer read whole, c carries the next call. What answer
		// left of the body (one it does not read, or read in part) is
		// taken only if it is here already: net/http closes the
		// connection of a body left unread rather than wait for it.
		c.c.SetReadDeadline(time.Now())
		_, derr := io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		// Not after a 101 (the connection speaks another protocol), nor
		// with bytes B sent beyond the answer (an answer nobody asked
		// for: net/http closes such a connection).
		reuse := derr == nil && !resp.Close && resp.StatusCode != http.StatusSwitchingProtocols &&
			bodyDone(resp.Body) && c.br.Buffered() == 0
		resp.Body.Close()
		c.c.SetReadDeadline(time.Time{})
		if reuse {
			c.cs.put(c)
		} else {
			c.cs.drop(c)
		}
		call.finish(err)
		if !reuse {
			return
		}
	}
}

// bodyDone says whether body has nothing left to read.
func bodyDone(body io.Reader) bool {
	var one [1]byte
	n, err := body.Read(one[:])
	return n == 0 && err == io.EOF
}

// finish ends the call: its error noted, the lane's bookkeeping released.
func (call *shadowCall) finish(err error) {
	if call.done != nil {
		call.done <- err // the lane notes it
		return
	}
	if err != nil {
		call.s.fail(call.l, call.msg, err)
	}
	call.s.answeredByB(call.it.done)
	<-call.l.sem
	call.l.flight.Done()
	call.s.flight.Done()
}
