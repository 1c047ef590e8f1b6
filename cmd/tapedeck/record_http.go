package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// runRecordHTTP runs the recording proxy until ctx is done (SIGINT or
// SIGTERM). The proxy's URL is printed on stdout, so scripts can read it.
func runRecordHTTP(ctx context.Context, s streams, o *recordOptions, rs *rules.Set) error {
	up, err := url.Parse(o.upstream)
	if err != nil || (up.Scheme != "http" && up.Scheme != "https") || up.Host == "" {
		return fmt.Errorf("record: --upstream %q: expected an http:// or https:// URL", o.upstream)
	}
	red, err := o.redact.redactor()
	if err != nil {
		return err
	}
	server := o.server
	if server == "" {
		server = record.DefaultHTTPServerName(up)
	}
	hosts, err := mcphttp.ListenHosts(o.listen, o.allowRemote, o.allowHosts, "the session (and the upstream's credentials the proxy adds)")
	if err != nil {
		return fmt.Errorf("record: %w", err)
	}
	maxBody, err := parseSize(o.maxBody)
	if err != nil {
		return fmt.Errorf("record: --max-body: %w", err)
	}
	if o.allowAnyOrigins {
		o.allowOrigins = append(o.allowOrigins, "*")
	}
	ln, err := mcphttp.Listen(o.listen)
	if err != nil {
		return fmt.Errorf("record: listen on %s: %w", o.listen, err)
	}
	defer ln.Close()
	f, err := openTape(s, o, server)
	if err != nil {
		return err
	}
	defer f.Close()
	var from int64 // where this run's records start (--append)
	if st, err := f.Stat(); err == nil {
		from = st.Size()
	}
	tapeW, spans, err := liveSpans(ctx, s, o, f)
	if err != nil {
		return err
	}
	defer spans()

	p := &record.Proxy{
		Upstream: up, Tape: tapeW, Server: server, Redact: red,
		AllowHosts: hosts, AllowOrigins: o.allowOrigins, MaxBody: maxBody,
		Warn:  tapeWarning(s.stderr, f.Name()),
		Rules: rs, Logf: ruleLog(s.stderr), ProxyAuth: o.proxyAuth,
	}
	if o.shadow != "" {
		b, err := url.Parse(o.shadow)
		if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
			return fmt.Errorf("record: --shadow %q: expected an http:// or https:// URL", o.shadow)
		}
		p.Shadow = &record.ShadowOptions{URL: b, Sample: o.shadowSample}
	}
	if err := p.Start(ln.Addr().String(), buildVersion()); err != nil {
		return fmt.Errorf("record: write tape: %w", err)
	}
	// The client is given the proxy's URL without the upstream's query: the
	// proxy adds it to every request, so its secrets are printed nowhere.
	proxied := url.URL{Scheme: "http", Host: ln.Addr().String(), Path: up.Path}
	fmt.Fprintln(s.stdout, proxied.String())
	fmt.Fprintf(s.stderr, "tapedeck: proxying %s to %s; stop with Ctrl-C\n", proxied.String(), record.SafeURL(up))

	reason := "interrupted"
	if err := record.ServeProxy(ctx, ln, p); err != nil {
		reason = "server error: " + err.Error()
	}
	err = p.Close(reason)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("record: close tape: %w", cerr)
	}
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintf(s.stderr, "tapedeck: %s\n", recordedSummary(f.Name(), from))
	return nil
}

// recordedSummary says what a recording wrote to the tape at path from
// offset from on: its messages, requests and failed ones.
func recordedSummary(path string, from int64) string {
	r, err := os.Open(path)
	if err != nil {
		return fmt.Sprintf("recorded to %s (cannot read it back: %v)", path, err)
	}
	defer r.Close()
	st, err := r.Stat()
	if err != nil {
		return fmt.Sprintf("recorded to %s (cannot read it back: %v)", path, err)
	}
	x := tape.NewIndex(io.NewSectionReader(r, from, st.Size()-from))
	if err := x.Extend(st.Size()-from, nil); err != nil {
		return fmt.Sprintf("recorded to %s (cannot read it back: %v)", path, err)
	}
	stats := tape.ComputeStats(x, "")
	var requests, failed int
	for _, ss := range stats.Servers {
		requests += ss.Total.Requests
		failed += ss.Total.Errors + ss.Total.ToolErrors
	}
	return fmt.Sprintf("recorded %s (%s, %d failed) to %s", text.Plural(stats.Messages-stats.Lifecycle, "message"), text.Plural(requests, "request"), failed, path)
}
