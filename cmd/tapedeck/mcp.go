package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/mcpserver"
)

func newMCPCmd(s streams) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:   "mcp [--listen 127.0.0.1:PORT]",
		Short: "Serve the library of tapes to agents as an MCP server",
		Long: `mcp runs tapedeck as an MCP server over the library (the tapes tapedeck ls
lists), for a coding agent to find and read recorded sessions: over stdio
by default, over Streamable HTTP at http://ADDR/mcp with --listen (a
loopback address only).

Tools (each result has structuredContent, each tool an outputSchema):
  list_tapes      the library's tapes, newest first
  search_tapes    messages by their words, tool, method, status, age
  get_call        one call: request, answer, notifications, status, latency
  tape_stats      a tape's counts per server and method (as stats --json)
  check_tape      tapedeck check's findings on a tape
  diff_tapes      tapedeck diff of two tapes
  explain_report  a replay --report file, each divergence said in words
  open_at         the command that opens a tape at a message: tapedeck open TAPE:SEQ
Resources: tape://PATH, a tape's summary and stats.

It is read-only and reads nothing outside the library: a path must be a
tape the library lists or a file directly in one of its directories
(tapedeck ls DIR adds one; a replay report to explain must be there too);
any other is refused with an error naming the library's directories.

To add it to a client, give it the command "tapedeck" with the argument
"mcp", e.g. in claude_desktop_config.json or .cursor/mcp.json:
  {"mcpServers": {"tapedeck": {"command": "tapedeck", "args": ["mcp"]}}}
and in VS Code's .vscode/mcp.json:
  {"servers": {"tapedeck": {"type": "stdio", "command": "tapedeck", "args": ["mcp"]}}}
or: claude mcp add tapedeck -- tapedeck mcp`,
		Example: `  tapedeck mcp                              # stdio, for a client that starts it
  tapedeck mcp --listen 127.0.0.1:7799      # Streamable HTTP at http://127.0.0.1:7799/mcp
  npx @modelcontextprotocol/inspector tapedeck mcp`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			l, _, err := openLibrary(ctx, s, nil)
			if err != nil {
				return err
			}
			defer l.Close()
			srv := mcpserver.New(mcpserver.Options{Library: l, Version: buildVersion()})
			if listen == "" {
				return mcpserver.ServeStdio(ctx, srv, s.stdin, s.stdout)
			}
			ln, err := mcpserver.Listen(listen, srv)
			if err != nil {
				return fmt.Errorf("mcp %w", err)
			}
			fmt.Fprintf(s.stderr, "tapedeck mcp: serving the library at %s\n", ln.URL())
			return ln.Run(ctx)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "serve Streamable HTTP on `ADDR` (a loopback HOST:PORT) instead of stdio")
	return cmd
}
