package main

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"path/filepath"

	"github.com/tapedeck/tapedeck/debug/intercept"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
)

// runDebugIntercept is "tapedeck debug -- SERVER" and "debug --upstream
// URL": the debugger between a live client and a live server
// (debug/intercept).
func runDebugIntercept(ctx context.Context, s streams, f debugFlags, server []string, rs *rules.Set) error {
	hosts, err := mcphttp.ListenHosts(f.listen, f.allowRemote, f.hosts, "the session")
	if err != nil {
		return fmt.Errorf("debug %w", err)
	}
	bps, err := parseBreaks(f.breaks)
	if err != nil {
		return err
	}
	o := intercept.Options{Listen: f.listen, Server: f.server, AllowHosts: hosts, AllowOrigins: f.origins, ProxyAuth: f.proxyAuth, Rules: rs, Version: buildVersion()}
	if f.upstream != "" {
		if o.Upstream, err = url.Parse(f.upstream); err != nil || (o.Upstream.Scheme != "http" && o.Upstream.Scheme != "https") || o.Upstream.Host == "" {
			return fmt.Errorf("debug --upstream %q: expected an http:// or https:// URL", f.upstream)
		}
		if o.Server == "" {
			o.Server = record.DefaultHTTPServerName(o.Upstream)
		}
	} else {
		o.Command, o.Args = server[0], server[1:]
		if o.Server == "" {
			o.Server = record.DefaultServerName(server[0], server[1:])
		}
	}
	ro := recordOptions{output: f.output, appendTo: f.output != ""}
	file, err := openTape(streams{s.stdin, io.Discard, s.stderr}, &ro, o.Server)
	if err != nil {
		return err
	}
	defer file.Close()
	o.Tape = file
	path := file.Name()
	svc := intercept.New()
	defer svc.Close()
	addr, err := svc.Start(ctx, o)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("%s · intercepting: attach %s → %s", filepath.Base(path), addr, o.Command)
	if o.Upstream != nil {
		title = fmt.Sprintf("%s · intercepting http://%s%s → %s", filepath.Base(path), addr, o.Upstream.Path, record.SafeURL(o.Upstream))
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return err
	}
	defer x.Close()
	return runProgram(ctx, s, tui.New(x, tui.Options{Name: title, Path: path, Follow: true, Light: f.light, Intercept: svc, Breakpoints: bps}))
}
