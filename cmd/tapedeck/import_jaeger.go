package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/importer"
)

// jaegerFlags are import --from jaeger's options.
type jaegerFlags struct {
	service, trace string
	since          time.Duration
}

func (j *jaegerFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&j.service, "service", "", "jaeger: the traces of service `NAME` (the service.name they were sent under)")
	cmd.Flags().StringVar(&j.trace, "trace", "", "jaeger: only the trace `ID` (32 hex digits)")
	cmd.Flags().DurationVar(&j.since, "since", 24*time.Hour, "jaeger: the traces that started within `D` before now (sent as an explicit start and end)")
}

// importFormats are the names --from takes.
func importFormats() []string {
	f := append(importer.Formats(), "jaeger")
	sort.Strings(f)
	return f
}

func runImportJaeger(ctx context.Context, s streams, base string, f importFlags) error {
	if f.out == "" {
		return errors.New("import: expected -o TAPE, the tape to write (- for standard output)")
	}
	if f.jaeger.trace == "" && f.jaeger.service == "" {
		return errors.New("import --from jaeger: expected --service NAME (the traces of a service) or --trace ID")
	}
	if f.jaeger.since <= 0 {
		return fmt.Errorf("import --from jaeger --since %s: expected a duration above zero", f.jaeger.since)
	}
	now := time.Now()
	q := importer.JaegerQuery{Service: f.jaeger.service, Trace: f.jaeger.trace, Start: now.Add(-f.jaeger.since), End: now.Add(time.Minute)}
	return writeImport(s, f.out, "spans that hold no MCP call", func(w io.Writer) (importer.Result, error) {
		return importer.JaegerContext(ctx, &http.Client{Timeout: time.Minute}, base, q, w, importer.Options{Server: f.server})
	})
}
