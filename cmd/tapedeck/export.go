package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/export"
	"github.com/tapedeck/tapedeck/internal/outfile"
	"github.com/tapedeck/tapedeck/tape"
)

// exportFlags are export's options.
type exportFlags struct {
	format, out, server string
	endpoint, service   string
	headers             []string
	withBodies          bool
	stderr              io.Writer
}

// exporters are the formats export writes, by name.
var exporters = map[string]func(io.Writer, export.Source, exportFlags) error{
	"json": func(w io.Writer, src export.Source, _ exportFlags) error { return export.JSON(w, src) },
	"har":  func(w io.Writer, src export.Source, _ exportFlags) error { return export.HAR(w, src, buildVersion()) },
	"html": func(w io.Writer, src export.Source, _ exportFlags) error { return export.HTML(w, src, buildVersion()) },
	"otlp": exportOTLP,
}

// exportOTLP writes OTLP JSON, or pushes to --endpoint.
func exportOTLP(w io.Writer, src export.Source, f exportFlags) error {
	o := export.OTLPOptions{Endpoint: f.endpoint, WithBodies: f.withBodies, Service: f.service}
	for _, h := range f.headers {
		k, v, ok := strings.Cut(h, "=")
		if !ok || k == "" {
			return fmt.Errorf("export --header %q: expected NAME=VALUE", h)
		}
		if o.Headers == nil {
			o.Headers = map[string]string{}
		}
		o.Headers[k] = v
	}
	n, err := export.OTLP(context.Background(), w, src, o)
	if err != nil {
		return err
	}
	if f.endpoint != "" {
		fmt.Fprintf(f.stderr, "tapedeck export: %d spans sent to %s\n", n, f.endpoint)
	}
	return nil
}

func exportFormats() string {
	var names []string
	for _, n := range []string{"json", "har", "html", "otlp"} {
		if _, ok := exporters[n]; ok {
			names = append(names, n)
		}
	}
	return strings.Join(names, ", ")
}

func newExportCmd(s streams) *cobra.Command {
	var f exportFlags
	cmd := &cobra.Command{
		Use:   "export TAPE --format FORMAT [-o FILE]",
		Short: "Write a tape for other tools: JSON for scripts, HAR, a self-contained HTML page",
		Long: `export writes a tape in a format other tools read, in one pass over the
tape (memory stays flat however long it is).

Formats:
  json  the correlated calls (request and response messages, latency,
        status ok/error/tool-error/pending/cancelled/late, target, the
        JSON-RPC error), the stats and the tape's warnings, as one JSON
        document; the calls come in the order they completed, requests never
        answered last.
  har   HAR 1.2, for HTTP tools and browsers' network panels: an HTTP tape's
        exchanges (each POST with its JSON-RPC message and its answer, JSON
        or the SSE events of its stream; the GET stream; DELETE) with the
        MCP headers the tape kept (never credentials); a stdio tape maps
        each client message to a POST to stdio://SERVER/ (a server's own
        request to stdio://SERVER/client) with its answer as the content.
  otlp  OpenTelemetry traces: a span a call after the semantic conventions
        for MCP (name "METHOD TARGET"; mcp.method.name, jsonrpc.request.id,
        gen_ai.tool.name, gen_ai.operation.name, error.type (the error code,
        or tool_error), rpc.response.status_code, mcp.protocol.version,
        mcp.session.id, network.transport), with the recorded times; a call
        whose params._meta holds a traceparent is its child, the others
        share a trace a session. A task is one span more, "task METHOD
        TARGET", the child of the call that created it, from its creation to
        its terminal status (mcp.task.id, mcp.task.status, mcp.task.polls;
        error.type task_failed or task_cancelled, an error status).
        OTLP JSON on stdout or -o, or pushed to an
        OTLP/HTTP --endpoint (Jaeger, Tempo, Honeycomb...): an error (exit
        1), with what the endpoint answered, unless it accepted every span.
        Params and results only with --with-bodies.
  html  one self-contained page for a bug report (no network, no external
        script or font): the calls, failed ones marked with their error, each
        request and answer as highlighted JSON, a search box (#q=TEXT in the
        URL fills it), "next failure", the stats and the warnings. Only the
        rows on screen are drawn, so a long tape stays usable.`,
		Example: `  tapedeck export session.jsonl --format json -o session.json
  tapedeck export session.jsonl --format json | jq '.calls[] | select(.status != "ok")'
  tapedeck export session.jsonl --format har -o session.har
  tapedeck export session.jsonl --format html -o session.html   # attach to a bug report
  tapedeck export session.jsonl --format otlp --endpoint http://127.0.0.1:4318`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runExport(s, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.format, "format", "", "the `FORMAT` to write: "+exportFormats())
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "write to `FILE`, whole or not at all: a failed export leaves FILE as it was (default: standard output)")
	cmd.Flags().StringVar(&f.server, "server", "", "only the calls of server `NAME`")
	cmd.Flags().StringVar(&f.endpoint, "endpoint", "", "otlp: push to the OTLP/HTTP endpoint `URL` (e.g. http://127.0.0.1:4318) instead of writing OTLP JSON")
	cmd.Flags().StringArrayVar(&f.headers, "header", nil, "otlp: send the header `NAME=VALUE` with each push, e.g. for authentication (repeatable)")
	cmd.Flags().BoolVar(&f.withBodies, "with-bodies", false, "otlp: put each call's params and result on its span (they may hold secrets)")
	cmd.Flags().StringVar(&f.service, "service", "tapedeck", "otlp: the traces' service.name `NAME`")
	return cmd
}

func runExport(s streams, path string, f exportFlags) error {
	f.stderr = s.stderr
	write, ok := exporters[f.format]
	if !ok {
		if f.format == "" {
			return fmt.Errorf("export: expected --format, one of %s", exportFormats())
		}
		return fmt.Errorf("export --format %q: expected one of %s", f.format, exportFormats())
	}
	x, err := indexTape(s.stderr, path)
	if err != nil {
		return err
	}
	defer x.Close()
	if f.server != "" {
		if err := serverOnTape(x, "export --server", f.server); err != nil {
			return err
		}
	}
	src := export.Source{Name: filepath.Base(path), Index: x, Server: f.server, Open: func() (io.ReadCloser, error) { return tape.ReopenIndexed(x, path) }}
	if f.out == "" || f.out == "-" {
		return write(s.stdout, src, f)
	}
	// Written whole or not at all: a failed export leaves no file that
	// looks complete.
	file, err := outfile.Create(f.out, outfile.Options{Perm: 0o600, Inputs: []string{path}})
	if err != nil {
		return fmt.Errorf("export -o: %w", err)
	}
	defer file.Abort()
	if err := write(file, src, f); err != nil {
		return err
	}
	if err := file.Commit(); err != nil {
		return fmt.Errorf("export -o: %w", err)
	}
	return nil
}
