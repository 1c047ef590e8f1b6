package main

import (
	"context"
	"fmt"
	"io"
	"net"

	"github.com/spf13/cobra"
)

func newAttachCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ADDR",
		Short: "Relay a client's stdio to a tapedeck debug session",
		Long: `attach is a tiny stdio shim: a client launches it as its MCP server
command, and it relays the client's lines to the "tapedeck debug" session
listening at ADDR and the session's lines back. It exits when either side
closes.`,
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
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("attach %s: %w (is tapedeck debug listening there?)", addr, err)
	}
	defer c.Close()
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, s.stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite() // the client closed its end: tell the session
		}
		up <- err
	}()
	down := make(chan error, 1)
	go func() {
		_, err := io.Copy(s.stdout, c)
		down <- err
	}()
	select {
	case err = <-down: // the session ended
	case <-ctx.Done():
	}
	return err
}
