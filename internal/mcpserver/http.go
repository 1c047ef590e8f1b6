package mcpserver

// tapedeck mcp --listen: the server over Streamable HTTP, on a loopback
// address only, behind the DNS-rebinding guard every tapedeck listener has.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
)

// Listener is the server listening over Streamable HTTP.
type Listener struct {
	ln  net.Listener
	srv *http.Server
}

// Listen opens addr (HOST:PORT, a loopback host; port 0 picks one) for
// srv over Streamable HTTP at /mcp. Serve it with Serve.
func Listen(addr string, srv *mcp.Server) (*Listener, error) {
	hosts, err := mcphttp.ListenHosts(addr, false, nil, "the library's tapes")
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	guard := mcphttp.Guard{AllowHosts: hosts}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)
	mux := http.NewServeMux()
	mux.Handle("/mcp", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !guard.HostAllowed(r.Host) {
			http.Error(w, fmt.Sprintf("Host %q is not this server's: expected a loopback host", r.Host), http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); !guard.OriginAllowed(o) {
			http.Error(w, fmt.Sprintf("Origin %q is not allowed: expected a loopback origin", o), http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	}))
	return &Listener{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}, nil
}

// URL is the endpoint clients connect to.
func (l *Listener) URL() string { return "http://" + l.ln.Addr().String() + "/mcp" }

// Run serves until ctx is done, then shuts the server down.
func (l *Listener) Run(ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- l.srv.Serve(l.ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := l.srv.Shutdown(sctx); err != nil {
		l.srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// ServeStdio serves srv over stdio (r and w, newline-delimited JSON-RPC)
// until the client closes r or ctx is done.
func ServeStdio(ctx context.Context, srv *mcp.Server, r io.Reader, w io.Writer) error {
	err := srv.Run(ctx, &mcp.IOTransport{Reader: io.NopCloser(r), Writer: nopCloser{w}})
	if err != nil && (errors.Is(err, io.EOF) || ctx.Err() != nil) {
		return nil
	}
	return err
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
