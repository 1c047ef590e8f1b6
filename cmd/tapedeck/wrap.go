package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/wrap"
)

// wrapFlags are the options wrap and unwrap share.
type wrapFlags struct {
	client, config string
	force          bool
}

func (f *wrapFlags) add(cmd *cobra.Command) {
	var names []string
	for _, c := range wrap.Clients() {
		names = append(names, string(c))
	}
	cmd.Flags().StringVar(&f.client, "client", "", "the `CLIENT` whose configuration to edit: "+strings.Join(names, ", ")+" (default: the first whose configuration has SERVER)")
	cmd.Flags().StringVar(&f.config, "config", "", "edit the configuration file `PATH` instead of the client's default one")
}

const wrapClientsHelp = `Clients and the configurations they read (--config names another file):
  claude-desktop  ~/.config/Claude/claude_desktop_config.json ($XDG_CONFIG_HOME),
                  ~/Library/Application Support/Claude/ on macOS: "mcpServers"
  claude-code     ~/.claude.json ("mcpServers", and the current directory's
                  projects.<dir>.mcpServers first), then ./.mcp.json
  cursor          ./.cursor/mcp.json, then ~/.cursor/mcp.json: "mcpServers"
  vscode          ./.vscode/mcp.json: "servers" (JSON with comments)
  windsurf        ~/.codeium/windsurf/mcp_config.json: "mcpServers"
Without --client they are tried in this order, and the first whose
configuration has SERVER is edited.`

func newWrapCmd(s streams) *cobra.Command {
	var f wrapFlags
	cmd := &cobra.Command{
		Use:   "wrap SERVER [--client CLIENT] [--config PATH]",
		Short: "Make an MCP client run one of its servers through tapedeck record",
		Long: `wrap edits an MCP client's configuration so that the stdio server SERVER
runs through "tapedeck record": its command becomes this tapedeck binary
and its args "record --server SERVER -- COMMAND ARGS...". Its env, cwd and
everything else stay, and so does the rest of the file, comments and
layout included. Restart the client (or reload its MCP servers): each
session it has with SERVER is then recorded to a tape under
$XDG_STATE_HOME/tapedeck/tapes/ (by default ~/.local/state/tapedeck/tapes/),
with the environment the client gives its servers.

The entry's original bytes are kept in CONFIG.tapedeck-wrap.json next to
the configuration; "tapedeck unwrap SERVER" puts them back, and the file is
then byte for byte what it was.

An HTTP server (an entry with a url) is refused: the client connects to it
itself, so nothing in its configuration can start the recording proxy. Run
"tapedeck record --upstream URL --listen 127.0.0.1:7777" and point the
client at the address it prints instead.

A configuration that does not parse, a SERVER that is not there, and an
entry already wrapped are refused, and the file is left alone. The file is
replaced in one rename (a symbolic link stays one: its target is replaced).

` + wrapClientsHelp,
		Example: `  tapedeck wrap filesystem                          # the first client configured with it
  tapedeck wrap github --client claude-desktop
  tapedeck wrap fetch --client vscode               # ./.vscode/mcp.json
  tapedeck wrap weather --config ~/work/app/.mcp.json

  # after a session in the client:
  tapedeck open ~/.local/state/tapedeck/tapes/github-*.jsonl
  tapedeck unwrap github --client claude-desktop`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runWrap(s, args[0], f)
		},
	}
	f.add(cmd)
	return cmd
}

func newUnwrapCmd(s streams) *cobra.Command {
	var f wrapFlags
	cmd := &cobra.Command{
		Use:   "unwrap SERVER [--client CLIENT] [--config PATH]",
		Short: "Put back a server entry tapedeck wrap changed",
		Long: `unwrap undoes "tapedeck wrap SERVER": the entry's original bytes, kept in
CONFIG.tapedeck-wrap.json, are put back in place of the wrapped entry, so
the configuration is byte for byte what it was before wrap (changes made
elsewhere in it since are kept). The backup is then removed, and the file
too once it holds no other.

An entry changed since wrap is refused, saying what changed, unless
--force; a SERVER that is not there, not wrapped, or without a backup is
refused, and the file is left alone.

` + wrapClientsHelp,
		Example: `  tapedeck unwrap filesystem
  tapedeck unwrap fetch --client vscode
  tapedeck unwrap weather --config ~/work/app/.mcp.json --force`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runUnwrap(s, args[0], f)
		},
	}
	f.add(cmd)
	cmd.Flags().BoolVar(&f.force, "force", false, "put the original back even if the wrapped entry was changed since")
	return cmd
}

// wrapTarget decides which configuration to edit: --config, the default
// one of --client, or the first configuration that has server.
func wrapTarget(server string, f wrapFlags) (wrap.Candidate, string, error) {
	cwd, err := os.Getwd()
	if err != nil {
		return wrap.Candidate{}, "", err
	}
	var client wrap.Client
	if f.client != "" {
		if client, err = wrap.ParseClient(f.client); err != nil {
			return wrap.Candidate{}, "", fmt.Errorf("--client: %w", err)
		}
	}
	if f.config != "" {
		if client == "" {
			client = wrap.GuessClient(f.config)
		}
		return wrap.Candidate{Client: client, Path: f.config}, cwd, nil
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return wrap.Candidate{}, "", fmt.Errorf("no home directory to find the client's configuration in (%v); --config PATH names it", err)
	}
	env := wrap.Env{Home: home, ConfigDir: os.Getenv("XDG_CONFIG_HOME"), AppData: os.Getenv("APPDATA"), Cwd: cwd}
	clients := wrap.Clients()
	if client != "" {
		clients = []wrap.Client{client}
	}
	var cands []wrap.Candidate
	for _, c := range clients {
		for _, p := range wrap.DefaultPaths(c, env) {
			cands = append(cands, wrap.Candidate{Client: c, Path: p})
		}
	}
	if len(cands) == 1 {
		return cands[0], cwd, nil // its own errors say more
	}
	cand, err := wrap.Find(cands, cwd, server)
	return cand, cwd, err
}

func runWrap(s streams, server string, f wrapFlags) error {
	cand, cwd, err := wrapTarget(server, f)
	if err != nil {
		return fmt.Errorf("wrap: %w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("wrap: the path of this tapedeck binary, which the client is to run: %w", err)
	}
	res, err := wrap.WrapFile(cand.Path, cand.Client, cwd, server, exe)
	if err != nil {
		return fmt.Errorf("wrap: %w", err)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(s.stderr, "tapedeck: %s\n", n)
	}
	fmt.Fprintf(s.stdout, "wrapped %q (under %s) in %s%s: it now runs\n  %s\n", server, wrap.Place(res.Where), res.Config, clientNote(res.Client), shellJoin(res.Command))
	fmt.Fprintf(s.stdout, "restart the client to record its sessions with %q; tapes go to $XDG_STATE_HOME/tapedeck/tapes/ (~/.local/state/tapedeck/tapes/ by default)\n", server)
	fmt.Fprintf(s.stdout, "the original entry is kept in %s; \"tapedeck unwrap %s\" puts it back\n", res.Sidecar, server)
	return nil
}

func runUnwrap(s streams, server string, f wrapFlags) error {
	cand, cwd, err := wrapTarget(server, f)
	if err != nil {
		return fmt.Errorf("unwrap: %w", err)
	}
	res, err := wrap.UnwrapFile(cand.Path, cand.Client, cwd, server, f.force)
	if err != nil {
		return fmt.Errorf("unwrap: %w", err)
	}
	for _, n := range res.Notes {
		fmt.Fprintf(s.stderr, "tapedeck: %s\n", n)
	}
	fmt.Fprintf(s.stdout, "unwrapped %q in %s%s: its entry is as it was before tapedeck wrap; restart the client\n", server, res.Config, clientNote(res.Client))
	return nil
}

func clientNote(c wrap.Client) string {
	if c == "" {
		return ""
	}
	return " (" + string(c) + ")"
}

// shellJoin writes argv as a shell would need it typed.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
