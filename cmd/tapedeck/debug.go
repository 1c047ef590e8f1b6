package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
)

func newDebugCmd(s streams) *cobra.Command {
	var listen, server, mode string
	var light bool
	cmd := &cobra.Command{
		Use:   "debug TAPE",
		Short: "Serve a tape to a live client under the debugger",
		Long: `debug opens the debugger on a tape and serves the tape's server side to a
live MCP client at the same time, through the replay engine.

One address (--listen; the title bar shows it) serves both kinds of client:
  - stdio: give the client "tapedeck attach ADDR" as its server command;
  - Streamable HTTP: point the client at http://ADDR/mcp.
The first client's transport serves the whole session; the other is refused.

Playback follows the client: the tape waits at each recorded client message
until the live client sends it, and the recorded answers after it fall due
their recorded latency later (divided by the speed; at once at "instant").
The status bar says where the client is: waiting for a client, connected
(and which recorded message the tape waits for), held at a breakpoint,
DIVERGED, or disconnected. A breakpoint (b, :break) holds the answers until
you continue (space) or step (l).

When the client departs from the tape, the session stops, the expected
entry is marked ✗ in the timeline, and the recorded request and the
client's are shown side by side with the changed JSON paths highlighted.
Choose: a answers with the recorded response anyway, e sends the
divergence error (JSON-RPC -32090) to the client, s skips the recorded
request and matches the client's again.`,
		Example: `  tapedeck debug session.jsonl --listen 127.0.0.1:7788
  # a stdio client, with this as its server command:
  tapedeck attach 127.0.0.1:7788
  # or a Streamable HTTP client, at:
  http://127.0.0.1:7788/mcp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDebug(cmd.Context(), s, args[0], listen, server, mode, light)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "`ADDR` (host:port) where clients connect: tapedeck attach ADDR, or http://ADDR/mcp; port 0 picks a free one")
	cmd.Flags().StringVar(&server, "server", "", "serve the tape's server `NAME` (needed when the tape holds several)")
	cmd.Flags().StringVar(&mode, "match", "strict", "matching `MODE`: strict (in order), keyed or loose")
	cmd.Flags().BoolVar(&light, "light", false, "start with the light theme")
	return cmd
}

func runDebug(ctx context.Context, s streams, path, listen, server, mode string, light bool) error {
	m, err := replay.ParseMode(mode)
	if err != nil {
		return err
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return err
	}
	defer x.Close()
	e, err := replay.NewEngine(x, replay.Options{Server: server, Mode: m, Hold: true})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("debug --listen %s: %w", listen, err)
	}
	live := tui.NewEngineSession(x, e, ln)
	defer live.Close()
	name := fmt.Sprintf("%s · attach %s · %s", filepath.Base(path), live.Addr(), live.URL())
	return runProgram(ctx, s, tui.New(x, tui.Options{Name: name, Path: path, Light: light, Live: live}))
}
