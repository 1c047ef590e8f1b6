package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/check"
	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/internal/outfile"
	"github.com/tapedeck/tapedeck/tape"
)

type checkFlags struct {
	failOn, format, baseline string
	expect, forbid           []string
	baselineServers          []string
	maxDuration              time.Duration
	spec                     bool
}

func newCheckCmd(s streams) *cobra.Command {
	var f checkFlags
	var rules []string
	for _, r := range check.Rules {
		rules = append(rules, fmt.Sprintf("  %-20s %s", r.ID, r.Help))
	}
	cmd := &cobra.Command{
		Use:   "check TAPE... [--fail-on LIST] [--expect-tool NAME]... [--forbid-tool NAME]... [--max-duration D] [--baseline FILE [--baseline-server [TAPE_SERVER=]BASELINE_SERVER]...] [--format text|junit|sarif|github]",
		Short: "Assert things about recorded sessions, for CI",
		Long: `check reads tapes and reports what it finds, each finding with its tape,
line and message; it exits 1 when a finding's rule is in --fail-on (the
others are reported as notes). A tape it cannot read whole (changed, or
cut shorter by another process, while check reads it) is an error, with no
findings of the part read.

A failure is an exchange answered with a JSON-RPC error (rule error) or a
tool result with isError (rule tool-error). A server/discover probe that a
server from before 2026-07-28 rejected before initialize (-32601 method not
found, -32000 "not initialized", or an HTTP 4xx) is version negotiation, as
every current client sends it first: not a failure, and no finding.

Rules:
` + strings.Join(rules, "\n") + `

--fail-on takes a comma-separated list of rules (default ` + strings.Join(check.DefaultFailOn, ",") + `).
--baseline FILE (from tapedeck baseline save) finds drift: a tool, prompt or
resource added, removed or changed, field by field, on each server of the
tape the baseline has, by name. A tape none of whose servers the baseline
has is a drift finding of its own, which names the servers of both: the
baseline does not apply. To check a server named otherwise (an HTTP
recording is named after its host, an imported one after its command),
--baseline-server TAPE_SERVER=BASELINE_SERVER (repeatable) checks the tape's
server against the baseline's; --baseline-server BASELINE_SERVER checks the
only server of each tape (a tape with one server) against it.

A tape with a shadow lane (record --shadow, --shadow-cmd: the server
NAME~shadow) is checked on the recorded server's side only: the shadow's
own errors are not the session's. What the shadow answered otherwise than
the recorded server, by diff --shadow's rules, is the rule shadow: notes,
failures with --fail-on shadow.

--spec also holds each session to the MCP specification of the protocol
version it negotiated (the initialize result, or a 2026-07-28 request's
own _meta), on both sides: a client that breaks it is reported as a server
is. Its findings fail the check (the rule group spec, added to --fail-on
unless --fail-on is given; name spec or single spec/ rules there). Each
rule has its section of the specification (in SARIF, helpUri and help):
` + strings.Join(specRules(), "\n") + `

--format junit writes JUnit XML, sarif SARIF 2.1.0 (for code scanning),
github workflow annotations.`,
		Example: `  tapedeck check session.jsonl
  tapedeck check --fail-on error,tool-error,pending --expect-tool search tapes/*.jsonl
  tapedeck check --baseline tools.baseline.json --format sarif session.jsonl > check.sarif
  tapedeck check --baseline tools.baseline.json --baseline-server 127.0.0.1=everything http-session.jsonl
  tapedeck check --format github session.jsonl      # in a GitHub Actions step
  tapedeck check --spec --format sarif session.jsonl > spec.sarif`,
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
	cmd.Flags().StringArrayVar(&f.baselineServers, "baseline-server", nil, "check the tape's server TAPE_SERVER (without it, a tape's only server) against the baseline's server BASELINE_SERVER: `[TAPE_SERVER=]BASELINE_SERVER` (repeatable)")
	cmd.Flags().BoolVar(&f.spec, "spec", false, "check each session against the MCP specification of its negotiated version (rules spec/…)")
	cmd.Flags().StringVar(&f.format, "format", "text", "the report's `FORMAT`: text, junit, sarif or github")
	return cmd
}

// specRules lists check --spec's rules for --help.
func specRules() []string {
	var out []string
	for _, r := range check.SpecRules {
		out = append(out, fmt.Sprintf("  %-24s %s (%s %s)", r.ID, r.Help, r.Since, r.Path))
	}
	return out
}

func runCheck(s streams, tapes []string, f checkFlags) error {
	o := check.Options{ExpectTools: f.expect, ForbidTools: f.forbid, MaxDuration: f.maxDuration, Spec: f.spec}
	known := make([]string, 0, len(check.Rules))
	for _, r := range check.Rules {
		known = append(known, r.ID)
	}
	for _, r := range check.SpecRules {
		if !slices.Contains(known, r.ID) {
			known = append(known, r.ID)
		}
	}
	known = append(known, check.RuleSpec)
	if f.spec && f.failOn == strings.Join(check.DefaultFailOn, ",") {
		f.failOn += "," + check.RuleSpec
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
	if err := parseBaselineServers(&o, f.baselineServers); err != nil {
		return err
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
		fs, err := check.Tape(p, x, o)
		if err != nil {
			x.Close()
			return fmt.Errorf("check %s: %w", p, err)
		}
		all = append(all, fs...)
		if check.HasShadow(x) {
			path := p
			fs, err := check.Shadow(compare.Side{Name: p, Index: x, Open: func() (io.ReadCloser, error) { return tape.ReopenIndexed(x, path) }}, o)
			if err != nil {
				x.Close()
				return fmt.Errorf("check %s: the shadow lane: %w", p, err)
			}
			all = append(all, fs...)
		}
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

// parseBaselineServers reads --baseline-server into o: TAPE=BASELINE
// pairs, or one BASELINE for a tape's only server; each BASELINE must be
// a server of o.Baseline.
func parseBaselineServers(o *check.Options, specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	if o.Baseline == nil {
		return errors.New("--baseline-server: expected --baseline FILE as well, the baseline whose servers it names")
	}
	o.BaselineAs = map[string]string{}
	for _, spec := range specs {
		t, b, pair := strings.Cut(spec, "=")
		if !pair {
			t, b = "", spec
		}
		if b == "" || pair && t == "" {
			return fmt.Errorf("--baseline-server %q: expected TAPE_SERVER=BASELINE_SERVER or BASELINE_SERVER", spec)
		}
		if _, ok := o.Baseline.Servers[b]; !ok {
			return fmt.Errorf("--baseline-server %q: the baseline has no server %q; it has %s", spec, b, serverList(o.Baseline.ServerNames()))
		}
		switch {
		case !pair && o.BaselineOnly != "" && o.BaselineOnly != b:
			return fmt.Errorf("--baseline-server %q: a tape's only server is already checked against %q", spec, o.BaselineOnly)
		case !pair:
			o.BaselineOnly = b
		case o.BaselineAs[t] != "" && o.BaselineAs[t] != b:
			return fmt.Errorf("--baseline-server %q: the tape's server %q is already checked against %q", spec, t, o.BaselineAs[t])
		default:
			o.BaselineAs[t] = b
		}
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
			f, err := outfile.Create(out, outfile.Options{Perm: 0o644, Inputs: args[:1]})
			if err != nil {
				return err
			}
			defer f.Abort()
			if err := b.Write(f); err != nil {
				return err
			}
			return f.Commit()
		},
	}
	save.Flags().StringVarP(&out, "output", "o", "", "write the baseline to `FILE` (whole or not at all)")
	cmd.AddCommand(save)
	return cmd
}
