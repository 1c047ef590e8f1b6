package main

import (
	"context"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/text"
)

// version is set at build time with -ldflags "-X main.version=..."; without
// it the module version from the build info is used.
var version = ""

func buildVersion() string {
	bi, _ := debug.ReadBuildInfo()
	v, _ := describeBuild(version, bi)
	return v
}

// describeBuild says which tapedeck this is: the version set with -ldflags,
// else the module's (a release, or the pseudo-version go build gives a
// git checkout), else "(devel)" with the revision when the build knows
// it; and, for tapedeck version, the VCS revision, its time, and whether
// the work tree was modified (go build stamps them unless
// -buildvcs=false).
func describeBuild(ldflags string, bi *debug.BuildInfo) (short, long string) {
	vcs := map[string]string{}
	short = "(devel)"
	if bi != nil {
		for _, s := range bi.Settings {
			vcs[s.Key] = s.Value
		}
		if bi.Main.Version != "" {
			short = bi.Main.Version
		}
	}
	rev, modified := vcs["vcs.revision"], vcs["vcs.modified"] == "true"
	if short == "(devel)" && rev != "" {
		short += " " + rev[:min(12, len(rev))]
		if modified {
			short += "+dirty"
		}
	}
	if ldflags != "" {
		short = ldflags
	}
	long = short
	if rev != "" {
		long += ", revision " + rev
		if t := vcs["vcs.time"]; t != "" {
			long += " of " + t
		}
		if modified {
			long += ", modified"
		}
	} else {
		long += ", no VCS revision (built with -buildvcs=false or outside a git checkout)"
	}
	if bi != nil && bi.GoVersion != "" {
		long += ", " + bi.GoVersion
	}
	return short, long
}

// streams are the process's standard streams, passed to every command.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// run builds the command tree and executes it with args.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	root := newRootCmd(streams{stdin, stdout, stderr})
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	return root.ExecuteContext(ctx)
}

func newRootCmd(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "tapedeck",
		Short: "Record, replay and step through MCP sessions",
		Long: `tapedeck records Model Context Protocol sessions to tapes, serves them back
as if it were the server, checks live servers against them, and steps
through them in a terminal debugger.

A tape is NDJSON, one JSON-RPC message a line with a "_meta" object
{dir, server, ts}: the format mcporter records, so tapes move between the two.`,
		Example: `  tapedeck stats session.jsonl          # what a tape holds, per server and method
  tapedeck stats --json session.jsonl   # the same for scripts
  tapedeck open session.jsonl           # step through it in the terminal debugger
  tapedeck                              # in a terminal: the library's tapes (or the demo, with none yet)
  tapedeck demo                         # the debugger on the demo tape`,
		Args: cobra.NoArgs,
		// Bare "tapedeck" in a terminal opens the sessions view on the
		// library's tapes, or the debugger on the demo tape when there is
		// none yet; anywhere else (a pipe, CI) it prints help.
		RunE: func(cmd *cobra.Command, _ []string) error {
			if isTerminal(s.stdin, s.stdout) {
				return runSessions(cmd.Context(), s)
			}
			return cmd.Help()
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       buildVersion(),
	}
	// Text made from tapes and peers is printed through termtext, so an
	// escape sequence in a tape cannot drive the terminal: report and
	// diagnostics streams are escaped; what carries protocol or a peer's own
	// output (replay's and attach's stdout, record's passthrough, redact's
	// tape on stdout, the TUI) is left alone.
	report := streams{s.stdin, text.NewWriter(s.stdout), text.NewWriter(s.stderr)}
	diag := streams{s.stdin, s.stdout, text.NewWriter(s.stderr)}
	root.AddCommand(
		newVersionCmd(s),
		newStatsCmd(report),
		newExportCmd(diag),
		newImportCmd(diag),
		newDiffCmd(report),
		newCheckCmd(report),
		newBaselineCmd(diag),
		newRecordCmd(s),
		newWrapCmd(report), newUnwrapCmd(report),
		newRedactCmd(diag),
		newReplayCmd(diag),
		newVerifyCmd(report),
		newOpenCmd(s),
		newDemoCmd(s),
		newDebugCmd(diag),
		newAttachCmd(diag),
		newLsCmd(report),
		newSearchCmd(report),
		newPruneCmd(report),
		newMCPCmd(diag),
		newRulesHelpTopic(),
	)
	// cobra's own completion command, made now so it gets examples too; it
	// takes its output stream when made, so the streams are set first.
	root.SetIn(s.stdin)
	root.SetOut(s.stdout)
	root.SetErr(s.stderr)
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Example = `  source <(tapedeck completion bash)                      # this shell
  tapedeck completion bash > /etc/bash_completion.d/tapedeck
  tapedeck completion zsh > "${fpath[1]}/_tapedeck"
  tapedeck completion fish > ~/.config/fish/completions/tapedeck.fish`
	}
	return root
}

func newVersionCmd(s streams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print tapedeck's version",
		Long: `version prints the module version (a release, or the pseudo-version go
build gives a git checkout), the VCS revision with its time and whether the
work tree was modified, and the Go version, from the build information.`,
		Example: "  tapedeck version   # tapedeck v0.0.0-20261125234502-6781ccfa8f14, revision 6781ccfa8f14... of 2026-11-25T23:45:02Z, go1.26.8",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			bi, _ := debug.ReadBuildInfo()
			_, long := describeBuild(version, bi)
			_, err := io.WriteString(s.stdout, "tapedeck "+long+"\n")
			return err
		},
	}
}
