package intercept

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
)

// Options say what a Service intercepts and where clients connect.
type Options struct {
	// Listen is the address clients connect to (HOST:PORT; port 0 picks
	// one): "tapedeck attach ADDR" for a stdio server, http://ADDR/PATH for
	// an HTTP one. The caller has checked that it may be served.
	Listen string
	// Command (with Args) is the stdio server, started anew for each
	// attached client; or Upstream is the Streamable HTTP server.
	Command  string
	Args     []string
	Upstream *url.URL
	// Tape receives the recorded session; Server names the server on it.
	Tape   io.Writer
	Server string
	// AllowHosts and AllowOrigins widen the HTTP proxy's DNS-rebinding
	// guard (record.Proxy).
	AllowHosts, AllowOrigins []string
	// ProxyAuth routes the upstream's OAuth authorization server through
	// the proxy too (record.Proxy.ProxyAuth), so that the debugger sees and
	// the tape keeps the whole handshake. HTTP only.
	ProxyAuth bool
	// Rules apply before the debugger holds a message (rules.Decide).
	Rules *rules.Set
	// Version is tapedeck's, for the tape's start records.
	Version string
}

// served is the network side of a Service.
type served struct {
	ln   net.Listener
	srv  *http.Server
	stop func()
}

// Start listens on o.Listen and serves the intercept there until Close:
// one attached stdio client at a time, each with its own run of
// o.Command, or HTTP clients through the recording proxy to o.Upstream.
// It returns the address it listens on.
func (s *Service) Start(ctx context.Context, o Options) (string, error) {
	if (o.Command == "") == (o.Upstream == nil) {
		return "", fmt.Errorf("intercept: expected a server command or an upstream URL, found %s", given(o))
	}
	if o.ProxyAuth && o.Upstream == nil {
		return "", errors.New("intercept: ProxyAuth goes with an upstream URL (an HTTP server's authorization), found a server command")
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return "", fmt.Errorf("debug --listen %s: %w", o.Listen, err)
	}
	addr := ln.Addr().String()
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	sv := &served{ln: ln}
	var once sync.Once
	sv.stop = func() {
		once.Do(func() {
			cancel()
			ln.Close()
			if sv.srv != nil {
				sv.srv.Close()
			}
			wg.Wait()
		})
	}
	if o.Upstream != nil {
		host, _, _ := net.SplitHostPort(o.Listen)
		p := &record.Proxy{Upstream: o.Upstream, Tape: o.Tape, Server: o.Server, AllowHosts: append(o.AllowHosts, host),
			AllowOrigins: o.AllowOrigins, ProxyAuth: o.ProxyAuth, Intercept: s, Rules: o.Rules, Logf: s.Info}
		if err := p.Start(addr, o.Version); err != nil {
			cancel()
			ln.Close()
			return "", err
		}
		sv.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
		s.mu.Lock()
		s.resend = p.Resend
		s.mu.Unlock()
		wg.Add(1)
		go func() { defer wg.Done(); _ = sv.srv.Serve(ln) }()
	} else {
		wg.Add(1)
		go func() { defer wg.Done(); s.serveStdio(sctx, ln, o) }()
	}
	s.mu.Lock()
	s.serve = sv
	s.mu.Unlock()
	return addr, nil
}

func given(o Options) string {
	if o.Command == "" {
		return "neither"
	}
	return "both"
}

// serveStdio relays one attached client at a time to its own run of the
// server, through the recording shim with s as its interceptor.
func (s *Service) serveStdio(ctx context.Context, ln net.Listener, o Options) {
	w := record.NewLockedWriter(o.Tape) // the shims of successive clients share the tape
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		shim := &record.Stdio{Command: o.Command, Args: o.Args, Tape: w, Server: o.Server, Version: o.Version, Intercept: s, Rules: o.Rules, Logf: s.Info}
		s.mu.Lock()
		s.send = shim.Send
		s.mu.Unlock()
		s.Info("a client attached: " + o.Command + " started for it")
		st, err := shim.Run(ctx, c, c, io.Discard)
		c.Close()
		s.mu.Lock()
		s.send = nil
		s.mu.Unlock()
		text := "the client detached; the server " + st.String()
		if err != nil {
			text += ": " + err.Error()
		}
		s.Info(text + "; attach again for another run")
	}
}
