package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/attach"
)

func newAttachCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ADDR",
		Short: "Relay a client's stdio to a tapedeck debug session",
		Long: `attach is a tiny stdio shim: a client launches it as its MCP server
command, and it relays the client's lines to the "tapedeck debug" session
listening at ADDR and the session's lines back. It exits 0 when the client
ends its input and the session then closes. It exits 1, saying why, when
the session refuses the client (another client is attached, or an HTTP
client has the session), when nothing listens at ADDR, when the session
cuts the connection off while the client is still talking to it, when a
session line is over the 64 MiB limit, or when reading the client's input
or writing its output fails.`,
		Example: `  tapedeck debug session.jsonl --listen 127.0.0.1:7788   # in one terminal
  my-mcp-client -- tapedeck attach 127.0.0.1:7788          # the client's server command`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runAttach(cmd.Context(), s, args[0])
		},
	}
}

// runAttach copies stdin to the session and the session to stdout.
func runAttach(ctx context.Context, s streams, addr string) error {
	return attach.Run(ctx, addr, s.stdin, s.stdout)
}
