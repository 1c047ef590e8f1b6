package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
)

// interceptor is the live intercept between the recorders and the
// debugger: the recorders offer it every message (record.Interceptor), it
// holds those a breakpoint matches until the debugger's verdict
// (tui.Intercept), and it sends requests again for the debugger.
type interceptor struct {
	events chan debug.InterceptEvent
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	breaks  []debug.Breakpoint
	pending map[int]chan debug.Verdict
	next    int
	resends map[string][]byte // the id of a re-sent request → the request as the client sent it
	nresend int
	send    func(dir tape.Dir, msg []byte, inj []rules.Injection) error // the stdio session's, while one runs
	proxy   *record.Proxy                                               // the HTTP intercept's
}

func newInterceptor() *interceptor {
	return &interceptor{events: make(chan debug.InterceptEvent, 64), closed: make(chan struct{}),
		pending: map[int]chan debug.Verdict{}, resends: map[string][]byte{}}
}

// debuggerRule names the debugger in _meta.injected.
const debuggerRule = "debugger"

func (ic *interceptor) emit(ev debug.InterceptEvent) {
	select {
	case ic.events <- ev:
	case <-ic.closed:
	}
}

// Next implements tui.Intercept.
func (ic *interceptor) Next() debug.InterceptEvent {
	select {
	case ev := <-ic.events:
		return ev
	case <-ic.closed:
		return debug.InterceptEvent{Kind: debug.InterceptClosed}
	}
}

// SetBreakpoints implements tui.Intercept.
func (ic *interceptor) SetBreakpoints(bs []debug.Breakpoint) {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	ic.breaks = append([]debug.Breakpoint(nil), bs...)
}

// Holds implements record.Interceptor.
func (ic *interceptor) Holds(m rules.Message) bool {
	ic.mu.Lock()
	defer ic.mu.Unlock()
	if m.Dir == tape.DirRecv && len(ic.resends) > 0 {
		if es := tape.Classify(m.Raw); len(es) == 1 && es[0].Kind == tape.KindResponse {
			if _, ok := ic.resends[string(es[0].ID)]; ok {
				return true
			}
		}
	}
	return ic.matching(m) != ""
}

// matching returns the first enabled breakpoint m matches; mu is held.
func (ic *interceptor) matching(m rules.Message) string {
	for _, b := range ic.breaks {
		if !b.Disabled && b.MatchLive(m.Raw, m.Dir, "") {
			return b.String()
		}
	}
	return ""
}

// Decide implements record.Interceptor: it holds m until the debugger's
// verdict (or the session's end, which forwards it).
func (ic *interceptor) Decide(m rules.Message) rules.Decision {
	es := tape.Classify(m.Raw)
	if len(es) != 1 {
		return rules.Decision{}
	}
	e := es[0]
	ic.mu.Lock()
	if req, ok := ic.resends[string(e.ID)]; ok && m.Dir == tape.DirRecv && e.Kind == tape.KindResponse {
		delete(ic.resends, string(e.ID))
		ic.mu.Unlock()
		ic.emit(debug.InterceptEvent{Kind: debug.InterceptResent, Request: req, Raw: m.Raw})
		return rules.Decision{Matched: true, Out: [][]byte{}, Injections: []rules.Injection{{Rule: debuggerRule, Action: "resend", Dropped: true,
			Note: "the answer to a request the debugger sent again: shown in the debugger, not forwarded to the client"}}}
	}
	bp := ic.matching(m)
	id := ic.next + 1
	ic.next = id
	ch := make(chan debug.Verdict, 1)
	ic.pending[id] = ch
	ic.mu.Unlock()
	ic.emit(debug.InterceptEvent{Kind: debug.InterceptHeld, ID: id, Dir: m.Dir, Raw: m.Raw, Breakpoint: bp})
	var v debug.Verdict
	select {
	case v = <-ch:
	case <-ic.closed:
		v = debug.Verdict{Action: debug.Forward}
	}
	ic.mu.Lock()
	delete(ic.pending, id)
	ic.mu.Unlock()
	return verdictDecision(v, e, m)
}

// verdictDecision turns the debugger's verdict into what the recorder does.
func verdictDecision(v debug.Verdict, e tape.Entry, m rules.Message) rules.Decision {
	switch v.Action {
	case debug.Drop:
		return rules.Decision{Matched: true, Out: [][]byte{}, Injections: []rules.Injection{{Rule: debuggerRule, Action: string(rules.Block), Dropped: true}}}
	case debug.Edited:
		return rules.Decision{Matched: true, Out: [][]byte{v.Raw}, Injections: []rules.Injection{{Rule: debuggerRule, Action: string(rules.Modify), Original: json.RawMessage(m.Raw)}}}
	case debug.AnswerError:
		answer := []byte(`{"jsonrpc":"2.0","id":` + string(e.ID) + `,"error":{"code":-32000,"message":"answered with an error in the tapedeck debugger"}}`)
		switch e.Kind {
		case tape.KindRequest:
			return rules.Decision{Matched: true, Out: [][]byte{}, Reply: answer,
				Injections:      []rules.Injection{{Rule: debuggerRule, Action: string(rules.Error), Dropped: true}},
				ReplyInjections: []rules.Injection{{Rule: debuggerRule, Action: string(rules.Error), Injected: true}}}
		case tape.KindResponse:
			return rules.Decision{Matched: true, Out: [][]byte{answer}, Injections: []rules.Injection{{Rule: debuggerRule, Action: string(rules.Error), Original: json.RawMessage(m.Raw)}}}
		}
		return rules.Decision{Matched: true, Out: [][]byte{}, Injections: []rules.Injection{{Rule: debuggerRule, Action: string(rules.Block), Dropped: true}}}
	}
	return rules.Decision{}
}

// Settle implements tui.Intercept.
func (ic *interceptor) Settle(id int, v debug.Verdict) {
	ic.mu.Lock()
	ch := ic.pending[id]
	ic.mu.Unlock()
	if ch != nil {
		ch <- v
	}
}

// Resend implements tui.Intercept.
func (ic *interceptor) Resend(raw []byte) error {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return err
	}
	ic.mu.Lock()
	send, proxy := ic.send, ic.proxy
	ic.nresend++
	id := strconv.Quote(fmt.Sprintf("tapedeck-resend-%d", ic.nresend))
	if send == nil && proxy == nil {
		ic.mu.Unlock()
		return errors.New("no session is running: the client connects first")
	}
	if send != nil {
		ic.resends[id] = raw
	}
	ic.mu.Unlock()
	m["id"] = json.RawMessage(id)
	msg, err := json.Marshal(m)
	if err != nil {
		return err
	}
	inj := []rules.Injection{{Rule: debuggerRule, Action: "resend", Injected: true,
		Note: "sent again from the debugger; its answer is not forwarded to the client"}}
	if send != nil {
		return send(tape.DirSend, msg, inj)
	}
	// Over HTTP the answer comes back on the proxy's own request.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := proxy.Resend(ctx, msg, inj)
	if err != nil {
		return err
	}
	ic.emit(debug.InterceptEvent{Kind: debug.InterceptResent, Request: raw, Raw: answer})
	return nil
}

// info shows a line (a rule's log) in the debugger.
func (ic *interceptor) info(text string) {
	ic.emit(debug.InterceptEvent{Kind: debug.InterceptInfo, Text: text})
}

// Close implements tui.Intercept: held messages go on.
func (ic *interceptor) Close() error {
	ic.once.Do(func() { close(ic.closed) })
	return nil
}

// runDebugIntercept is "tapedeck debug -- SERVER" and "debug --upstream
// URL": the debugger between a live client and a live server.
func runDebugIntercept(ctx context.Context, s streams, f debugFlags, server []string, rs *rules.Set) error {
	host, _, err := net.SplitHostPort(f.listen)
	if err != nil {
		return fmt.Errorf("debug --listen %q: expected HOST:PORT, e.g. 127.0.0.1:7788: %w", f.listen, err)
	}
	if !mcphttp.IsLoopbackHost(host) && !f.allowRemote {
		return fmt.Errorf("debug --listen %q is not a loopback address: the session would be reachable from other machines; use 127.0.0.1 or add --allow-remote", f.listen)
	}
	bps, err := parseBreaks(f.breaks)
	if err != nil {
		return err
	}
	name := f.server
	var up *url.URL
	if f.upstream != "" {
		if up, err = url.Parse(f.upstream); err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
			return fmt.Errorf("debug --upstream %q: expected an http:// or https:// URL", f.upstream)
		}
		if name == "" {
			name = record.DefaultHTTPServerName(up)
		}
	} else if name == "" {
		name = record.DefaultServerName(server[0], server[1:])
	}
	o := recordOptions{output: f.output, appendTo: f.output != ""}
	file, err := openTape(streams{s.stdin, io.Discard, s.stderr}, &o, name)
	if err != nil {
		return err
	}
	defer file.Close()
	path := file.Name()
	ln, err := net.Listen("tcp", f.listen)
	if err != nil {
		return fmt.Errorf("debug --listen %s: %w", f.listen, err)
	}
	defer ln.Close()
	ic := newInterceptor()
	defer ic.Close()
	addr := ln.Addr().String()
	var title string
	var wg sync.WaitGroup
	sctx, stop := context.WithCancel(ctx)
	defer func() { stop(); ln.Close(); ic.Close(); wg.Wait() }()
	if up != nil {
		p := &record.Proxy{Upstream: up, Tape: file, Server: name, AllowHosts: append(f.hosts, host), AllowOrigins: f.origins, Intercept: ic, Rules: rs, Logf: ic.info}
		if err := p.Start(addr, buildVersion()); err != nil {
			return err
		}
		ic.proxy = p
		srv := &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
		wg.Add(1)
		go func() { defer wg.Done(); _ = srv.Serve(ln) }()
		defer srv.Close()
		title = fmt.Sprintf("%s · intercepting http://%s%s → %s", filepath.Base(path), addr, up.Path, record.SafeURL(up))
	} else {
		wg.Add(1)
		go func() { defer wg.Done(); serveIntercept(sctx, ln, ic, file, name, server, rs) }()
		title = fmt.Sprintf("%s · intercepting: attach %s → %s", filepath.Base(path), addr, server[0])
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return err
	}
	defer x.Close()
	return runProgram(ctx, s, tui.New(x, tui.Options{Name: title, Path: path, Follow: true, Light: f.light, Intercept: ic, Breakpoints: bps}))
}

// serveIntercept relays one attached client at a time to its own run of
// the server, through the recording shim with the interceptor.
func serveIntercept(ctx context.Context, ln net.Listener, ic *interceptor, tapeW io.Writer, name string, server []string, rs *rules.Set) {
	var tapeMu sync.Mutex
	w := writerFunc(func(b []byte) (int, error) { tapeMu.Lock(); defer tapeMu.Unlock(); return tapeW.Write(b) })
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		shim := &record.Stdio{Command: server[0], Args: server[1:], Tape: w, Server: name, Version: buildVersion(), Intercept: ic, Rules: rs, Logf: ic.info}
		ic.mu.Lock()
		ic.send = shim.Send
		ic.mu.Unlock()
		ic.emit(debug.InterceptEvent{Kind: debug.InterceptInfo, Text: "a client attached: " + server[0] + " started for it"})
		st, err := shim.Run(ctx, c, c, io.Discard)
		c.Close()
		ic.mu.Lock()
		ic.send = nil
		ic.mu.Unlock()
		text := "the client detached; the server " + st.String()
		if err != nil {
			text += ": " + err.Error()
		}
		ic.emit(debug.InterceptEvent{Kind: debug.InterceptInfo, Text: text + "; attach again for another run"})
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
