package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/internal/check"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/upstream"
)

func newVerifyCmd(s streams) *cobra.Command {
	var server, junit, color, url, instances string
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
recorded replies. Each response is compared with the recorded one by
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
and timestamps, requestState, and a poll's status while the task runs (a
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
1 when any instance differs from the tape or the instances disagree.`,
		Example: `  # is the server still answering as recorded?
  tapedeck verify session.jsonl -- node dist/index.js stdio

  # ignore a field that changes on each run, and keep a report for CI
  tapedeck verify --ignore result.content[0].text --junit verify.xml session.jsonl -- ./my-server

  # a Streamable HTTP server already running
  tapedeck verify session.jsonl --url http://127.0.0.1:8080/mcp

  # three instances at once: which one answers differently, and on what?
  tapedeck verify session.jsonl --instances http://a:8080/mcp,http://b:8080/mcp,http://c:8080/mcp

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
				return verifyInstances(cmd.Context(), s, x, server, urls, opts)
			}
			onCall := func(c upstream.CallResult) { printCall(s.stdout, c, paint) }
			var rep upstream.VerifyReport
			if url != "" {
				conn, err := dialURL(cmd.Context(), x, server, url)
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
	return cmd
}

// verifyStdio runs the server argv and verifies it over its pipes. When
// the exchange breaks because the server exited, the error says so, with
// its exit status and the last lines of its stderr.
func verifyStdio(ctx context.Context, s streams, x *tape.Index, argv []string, opts upstream.VerifyOptions, onCall func(upstream.CallResult)) (upstream.VerifyReport, error) {
	p, err := startServer(argv)
	if err != nil {
		return upstream.VerifyReport{}, err
	}
	defer p.stop()
	conn := upstream.NewStdioConn(p.stdin, p.stdout)
	defer conn.Close() // before stop: the server is drained while it stops
	rep, err := upstream.Verify(ctx, x, conn, opts, onCall)
	if err == nil || ctx.Err() != nil || errors.Is(err, upstream.ErrNoRequests) {
		return rep, err
	}
	// A broken pipe or the end of its stdout: most likely the server
	// exited. Give it a moment to be reaped.
	if p.exitedWithin(2 * time.Second) {
		return rep, fmt.Errorf("the server exited (%s) %s%s", p.cmd.ProcessState, whereStopped(rep), p.stderrTail())
	}
	return rep, fmt.Errorf("%w%s", err, p.stderrTail())
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

// serverProcess is a stdio server started by verify, in its own process
// group.
type serverProcess struct {
	cmd    *exec.Cmd
	stdin  *os.File
	stdout *os.File
	stderr *tailBuffer
	exited chan struct{} // closed once the process was waited for
}

// startServer starts argv with pipes for stdin and stdout, keeping the end
// of its stderr.
func startServer(argv []string) (*serverProcess, error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	p := &serverProcess{cmd: cmd, stderr: newTailBuffer(64 << 10), exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	// Pipes of our own, not StdinPipe and StdoutPipe: Wait closes those as
	// soon as the process exits, losing what it wrote last, and turning a
	// write to a server that exited into "file already closed".
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout = inR, outW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		return nil, fmt.Errorf("start server %s: %w", argv[0], err)
	}
	p.stdin, p.stdout = inW, outR
	go func() {
		cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// exitedWithin reports whether the process exits within d.
func (p *serverProcess) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// stderrTail returns the last lines of the server's stderr, introduced
// for an error message, or "" when it wrote none.
func (p *serverProcess) stderrTail() string {
	lines := p.stderr.lastLines(stderrLines)
	if len(lines) == 0 {
		return "; it wrote nothing on stderr"
	}
	return "; the last lines of its stderr:\n    " + strings.Join(lines, "\n    ")
}

// stop closes the server's stdin, waits, then signals its process group:
// SIGTERM, then SIGKILL.
func (p *serverProcess) stop() {
	p.stdin.Close()
	for _, sig := range []syscall.Signal{0, syscall.SIGTERM, syscall.SIGKILL} {
		if sig != 0 {
			syscall.Kill(-p.cmd.Process.Pid, sig)
		}
		if p.exitedWithin(2 * time.Second) {
			break
		}
	}
	p.stdout.Close()
}

// tailBuffer is an io.Writer that keeps the last max bytes written to it,
// safe for the goroutine os/exec copies a process's stderr with and a
// reader at once.
type tailBuffer struct {
	mu        sync.Mutex
	max       int
	buf       []byte
	truncated bool
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, b...)
	if len(t.buf) > 2*t.max {
		// Drop the front now and then, not on every write.
		t.buf = append(t.buf[:0], t.buf[len(t.buf)-t.max:]...)
		t.truncated = true
	}
	return len(b), nil
}

// String returns what is kept.
func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf)
}

// lastLines returns up to n of the last complete or final lines kept,
// without a line the size limit cut at its start.
func (t *tailBuffer) lastLines(n int) []string {
	t.mu.Lock()
	b, truncated := t.buf, t.truncated
	if len(b) > t.max {
		b, truncated = b[len(b)-t.max:], true
	}
	text := string(b)
	t.mu.Unlock()
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if truncated && len(lines) > 0 {
		lines = lines[1:] // cut at its start
	}
	if len(lines) == 1 && lines[0] == "" {
		return nil
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
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

type junitSuite struct {
	XMLName  xml.Name    `xml:"testsuite"`
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Time     float64     `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      float64       `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitSkipped struct {
	Message string `xml:"message,attr"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

func writeJUnit(path, tapeName string, rep *upstream.VerifyReport) error {
	suite := junitSuite{Name: "tapedeck verify " + tapeName + " (" + rep.Server + ")", Tests: len(rep.Calls)}
	for _, c := range rep.Calls {
		name := fmt.Sprintf("line %d %s", c.Line, c.Method)
		if c.Name != "" {
			name += " " + c.Name
		}
		jc := junitCase{Name: name, Classname: rep.Server, Time: c.Live.Seconds()}
		suite.Time += c.Live.Seconds()
		if !c.Pass {
			suite.Failures++
			var b strings.Builder
			printCall(&b, c, false)
			msg := c.Problem
			if msg == "" {
				msg = fmt.Sprintf("%d differences from the recorded response", len(c.Diff))
			}
			jc.Failure = &junitFailure{Message: msg, Text: b.String()}
		} else if c.Skipped != "" {
			suite.Skipped++
			jc.Skipped = &junitSkipped{Message: c.Skipped}
		}
		suite.Cases = append(suite.Cases, jc)
	}
	b, err := xml.MarshalIndent(suite, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644); err != nil {
		return fmt.Errorf("write JUnit report: %w", err)
	}
	return nil
}

// dialURL connects to the server at url the way the tape was recorded:
// the legacy HTTP+SSE transport for a tape with $http/endpoint records,
// Streamable HTTP otherwise.
func dialURL(ctx context.Context, x *tape.Index, server, url string) (interface {
	upstream.Conn
	Close() error
}, error) {
	name := server
	if name == "" && len(x.Servers()) == 1 {
		name = x.Servers()[0]
	}
	if _, legacy := replay.IsLegacySSE(x, name); legacy {
		return upstream.DialLegacy(ctx, url, nil)
	}
	return upstream.NewHTTPConn(url, nil), nil
}

// updateTape writes tape src to dst with each recorded answer that
// differed from the live server's replaced by the live one: its recorded
// id and _meta kept, every other line as recorded. dst may be src (then
// src is kept as src.bak).
func updateTape(stderr io.Writer, src, dst string, x *tape.Index, rep upstream.VerifyReport) error {
	repl := map[int][]byte{} // line number → the new line
	for _, c := range rep.Calls {
		if c.Pass || c.Answer == nil || c.Response < 0 {
			continue
		}
		m, err := x.Message(c.Response)
		if err != nil {
			return err
		}
		e := x.Entry(c.Response)
		answer := tape.StripMeta(c.Answer)
		if id, err := json.Marshal(json.RawMessage(m.ID)); err == nil && len(m.ID) > 0 {
			if a, err := sjson.SetRawBytes(answer, "id", id); err == nil {
				answer = a
			}
		}
		meta := tape.RecordMeta(m.Raw)
		line := answer
		if len(meta) > 0 {
			if l, err := sjson.SetRawBytes(answer, "_meta", meta); err == nil {
				line = l
			}
		}
		repl[e.Line] = line
	}
	if len(repl) == 0 {
		fmt.Fprintf(stderr, "tapedeck verify: every answer was as recorded; %s not written\n", dst)
		return nil
	}
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	var out bytes.Buffer
	for i, l := range bytes.SplitAfter(data, []byte("\n")) {
		if nl, ok := repl[i+1]; ok && bytes.HasPrefix(bytes.TrimSpace(l), []byte("[")) {
			fmt.Fprintf(stderr, "tapedeck verify: line %d holds a batch; its answer is left as recorded\n", i+1)
		} else if ok {
			out.Write(nl)
			out.WriteByte('\n')
			continue
		}
		out.Write(l)
	}
	if dst == src {
		if err := os.WriteFile(src+".bak", data, 0o600); err != nil {
			return fmt.Errorf("--in-place: keep %s.bak: %w", src, err)
		}
	}
	tmp := dst + ".tmp"
	if err := os.WriteFile(tmp, out.Bytes(), 0o600); err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "tapedeck verify: wrote %s with %s from the live server\n", dst, text.Plural(len(repl), "new answer"))
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
