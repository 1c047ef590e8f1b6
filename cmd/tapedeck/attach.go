package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
)

func newAttachCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "attach ADDR",
		Short: "Relay a client's stdio to a tapedeck debug session",
		Long: `attach is a tiny stdio shim: a client launches it as its MCP server
command, and it relays the client's lines to the "tapedeck debug" session
listening at ADDR and the session's lines back. It exits when either side
closes, with status 1 and the session's message when the session refuses
the client (another client is attached, or an HTTP client has the session).`,
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
	go func() { down <- relayDown(s.stdout, c) }()
	select {
	case err = <-down: // the session ended
	case <-ctx.Done():
		return nil
	}
	if err != nil {
		return err
	}
	// The session closed the connection: after the client closed its
	// input, that is the end; before, the client was cut off (the
	// debugger quit or restarted the run), and its caller should know.
	select {
	case <-up:
		return nil
	case <-time.After(200 * time.Millisecond):
		return fmt.Errorf("attach: the session at %s closed the connection while the client was still sending (the debugger quit or restarted the run)", addr)
	}
}

// relayDown copies the session's lines to the client, unless the first is
// the session's refusal (an error with "id":null, code -32000 and a
// message from tapedeck debug), which it returns as the error instead.
func relayDown(w io.Writer, r io.Reader) error {
	first := true
	return jsonrpc.ReadLines(r, 0, func(line []byte) error {
		if first {
			first = false
			if msg, ok := refusal(line); ok {
				return errors.New("attach: the session refused the client: " + msg)
			}
		}
		_, err := w.Write(line)
		return err
	}, func() error { return fmt.Errorf("attach: the session sent a line over %d bytes", jsonrpc.MaxLine) })
}

// refusal reports whether line is the session's refusal, and its reason.
func refusal(line []byte) (string, bool) {
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || string(m.ID) != "null" || m.Error == nil || m.Error.Code != -32000 {
		return "", false
	}
	return strings.CutPrefix(m.Error.Message, "tapedeck debug: ")
}
