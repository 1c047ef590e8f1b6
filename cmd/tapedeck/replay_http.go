package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// serveHTTP serves the tape over Streamable HTTP.
func serveHTTP(cmd *cobra.Command, x *tape.Index, opts replay.Options, addr string, stderr io.Writer, onDiv func(replay.Divergence)) (replay.Report, error) {
	return replay.Report{}, fmt.Errorf("--listen %s: replay over Streamable HTTP is not built yet; use stdio", addr)
}
