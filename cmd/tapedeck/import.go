package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/importer"
	"github.com/tapedeck/tapedeck/tape"
)

// importFlags are import's options.
type importFlags struct {
	from, out, server string
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

Messages keep their bytes, direction and time. A malformed input is
refused with its line or JSON path, saying what was expected and found.
The tape is not overwritten if it exists.`,
		Example: `  tapedeck import --from mcpsnoop ~/.local/state/mcpsnoop/sessions/ID.jsonl -o session.jsonl
  tapedeck import --from har session.har -o session.jsonl && tapedeck replay session.jsonl
  tapedeck import --from agent-vcr calculator.vcr --server calc -o calc.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runImport(s, args[0], f)
		},
	}
	cmd.Flags().StringVar(&f.from, "from", "", "the `FORMAT` of FILE: "+strings.Join(importer.Formats(), ", "))
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "write the tape to `TAPE` (- for standard output)")
	cmd.Flags().StringVar(&f.server, "server", "", "name the server `NAME` on the tape (default: the name the input gives)")
	return cmd
}

func runImport(s streams, path string, f importFlags) error {
	formats := strings.Join(importer.Formats(), ", ")
	if f.from == "" {
		return fmt.Errorf("import: expected --from, one of %s", formats)
	}
	if !contains(importer.Formats(), f.from) {
		return fmt.Errorf("import --from %q: expected one of %s", f.from, formats)
	}
	if f.out == "" {
		return errors.New("import: expected -o TAPE, the tape to write (- for standard output)")
	}
	var in io.Reader = s.stdin
	if path != "-" {
		file, err := os.Open(path)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer file.Close()
		in = file
	}
	var w io.Writer = s.stdout
	var file *os.File
	if f.out != "-" {
		var err error
		file, _, err = tape.Create(f.out, false)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("import -o %s: the file exists; remove it or name another tape", f.out)
		}
		if err != nil {
			return fmt.Errorf("import -o: %w", err)
		}
		w = file
	}
	res, err := importer.Import(f.from, in, w, importer.Options{Server: f.server})
	if file != nil {
		if cerr := file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(f.out) // no half tape left behind
		}
	}
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if file != nil {
		fmt.Fprintf(s.stderr, "imported %d messages and %d lifecycle records (servers %s) to %s\n",
			res.Messages, res.Lifecycle, strings.Join(res.Servers, ", "), f.out)
		if res.Skipped > 0 {
			fmt.Fprintf(s.stderr, "skipped %d entries that hold no MCP traffic\n", res.Skipped)
		}
		if res.Reordered > 0 {
			fmt.Fprintf(s.stderr, "put %d answers the source recorded before their requests after them (their timestamps show the request came first)\n", res.Reordered)
		}
	}
	return nil
}
