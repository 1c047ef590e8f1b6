package record

// B, the shadow server: a process on pipes (stdioShadow, one lane) or a
// Streamable HTTP endpoint (httpShadow, a session a lane).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/proc"
	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// stdioShadow is B as a process on pipes, one lane.
type stdioShadow struct {
	o    ShadowOptions
	p    *proc.Process
	mu   sync.Mutex
	done chan struct{}
}

func (t *stdioShadow) describe() map[string]any {
	return map[string]any{"transport": "stdio", "command": t.o.Command, "args": t.o.Args}
}

func (t *stdioShadow) start(s *shadow) error {
	stderr := t.o.Stderr
	if stderr == nil {
		stderr = io.Discard
	}
	p, err := proc.Start(proc.Spec{Command: t.o.Command, Args: t.o.Args, Stderr: stderr})
	if err != nil {
		return err
	}
	t.p, t.done = p, make(chan struct{})
	// The one lane: B's process.
	l := s.lane(shadowItem{}, false)
	go func() {
		defer close(t.done)
		_ = jsonrpc.ReadLines(p.Stdout, jsonrpc.MaxLine, func(line []byte) error {
			s.fromB(l, line, tape.HTTPMeta{})
			return nil
		}, func() error { return nil })
		err := p.WaitErr()
		why := "B exited"
		if err != nil {
			why = "B exited: " + err.Error()
		}
		s.ended(why)
	}()
	return nil
}

func (t *stdioShadow) send(_ *shadow, _ *shadowLane, _ shadowItem, msg []byte, _ bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	_, err := t.p.Stdin.Write(append(bytes.Clone(msg), '\n'))
	return err
}

// end does nothing: over stdio B's one session ends with its process.
func (t *stdioShadow) end(*shadow, *shadowLane) {}

func (t *stdioShadow) stop() {
	if t.p == nil {
		return
	}
	t.mu.Lock()
	t.p.CloseStdin()
	t.mu.Unlock()
	select {
	case <-t.done:
		return
	case <-time.After(500 * time.Millisecond):
	}
	t.p.Stop(0, 0)
	<-t.done
}

// httpShadow is B at a Streamable HTTP endpoint, a session a lane.
type httpShadow struct {
	o      ShadowOptions
	client *http.Client
	conns  *shadowConns // nil: client does the POSTs
	ctx    context.Context
	cancel context.CancelFunc
}

func newHTTPShadow(o ShadowOptions) *httpShadow {
	tr := o.Transport
	if tr == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.DisableCompression = true
		t.MaxIdleConnsPerHost = shadowInFlight
		tr = t
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &httpShadow{o: o, client: &http.Client{Transport: tr}, ctx: ctx, cancel: cancel}
	if o.Transport == nil {
		t.conns = newShadowConns(t, o.URL)
	}
	return t
}

func (t *httpShadow) describe() map[string]any {
	return map[string]any{"transport": "http", "upstream": SafeURL(t.o.URL)}
}

func (t *httpShadow) start(*shadow) error { return nil }

func (t *httpShadow) stop() {
	t.cancel()
	if t.o.Transport == nil {
		t.client.CloseIdleConnections() // its own, or they linger IdleConnTimeout
	}
	if t.conns != nil {
		t.conns.close()
	}
}

func (t *httpShadow) send(s *shadow, l *shadowLane, it shadowItem, msg []byte, wait bool) error {
	if t.conns != nil {
		return t.sendConn(s, l, it, msg, wait)
	}
	if wait {
		return t.post(s, l, it, msg)
	}
	select {
	case l.sem <- struct{}{}:
	default:
		return errors.New("too many requests to B in flight (B slower than the client)")
	}
	// Each request goes on a connection of its own, concurrently: wait
	// until the one before was written, else a notification sent just
	// after a request (a copy released when A answered, see shadowQueue)
	// can reach B first. The wait is bounded: a B that stops reading
	// holds the lane no longer than wireOrderWait.
	if prev := l.wrote; prev != nil {
		select {
		case <-prev:
		case <-time.After(wireOrderWait):
		case <-t.ctx.Done():
		}
	}
	wrote := make(chan struct{})
	l.wrote = wrote
	s.flight.Add(1)
	l.flight.Add(1)
	go func() {
		defer s.flight.Done()
		defer l.flight.Done()
		defer func() { <-l.sem }()
		defer s.answeredByB(it.done)
		var once sync.Once
		done := func() { once.Do(func() { close(wrote) }) }
		defer done()
		ctx := httptrace.WithClientTrace(t.ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { done() }})
		if err := t.postCtx(ctx, s, l, it, msg); err != nil {
			s.fail(l, msg, err)
		}
	}()
	return nil
}

// sendConn is send on B's connections of shadow_conn.go: the request
// written by the lane, in order, its answer read by the connection's
// reader.
func (t *httpShadow) sendConn(s *shadow, l *shadowLane, it shadowItem, msg []byte, wait bool) error {
	proto := it.protocol
	if proto == "" {
		proto = l.proto()
	}
	call := &shadowCall{s: s, l: l, it: it, msg: msg, retry: true,
		hm: tape.HTTPMeta{HTTP: true, Method: http.MethodPost, Session: l.bSession(), Protocol: proto}}
	for _, h := range [...][2]string{{"Mcp-Method", it.mcpMethod}, {"Mcp-Name", it.mcpName}, {"Mcp-Protocol-Version", proto}, {"Mcp-Session-Id", call.hm.Session}} {
		if !headerValueOK(h[1]) {
			return fmt.Errorf("Post %q: net/http: invalid header field value for %q", t.o.URL.String(), h[0])
		}
	}
	if wait {
		call.done = make(chan error, 1)
		if err := t.conns.post(call); err != nil {
			return err
		}
		return <-call.done
	}
	select {
	case l.sem <- struct{}{}:
	default:
		return errors.New("too many requests to B in flight (B slower than the client)")
	}
	s.flight.Add(1)
	l.flight.Add(1)
	if err := t.conns.post(call); err != nil {
		call.finish(err)
	}
	return nil
}

// wireOrderWait bounds how long a copy waits for the one before it to be
// written to B.
const wireOrderWait = 100 * time.Millisecond

// end DELETEs l's session at B, once B answered the lane's requests in
// flight or Drain passed, and records the exchange on the lane.
func (t *httpShadow) end(s *shadow, l *shadowLane) {
	waited := make(chan struct{})
	go func() { l.flight.Wait(); close(waited) }()
	select {
	case <-waited:
	case <-time.After(s.o.Drain):
	case <-t.ctx.Done():
	}
	sid := l.bSession()
	if sid == "" {
		return // B gave the lane no session: nothing to close
	}
	proto := l.proto()
	hm := tape.HTTPMeta{HTTP: true, Method: http.MethodDelete, Session: sid, Protocol: proto}
	params := map[string]any{"method": http.MethodDelete}
	req, err := http.NewRequestWithContext(t.ctx, http.MethodDelete, t.o.URL.String(), nil)
	if err == nil {
		req.Header.Set("Mcp-Session-Id", sid)
		if proto != "" {
			req.Header.Set("Mcp-Protocol-Version", proto)
		}
		var resp *http.Response
		if resp, err = t.client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
			resp.Body.Close()
			hm.Status = resp.StatusCode
			params["status"] = resp.StatusCode
		}
	}
	if err != nil {
		params["error"] = err.Error()
	}
	s.mu.Lock()
	client := l.client
	s.mu.Unlock()
	s.note(s.sk.lifecycle(tape.MethodHTTPExchange, params, shadowMeta{http: hm, client: client}.fields()))
}

// post sends one message to B in l's session and records what comes back.
func (t *httpShadow) post(s *shadow, l *shadowLane, it shadowItem, msg []byte) error {
	return t.postCtx(t.ctx, s, l, it, msg)
}

// postCtx is post with the request's context (a trace of its writing).
func (t *httpShadow) postCtx(ctx context.Context, s *shadow, l *shadowLane, it shadowItem, msg []byte) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.o.URL.String(), bytes.NewReader(msg))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	sid := l.bSession()
	if sid != "" {
		req.Header.Set("Mcp-Session-Id", sid)
	}
	proto := it.protocol
	if proto == "" {
		proto = l.proto()
	}
	if proto != "" {
		req.Header.Set("Mcp-Protocol-Version", proto)
	}
	if it.mcpMethod != "" {
		req.Header.Set("Mcp-Method", it.mcpMethod)
	}
	if it.mcpName != "" {
		req.Header.Set("Mcp-Name", it.mcpName)
	}
	resp, err := t.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return s.answer(l, resp, tape.HTTPMeta{HTTP: true, Method: http.MethodPost, Session: sid, Protocol: proto, Status: resp.StatusCode})
}

// answer records B's answer to a POST on lane l (hm: the request's side
// and the status): B's new session taken, the messages of a JSON or SSE
// body recorded; an error for a status of 300 or more with neither.
func (s *shadow) answer(l *shadowLane, resp *http.Response, hm tape.HTTPMeta) error {
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" && id != hm.Session {
		l.setSession(id)
		hm.NewSession = id
	}
	limit := s.o.MaxAnswer
	if limit <= 0 {
		limit = DefaultMaxBody
	}
	switch mediaType(resp.Header.Get("Content-Type")) {
	case "text/event-stream":
		r := sse.NewReader(resp.Body)
		r.Max = int(min(limit, math.MaxInt32))
		for {
			ev, err := r.Next()
			if err != nil {
				if errors.Is(err, io.EOF) {
					return nil
				}
				return err
			}
			if len(bytes.TrimSpace(ev.Data)) > 0 {
				s.fromB(l, ev.Data, hm)
			}
		}
	case "application/json":
		body, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
		if err != nil {
			return err
		}
		if int64(len(body)) > limit {
			return fmt.Errorf("B's answer is longer than %d bytes (ShadowOptions.MaxAnswer)", limit)
		}
		if len(bytes.TrimSpace(body)) > 0 {
			s.fromB(l, body, hm)
		}
		return nil
	}
	if resp.StatusCode >= 300 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("B answered %s: %s", resp.Status, bytes.TrimSpace(body))
	}
	return nil
}
