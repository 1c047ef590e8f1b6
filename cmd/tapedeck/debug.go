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

The client connects over stdio through "tapedeck attach ADDR": give the
client "tapedeck attach ADDR" as its server command, with the address debug
shows in its title bar (--listen picks it). Playback starts when the client
connects. The engine's answers reach the client only when playback delivers
the recorded messages they replay: a breakpoint (b, :break) holds them until
you continue (space) or step (l).

When the client departs from the tape, the session stops, the expected
entry is marked ✗ in the timeline, and the recorded request and the
client's are shown side by side with the changed JSON paths highlighted.
Choose: a answers with the recorded response anyway, e sends the
divergence error to the client, s skips the recorded request and matches
the client's again.

Not yet: clients over Streamable HTTP (use attach).`,
		Example: `  tapedeck debug session.jsonl --listen 127.0.0.1:7788
  # then, as the client's server command:
  tapedeck attach 127.0.0.1:7788`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runDebug(cmd.Context(), s, args[0], listen, server, mode, light)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "`ADDR` (host:port) where tapedeck attach connects; port 0 picks a free one")
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
	name := fmt.Sprintf("%s · attach %s", filepath.Base(path), live.Addr())
	return runProgram(ctx, s, tui.New(x, tui.Options{Name: name, Path: path, Light: light, Live: live}))
}
