package mcphttp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Listen opens the TCP listener a --listen address names (host:port, port
// 0 picks one); the guards on the address are the caller's.
func Listen(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }

// ServeOptions time a listener's serving.
type ServeOptions struct {
	// ReadHeaderTimeout bounds reading a request's headers; zero means ten
	// seconds.
	ReadHeaderTimeout time.Duration
	// Grace is how long shutting down waits for requests in flight (open
	// SSE streams never finish by themselves); zero means five seconds.
	// Past it, the remaining connections are closed.
	Grace time.Duration
	// Stop, if set, runs once ctx is done, before the shutdown: it ends the
	// handler's open streams.
	Stop func()
}

// Serve serves h on ln until ctx is done or the server fails, then shuts
// the server down (Stop first, then up to Grace for requests in flight).
// It returns the server's error when it failed before ctx was done, else
// the shutdown's (nil when every request finished within Grace). The
// listeners of replay --listen, record --upstream and the replay's rules
// proxy are served by it.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, o ServeOptions) error {
	if o.ReadHeaderTimeout <= 0 {
		o.ReadHeaderTimeout = 10 * time.Second
	}
	if o.Grace <= 0 {
		o.Grace = 5 * time.Second
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: o.ReadHeaderTimeout}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	var err error
	select {
	case err = <-errc:
		srv.Close()
		if o.Stop != nil {
			o.Stop()
		}
		return err
	case <-ctx.Done():
	}
	if o.Stop != nil {
		o.Stop()
	}
	sctx, cancel := context.WithTimeout(context.Background(), o.Grace)
	defer cancel()
	if err = srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
