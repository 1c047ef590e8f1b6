package main

import (
	"context"
	"io"
	"net"
	"net/url"

	"github.com/tapedeck/tapedeck/record"
)

// recordingProxy records an HTTP server's traffic with --tape: the real
// recorder (record.Proxy, as "tapedeck record --upstream" runs it) on a
// loopback port in front of the server, so HTTP fixtures carry the tape's
// HTTP dialect as users' recordings do.
type recordingProxy struct {
	p      *record.Proxy
	url    string // the proxy's URL for the server's endpoint
	cancel context.CancelFunc
	done   chan error
}

// startProxy starts a recording proxy in front of endpoint, writing records
// named server to w (one Write a record).
func startProxy(endpoint, server string, w io.Writer) (*recordingProxy, error) {
	up, err := url.Parse(endpoint)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &record.Proxy{Upstream: up, Tape: w, Server: server}
	if err := p.Start(ln.Addr().String(), "sdkclient"); err != nil {
		ln.Close()
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	rp := &recordingProxy{p: p, cancel: cancel, done: make(chan error, 1),
		url: (&url.URL{Scheme: "http", Host: ln.Addr().String(), Path: up.Path, RawQuery: up.RawQuery}).String()}
	go func() { rp.done <- record.ServeProxy(ctx, ln, p) }()
	return rp, nil
}

// close stops the proxy once its exchanges ended and writes
// $transport/close; it returns the first error serving or writing.
func (rp *recordingProxy) close() error {
	rp.cancel()
	serveErr := <-rp.done
	if err := rp.p.Close("client closed"); err != nil {
		return err
	}
	return serveErr
}
