package record

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/url"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
)

// ServeProxy serves p on ln until ctx is done or the server fails, giving
// open SSE streams a second to finish at the end. It returns the server's
// error when it failed first, else nil; p's Close is the caller's.
func ServeProxy(ctx context.Context, ln net.Listener, p *Proxy) error {
	err := mcphttp.Serve(ctx, ln, p, mcphttp.ServeOptions{ReadHeaderTimeout: 30 * time.Second, Grace: time.Second})
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// ServeInFront puts the proxy p in front of another server: serveBackend
// serves it on a loopback listener of its own until the context it is
// given is done (replay.ServeHTTP over a replay's handler), p's Upstream
// is set to that listener at path, and p serves clients on ln until ctx is
// done. So p's rules see and fault every message both ways as they do
// when recording (replay --listen --rules, its tape io.Discard). It
// returns the backend's error, and the proxy's if it failed first.
func ServeInFront(ctx context.Context, ln net.Listener, p *Proxy, path string, serveBackend func(context.Context, net.Listener) error) error {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		ln.Close()
		return err
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- serveBackend(bctx, inner) }()
	p.Upstream = &url.URL{Scheme: "http", Host: inner.Addr().String(), Path: path}
	perr := mcphttp.Serve(ctx, ln, p, mcphttp.ServeOptions{ReadHeaderTimeout: 30 * time.Second, Grace: 2 * time.Second})
	if ctx.Err() != nil || errors.Is(perr, http.ErrServerClosed) {
		perr = nil
	}
	cancel()
	return errors.Join(perr, <-errc)
}
