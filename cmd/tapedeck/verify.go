package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/check"
	"github.com/tapedeck/tapedeck/internal/proc"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/upstream"
)

func newVerifyCmd(s streams) *cobra.Command {
	var server, junit, color, url, instances string
	var bearer, bearerEnv string
	var ignore []string
	var timeout time.Duration
	var concurrent bool
	var update, baselinePath string
	var inPlace bool
	cmd := &cobra.Command{
		Use:   "verify TAPE [flags] (-- CMD [ARGS...] | --url URL | --instances URL1,URL2,…)",
		Short: "Drive a live server with a tape's client side and compare its answers",
		Long: `verify starts the server CMD over stdio, or connects to the Streamable HTTP
server at --url, and sends it the client messages of the tape's server, in
recorded order, one request at a time, with ids of its own. With
--concurrent, requests the tape shows were sent before an earlier one was
answered (a client's parallel calls) are sent without waiting for it, and
answers are matched by id: slower, racier servers are exercised as the
recorded client did; the default is deterministic. Over HTTP it
keeps the session the server issues, opens the standalone GET stream after
initialization, and ends the session with DELETE. The server's own
requests (roots/list, sampling, elicitation) are answered with the
recorded replies, and each message waits (up to 5 s) until the live server
has asked the requests the tape shows it asked before that message (a
roots/list after the client's roots list_changed). Each response is compared with the recorded one by
meaning: key order, whitespace, ids and _meta do not count; --ignore drops
fields that vary from run to run (timestamps, ids of things). A
server/discover probe the recorded server rejected before initialize
(-32601 method not found, -32000 "not initialized", or an HTTP 4xx: a
server from before 2026-07-28) is version negotiation, not a failure: it
passes whether the live server rejects it too, in its own transport's way,
or answers it.

Tasks: a task's reads (tasks/get, tasks/result) go at the recorded pace
and carry the live task id, learnt from the live CreateTaskResult (an
input_required retry likewise carries the live requestState). Task ids
and timestamps (in tasks/list answers too), requestState, and a poll's status while the task runs (a
snapshot of when the poll came) do not count; a poll recorded with the
task's terminal status is asked again every pollInterval until the live
task ends or --timeout passes, and fails if it ends otherwise.

verify prints PASS or FAIL per call with the latency against the recorded
one, and for a failure the differences as JSON pointers with the expected
and the actual values (in colour when stdout is a terminal, or with
--color=always). --junit writes a JUnit XML report for CI. The exit status
is 1 when any call differs.

--instances URL1,URL2,… drives several Streamable HTTP instances of a
server at once, each on its own session: it prints each instance's verdict
against the tape, then each call the instances answered differently from
one another (SPLIT), with the instances that answered alike (the largest
group first) and how each other group differs from them. The exit status is
1 when any instance differs from the tape or the instances disagree.

An OAuth-protected server (--url, --instances) is sent a bearer token:
--bearer-env VAR reads it from the environment (--bearer TOKEN works too,
but the command line is visible to other users of the machine). The token
goes only to the server's host, in the Authorization header; it is never
printed, written to a report or to the tape. A request the tape shows
refused by an authorization challenge (the client then retried it with a
token) is not sent (SKIP). A call the live server refuses with HTTP 401 or
403 fails with the challenge it sent.`,
		Example: `  # is the server still answering as recorded?
  tapedeck verify session.jsonl -- node dist/index.js stdio

  # ignore a field that changes on each run, and keep a report for CI
  tapedeck verify --ignore result.content[0].text --junit verify.xml session.jsonl -- ./my-server

  # a Streamable HTTP server already running
  tapedeck verify session.jsonl --url http://127.0.0.1:8080/mcp

  # three instances at once: which one answers differently, and on what?
  tapedeck verify session.jsonl --instances http://a:8080/mcp,http://b:8080/mcp,http://c:8080/mcp

  # an OAuth-protected server, with a token obtained beforehand
  MCP_TOKEN=... tapedeck verify session.jsonl --url https://mcp.example.com/mcp --bearer-env MCP_TOKEN

  # send the calls the client made in parallel in parallel again
  tapedeck verify --concurrent session.jsonl -- ./my-server`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dash := cmd.ArgsLenAtDash()
			switch {
			case instances != "" && (url != "" || dash >= 0 || len(args) != 1):
				return fmt.Errorf("expected TAPE --instances URL1,URL2,…, found %d arguments, a command or --url: give --instances alone", len(args))
			case instances != "":
			case url != "" && (dash >= 0 || len(args) != 1):
				return fmt.Errorf("expected TAPE --url URL, found %d arguments and a command: give --url or -- CMD, not both", len(args))
			case url == "" && (dash != 1 || len(args) < 2):
				return fmt.Errorf("expected TAPE -- CMD [ARGS...] or TAPE --url URL, found %d argument(s) before -- and no command", max(dash, len(args)))
			}
			client, err := bearerClient(bearer, bearerEnv, url, instances)
			if err != nil {
				return err
			}
			paint, err := colorEnabled(color, s.stdout)
			if err != nil {
				return err
			}
			ignores, err := parseIgnores(ignore)
			if err != nil {
				return err
			}
			x, err := indexTape(s.stderr, args[0])
			if err != nil {
				return err
			}
			defer x.Close()

			opts := upstream.VerifyOptions{Server: server, Ignore: ignores, Timeout: timeout, Concurrent: concurrent}
			if instances != "" {
				urls, err := parseInstances(instances)
				if err != nil {
					return err
				}
				return verifyInstances(cmd.Context(), s, x, server, urls, client, opts)
			}
			onCall := func(c upstream.CallResult) { printCall(s.stdout, c, paint) }
			var rep upstream.VerifyReport
			if url != "" {
				conn, err := dialURL(cmd.Context(), x, server, url, client)
				if err != nil {
					return err
				}
				rep, err = upstream.Verify(cmd.Context(), x, conn, opts, onCall)
				if cerr := conn.Close(); err == nil && cerr != nil {
					fmt.Fprintf(s.stderr, "tapedeck verify: %v\n", cerr)
				}
				if err != nil {
					return err
				}
			} else {
				rep, err = verifyStdio(cmd.Context(), s, x, args[1:], opts, onCall)
			}
			if err != nil {
				return err
			}
			if baselinePath != "" {
				if err := verifyBaseline(s.stdout, baselinePath, rep); err != nil {
					return err
				}
			}
			if update != "" || inPlace {
				out := update
				if inPlace {
					out = args[0]
				}
				if err := updateTape(s.stderr, args[0], out, x, rep); err != nil {
					return err
				}
				return nil // the tape now holds what the server answers
			}
			return finishVerify(s, &rep, args[0], junit)
		},
	}
	cmd.Flags().StringVar(&baselinePath, "baseline", "", "fail when the live server's tools, prompts or resources differ from the baseline `FILE` (tapedeck baseline save)")
	cmd.Flags().StringVar(&update, "update", "", "write the tape with the live answers that differed to `FILE` (every other byte as recorded)")
	cmd.Flags().BoolVar(&inPlace, "in-place", false, "with the live answers that differed, rewrite TAPE itself, keeping the old one as TAPE.bak")
	cmd.Flags().StringVar(&server, "server", "", "verify the tape's server `NAME` (needed when it holds several)")
	cmd.Flags().StringArrayVar(&ignore, "ignore", nil, "ignore the JSON `PATH` when comparing, e.g. result.content[0].text (repeatable)")
	cmd.Flags().StringVar(&junit, "junit", "", "write a JUnit XML report to `FILE`")
	cmd.Flags().StringVar(&color, "color", "auto", "colour the diffs: `MODE` is auto (when stdout is a terminal), always or never")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for each response")
	cmd.Flags().BoolVar(&concurrent, "concurrent", false, "send requests recorded as overlapping without waiting for the earlier answers")
	cmd.Flags().StringVar(&instances, "instances", "", "verify the Streamable HTTP servers at the endpoints `URL1,URL2,…` at once, each against the tape and against each other")
	cmd.Flags().StringVar(&url, "url", "", "verify the Streamable HTTP server at the endpoint `URL` instead of a command")
	cmd.Flags().StringVar(&bearer, "bearer", "", "with --url or --instances, send the OAuth access `TOKEN` (Authorization: Bearer); never printed or written")
	cmd.Flags().StringVar(&bearerEnv, "bearer-env", "", "like --bearer, with the token read from the environment variable `VAR` (kept off the command line)")
	return cmd
}

// verifyStdio runs the server argv and verifies it over its pipes. When
// the exchange breaks because the server exited, the error says so, with
// its exit status and the last lines of its stderr.
func verifyStdio(ctx context.Context, s streams, x *tape.Index, argv []string, opts upstream.VerifyOptions, onCall func(upstream.CallResult)) (upstream.VerifyReport, error) {
	p, err := proc.Start(proc.Spec{Command: argv[0], Args: argv[1:], Tail: 64 << 10})
	if err != nil {
		return upstream.VerifyReport{}, fmt.Errorf("start server %s: %w", argv[0], err)
	}
	defer p.Stop(2*time.Second, 2*time.Second)
	conn := upstream.NewStdioConn(p.Stdin, p.Stdout)
	defer conn.Close() // before Stop: the server is drained while it stops
	rep, err := upstream.Verify(ctx, x, conn, opts, onCall)
	if err == nil || ctx.Err() != nil || errors.Is(err, upstream.ErrNoRequests) {
		return rep, err
	}
	// A broken pipe or the end of its stdout: most likely the server
	// exited. Give it a moment to be reaped.
	if p.ExitedWithin(2 * time.Second) {
		return rep, fmt.Errorf("the server exited (%s) %s%s", p.State(), whereStopped(rep), stderrTail(p))
	}
	return rep, fmt.Errorf("%w%s", err, stderrTail(p))
}

// whereStopped says how far verify got.
func whereStopped(rep upstream.VerifyReport) string {
	if len(rep.Calls) == 0 {
		return "before verify sent it a request"
	}
	c := rep.Calls[len(rep.Calls)-1]
	return fmt.Sprintf("after %d of the tape's requests, at %s (tape line %d)", len(rep.Calls), c.Method, c.Line)
}

// stderrLines is how many of the server's last stderr lines an error shows.
const stderrLines = 20

// stderrTail returns the last lines of the server's stderr, introduced
// for an error message, or "" when it wrote none.
func stderrTail(p *proc.Process) string {
	lines := p.StderrTail(stderrLines)
	if len(lines) == 0 {
		return "; it wrote nothing on stderr"
	}
	return "; the last lines of its stderr:\n    " + strings.Join(lines, "\n    ")
}

// finishVerify prints the summary, writes the JUnit report if asked, and
// returns the verdict.
func finishVerify(s streams, rep *upstream.VerifyReport, tapePath, junit string) error {
	fail, skip := 0, 0
	for _, c := range rep.Calls {
		switch {
		case !c.Pass:
			fail++
		case c.Skipped != "":
			skip++
		}
	}
	summary := fmt.Sprintf("%d calls, %d passed, %d failed", len(rep.Calls), len(rep.Calls)-fail-skip, fail)
	if skip > 0 {
		summary += fmt.Sprintf(", %d skipped", skip)
	}
	fmt.Fprintln(s.stdout, summary)
	if junit != "" {
		if err := writeJUnit(junit, tapePath, rep); err != nil {
			return err
		}
	}
	if err := rep.Err(); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

func colorEnabled(mode string, out io.Writer) (bool, error) {
	switch mode {
	case "always":
		return true, nil
	case "never":
		return false, nil
	case "auto":
		if u, ok := out.(interface{ Unwrap() io.Writer }); ok {
			out = u.Unwrap()
		}
		f, ok := out.(*os.File)
		if !ok {
			return false, nil
		}
		st, err := f.Stat()
		return err == nil && st.Mode()&os.ModeCharDevice != 0, nil
	}
	return false, fmt.Errorf("--color=%s: expected auto, always or never", mode)
}

const (
	ansiRed    = "\x1b[31m"
	ansiGreen  = "\x1b[32m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

func printCall(w io.Writer, c upstream.CallResult, paint bool) {
	verdict, col := "PASS", ansiGreen
	switch {
	case !c.Pass:
		verdict, col = "FAIL", ansiRed
	case c.Skipped != "":
		verdict, col = "SKIP", ansiYellow
	}
	if paint {
		verdict = col + verdict + ansiReset
	}
	name := c.Method
	if c.Name != "" {
		name += " " + c.Name
	}
	if c.Skipped != "" {
		fmt.Fprintf(w, "%s %s (line %d)  %s\n", verdict, name, c.Line, c.Skipped)
		return
	}
	delta := c.Live - c.Recorded
	fmt.Fprintf(w, "%s %s (line %d)  %v, recorded %v (%+v)\n", verdict, name, c.Line, c.Live.Round(time.Microsecond), c.Recorded, delta.Round(time.Microsecond))
	if c.Problem != "" {
		fmt.Fprintf(w, "    %s\n", c.Problem)
	}
	if c.Negotiation != "" {
		fmt.Fprintf(w, "    %s\n", c.Negotiation)
	}
	if c.Polls > 0 {
		fmt.Fprintf(w, "    the task's status asked %s more until it ended\n", text.Plural(c.Polls, "time"))
	}
	for _, d := range c.Diff {
		exp, act := d.ExpectedJSON(), d.ActualJSON()
		if paint {
			exp, act = ansiRed+exp+ansiReset, ansiGreen+act+ansiReset
		}
		switch d.Op {
		case "add":
			fmt.Fprintf(w, "    %s: unexpected %s\n", d.Path, act)
		case "remove":
			fmt.Fprintf(w, "    %s: missing, expected %s\n", d.Path, exp)
		default:
			fmt.Fprintf(w, "    %s:\n      - %s\n      + %s\n", d.Path, exp, act)
		}
	}
}

// writeJUnit writes verify's JUnit report: one suite for the server, a
// case a call.
func writeJUnit(path, tapeName string, rep *upstream.VerifyReport) error {
	suite := check.JUnitSuite{Name: "tapedeck verify " + tapeName + " (" + rep.Server + ")", Tests: len(rep.Calls)}
	for _, c := range rep.Calls {
		name := fmt.Sprintf("line %d %s", c.Line, c.Method)
		if c.Name != "" {
			name += " " + c.Name
		}
		jc := check.JUnitCase{Name: name, Classname: rep.Server, Time: c.Live.Seconds()}
		suite.Time += c.Live.Seconds()
		if !c.Pass {
			suite.Failures++
			var b strings.Builder
			printCall(&b, c, false)
			msg := c.Problem
			if msg == "" {
				msg = fmt.Sprintf("%d differences from the recorded response", len(c.Diff))
			}
			jc.Failure = &check.JUnitFailure{Message: msg, Text: b.String()}
		} else if c.Skipped != "" {
			suite.Skipped++
			jc.Skipped = &check.JUnitSkipped{Message: c.Skipped}
		}
		suite.Cases = append(suite.Cases, jc)
	}
	var b bytes.Buffer
	if err := check.EncodeJUnit(&b, []check.JUnitSuite{suite}); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

// bearerClient returns the HTTP client that sends --bearer's or
// --bearer-env's token to the host of each URL verify connects to, or nil
// (http.DefaultClient) when neither is given. The token is in no error.
func bearerClient(bearer, env, url, instances string) (*http.Client, error) {
	switch {
	case bearer != "" && env != "":
		return nil, errors.New("expected one of --bearer and --bearer-env, found both")
	case bearer == "" && env == "":
		return nil, nil
	case url == "" && instances == "":
		return nil, errors.New("--bearer and --bearer-env are for an HTTP server: give --url or --instances")
	}
	token := bearer
	if env != "" {
		token = os.Getenv(env)
		if token == "" {
			return nil, fmt.Errorf("--bearer-env %s: expected a token in the environment variable %s, found it unset or empty", env, env)
		}
	}
	urls := []string{url}
	if instances != "" {
		urls = strings.Split(instances, ",")
	}
	hosts := map[string]bool{}
	for _, u := range urls {
		pu, err := neturl.Parse(strings.TrimSpace(u))
		if err != nil || pu.Host == "" {
			continue // the URL's own check says what is wrong with it
		}
		hosts[pu.Host] = true
	}
	return upstream.BearerClient(hosts, token), nil
}

// dialURL connects to the server at url the way the tape was recorded:
// the legacy HTTP+SSE transport for a tape with $http/endpoint records,
// Streamable HTTP otherwise. client nil means http.DefaultClient.
func dialURL(ctx context.Context, x *tape.Index, server, url string, client *http.Client) (interface {
	upstream.Conn
	Close() error
}, error) {
	name := server
	if name == "" && len(x.Servers()) == 1 {
		name = x.Servers()[0]
	}
	if _, legacy := replay.IsLegacySSE(x, name); legacy {
		return upstream.DialLegacy(ctx, url, client)
	}
	return upstream.NewHTTPConn(url, client), nil
}

// updateTape writes tape src to dst with the live answers that differed
// (upstream.UpdateTape) and says what it did.
func updateTape(stderr io.Writer, src, dst string, x *tape.Index, rep upstream.VerifyReport) error {
	res, err := upstream.UpdateTape(src, dst, x, rep)
	for _, line := range res.Batches {
		fmt.Fprintf(stderr, "tapedeck verify: line %d holds a batch; its answer is left as recorded\n", line)
	}
	if err != nil {
		return err
	}
	switch {
	case res.Replaced == 0 && len(res.Batches) > 0:
		fmt.Fprintf(stderr, "tapedeck verify: no answer that differed could be replaced; %s not written\n", dst)
		return nil
	case res.Replaced == 0:
		fmt.Fprintf(stderr, "tapedeck verify: every answer was as recorded; %s not written\n", dst)
		return nil
	}
	fmt.Fprintf(stderr, "tapedeck verify: wrote %s with %s from the live server\n", dst, text.Plural(res.Replaced, "new answer"))
	return nil
}

// verifyBaseline fails when the definitions in the live server's answers
// to the tape's list requests drifted from the baseline.
func verifyBaseline(w io.Writer, path string, rep upstream.VerifyReport) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("--baseline: %w", err)
	}
	b, err := check.ReadBaseline(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("--baseline %s: %w", path, err)
	}
	answers := map[string][]byte{}
	for _, c := range rep.Calls {
		if c.Answer != nil {
			answers[c.Method] = c.Answer
		}
	}
	drift := b.DriftOfAnswers(rep.Server, answers)
	for _, d := range drift {
		fmt.Fprintf(w, "DRIFT %s\n", d)
	}
	if len(drift) > 0 {
		return &exitError{code: 1, err: fmt.Errorf("verify: the server's definitions drifted from %s: %s", path, text.Plural(len(drift), "change"))}
	}
	return nil
}
