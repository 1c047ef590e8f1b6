package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/importer"
	"github.com/tapedeck/tapedeck/tape"
)

// importFlags are import's options.
type importFlags struct {
	from, out, server string
	jaeger            jaegerFlags // --from jaeger
}

func newImportCmd(s streams) *cobra.Command {
	var f importFlags
	cmd := &cobra.Command{
		Use:   "import --from FORMAT FILE -o TAPE",
		Short: "Make a tape of another tool's MCP session log",
		Long: `import reads a session recorded by another tool and writes it as a tape,
which replays, diffs and opens like one tapedeck recorded.

Formats (--from):
  mcpsnoop      an mcpsnoop session log (JSONL envelopes: direction
                c2s/s2c/stderr/meta, raw, ts, session_id, server_label),
                from --trace-file or $MCPSNOOP_HOME/sessions/; an answer
                logged before its request is put after it when the
                timestamps show the request came first (counted in one line)
  mcp-recorder  an mcp-recorder cassette (JSON: metadata, interactions of
                request, response, latency_ms); its messages have no times
                of their own: they are laid out from metadata.recorded_at
                and each interaction's latency
  agent-vcr     an agent-vcr .vcr recording (JSON: metadata, session with
                initialize_request/response and interactions)
  har           a HAR 1.2 file of Streamable HTTP traffic (POSTed JSON-RPC
                messages, JSON or SSE answers, GET streams, DELETE), or
                one tapedeck export --format har wrote of a stdio tape
  otlp          OTLP JSON traces, one ExportTraceServiceRequest a line (the
                OpenTelemetry collector's file exporter, or tapedeck export
                --format otlp -o)
  gh-aw         a GitHub Agentic Workflows gateway log, mcp-logs/
                rpc-messages.jsonl (JSONL: timestamp, direction IN/OUT,
                type REQUEST/RESPONSE, server_id, payload); the gateway's
                own events (DIFC_FILTERED, ...) carry no message and are
                skipped
  inspector     an MCP Inspector v2 history export (the Protocol screen's
                Export: a JSON array of entries with timestamp, direction
                request/response/notification, origin client/server,
                message, and a request's response and duration in ms); an
                answer's time is its request's plus duration
  jaeger        FILE is a Jaeger query URL (http://host:16686): the traces
                of --service between now - --since and now (sent as an
                explicit start and end), or the one --trace ID

Traces exported with --with-bodies come back whole and replay. Spans
without bodies (another emitter's, after the OpenTelemetry MCP
conventions) make a skeleton tape: each call's method, target, id, status
and times, marked _meta.skeleton; stats, open, check and diff read it,
replay refuses it. A tools/call span with gen_ai.tool.call.arguments and
result becomes that exchange.

Messages keep their bytes, direction and time. A malformed input is
refused with its line or JSON path, saying what was expected and found.
The tape is not overwritten if it exists. Input is bounded: a line of
mcpsnoop at 64 MiB, a cassette, recording or Inspector export at 512 MiB, each HAR entry at
512 MiB (a HAR is streamed entry by entry), a pipe at 4 GiB; devices are
refused; SIGINT or SIGTERM stops the reading (no tape is left).`,
		Example: `  tapedeck import --from mcpsnoop ~/.local/state/mcpsnoop/sessions/ID.jsonl -o session.jsonl
  tapedeck import --from har session.har -o session.jsonl && tapedeck replay session.jsonl
  tapedeck import --from agent-vcr calculator.vcr --server calc -o calc.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.from == "jaeger" {
				return runImportJaeger(cmd.Context(), s, args[0], f)
			}
			return runImport(cmd.Context(), s, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.from, "from", "", "the `FORMAT` of FILE: "+strings.Join(importFormats(), ", "))
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "write the tape to `TAPE` (- for standard output)")
	cmd.Flags().StringVar(&f.server, "server", "", "name the server `NAME` on the tape (default: the name the input gives)")
	f.jaeger.register(cmd)
	return cmd
}

func runImport(ctx context.Context, s streams, path string, f importFlags) error {
	formats := strings.Join(importFormats(), ", ")
	if f.from == "" {
		return fmt.Errorf("import: expected --from, one of %s", formats)
	}
	if !slices.Contains(importer.Formats(), f.from) {
		return fmt.Errorf("import --from %q: expected one of %s", f.from, formats)
	}
	if f.out == "" {
		return errors.New("import: expected -o TAPE, the tape to write (- for standard output)")
	}
	var in io.Reader = s.stdin
	if path != "-" {
		file, err := tape.OpenContext(ctx, path, 0) // devices refused, a pipe without a writer an error at once, a pipe bounded
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer file.Close()
		in = file
	}
	return writeImport(s, f.out, "entries that hold no MCP traffic", func(w io.Writer) (importer.Result, error) {
		return importer.ImportContext(ctx, f.from, in, w, importer.Options{Server: f.server})
	})
}

// writeImport writes the tape run imports to out (a new file, or - for
// standard output), removes a file it left half written, and says on
// standard error what it imported and how many of what it skipped.
func writeImport(s streams, out, skipped string, run func(io.Writer) (importer.Result, error)) error {
	var w io.Writer = s.stdout
	var file *os.File
	if out != "-" {
		var err error
		file, _, err = tape.Create(out, false)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("import -o %s: the file exists; remove it or name another tape", out)
		}
		if err != nil {
			return fmt.Errorf("import -o: %w", err)
		}
		w = file
	}
	res, err := run(w)
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(out) // no half tape left behind
		}
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if file != nil {
		fmt.Fprintf(s.stderr, "imported %d messages and %d lifecycle records (servers %s) to %s\n",
			res.Messages, res.Lifecycle, strings.Join(res.Servers, ", "), out)
		if res.Skipped > 0 {
			fmt.Fprintf(s.stderr, "skipped %d %s\n", res.Skipped, skipped)
		}
		if res.Reordered > 0 {
			fmt.Fprintf(s.stderr, "put %d answers the source recorded before their requests after them (their timestamps show the request came first)\n", res.Reordered)
		}
	}
	return nil
}
