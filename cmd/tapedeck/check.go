package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/check"
)

type checkFlags struct {
	failOn, format, baseline string
	expect, forbid           []string
	maxDuration              time.Duration
}

func newCheckCmd(s streams) *cobra.Command {
	var f checkFlags
	var rules []string
	for _, r := range check.Rules {
		rules = append(rules, fmt.Sprintf("  %-20s %s", r.ID, r.Help))
	}
	cmd := &cobra.Command{
		Use:   "check TAPE... [--fail-on LIST] [--expect-tool NAME]... [--forbid-tool NAME]... [--max-duration D] [--baseline FILE] [--format text|junit|sarif|github]",
		Short: "Assert things about recorded sessions, for CI",
		Long: `check reads tapes and reports what it finds, each finding with its tape,
line and message; it exits 1 when a finding's rule is in --fail-on (the
others are reported as notes).

A failure is an exchange answered with a JSON-RPC error (rule error) or a
tool result with isError (rule tool-error). A server/discover probe that a
server from before 2026-07-28 rejected before initialize (-32601 method not
found, -32000 "not initialized", or an HTTP 4xx) is version negotiation, as
every current client sends it first: not a failure, and no finding.

Rules:
` + strings.Join(rules, "\n") + `

--fail-on takes a comma-separated list of rules (default ` + strings.Join(check.DefaultFailOn, ",") + `).
--baseline FILE (from tapedeck baseline save) finds drift: a tool, prompt or
resource added, removed or changed, field by field. --format junit writes
JUnit XML, sarif SARIF 2.1.0 (for code scanning), github workflow
annotations.`,
		Example: `  tapedeck check session.jsonl
  tapedeck check --fail-on error,tool-error,pending --expect-tool search tapes/*.jsonl
  tapedeck check --baseline tools.baseline.json --format sarif session.jsonl > check.sarif
  tapedeck check --format github session.jsonl      # in a GitHub Actions step`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCheck(s, args, f)
		},
	}
	cmd.Flags().StringVar(&f.failOn, "fail-on", strings.Join(check.DefaultFailOn, ","), "the rules whose findings fail the check, comma-separated (`LIST`)")
	cmd.Flags().StringArrayVar(&f.expect, "expect-tool", nil, "fail unless the tool `NAME` was called (repeatable)")
	cmd.Flags().StringArrayVar(&f.forbid, "forbid-tool", nil, "fail when the tool `NAME` was called (repeatable)")
	cmd.Flags().DurationVar(&f.maxDuration, "max-duration", 0, "fail on a call slower than `D`")
	cmd.Flags().StringVar(&f.baseline, "baseline", "", "find drift from the definitions in `FILE` (tapedeck baseline save)")
	cmd.Flags().StringVar(&f.format, "format", "text", "the report's `FORMAT`: text, junit, sarif or github")
	return cmd
}

func runCheck(s streams, tapes []string, f checkFlags) error {
	o := check.Options{ExpectTools: f.expect, ForbidTools: f.forbid, MaxDuration: f.maxDuration}
	known := make([]string, 0, len(check.Rules))
	for _, r := range check.Rules {
		known = append(known, r.ID)
	}
	for _, r := range strings.Split(f.failOn, ",") {
		if r = strings.TrimSpace(r); r == "" {
			continue
		}
		if !slices.Contains(known, r) {
			return fmt.Errorf("--fail-on %q: expected rules among %s", r, strings.Join(known, ", "))
		}
		o.FailOn = append(o.FailOn, r)
	}
	if f.baseline != "" {
		b, err := os.Open(f.baseline)
		if err != nil {
			return fmt.Errorf("--baseline: %w", err)
		}
		o.Baseline, err = check.ReadBaseline(b)
		b.Close()
		if err != nil {
			return fmt.Errorf("--baseline %s: %w", f.baseline, err)
		}
	}
	switch f.format {
	case "text", "junit", "sarif", "github":
	default:
		return fmt.Errorf("--format %q: expected text, junit, sarif or github", f.format)
	}
	var all []check.Finding
	for _, p := range tapes {
		x, err := indexTape(s.stderr, p)
		if err != nil {
			return err
		}
		all = append(all, check.Tape(p, x, o)...)
		x.Close()
	}
	var err error
	switch f.format {
	case "text":
		err = check.WriteText(s.stdout, all, tapes)
	case "junit":
		err = check.WriteJUnit(s.stdout, all, tapes)
	case "sarif":
		err = check.WriteSARIF(s.stdout, all, buildVersion())
	case "github":
		err = check.WriteGitHub(s.stdout, all)
	}
	if err != nil {
		return err
	}
	if check.Failed(all) {
		return &exitError{code: 1}
	}
	return nil
}

func newBaselineCmd(s streams) *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "baseline",
		Short: "Fingerprint a server's tool definitions, for drift checks",
	}
	save := &cobra.Command{
		Use:   "save TAPE -o BASELINE",
		Short: "Write the definitions a tape last listed, for check --baseline",
		Long: `baseline save fingerprints every server's tools, prompts, resources and
resource templates as the tape last listed them (names, descriptions, input
and output schemas, annotations; in canonical JSON) and writes them to
BASELINE. tapedeck check --baseline BASELINE then fails on any change, and
prints what changed, field by field.`,
		Example: `  tapedeck baseline save golden.jsonl -o tools.baseline.json
  tapedeck check --baseline tools.baseline.json new-run.jsonl`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("baseline save: expected -o BASELINE, the file to write")
			}
			x, err := indexTape(s.stderr, args[0])
			if err != nil {
				return err
			}
			defer x.Close()
			b := check.NewBaseline(x)
			if len(b.Servers) == 0 {
				return fmt.Errorf("baseline save %s: the tape lists no tools, prompts or resources to fingerprint", args[0])
			}
			f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
			if err != nil {
				return err
			}
			if err := b.Write(f); err != nil {
				f.Close()
				return err
			}
			return f.Close()
		},
	}
	save.Flags().StringVarP(&out, "output", "o", "", "write the baseline to `FILE`")
	cmd.AddCommand(save)
	return cmd
}
