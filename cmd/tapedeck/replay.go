package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/charmbracelet/x/term"
	"github.com/spf13/cobra"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/upstream"
)

// replayFlags are the flags of replay.
type replayFlags struct {
	server  string
	rules   rulesFlags
	match   string
	speed   float64
	maxWait time.Duration
	exact   bool
	ignore  []string
	report  string
	// --fallback: the live server's command (after --), and where its
	// exchanges go (default: appended to the tape).
	fallback    bool
	fallbackCmd []string
	fallbackURL string
	ruleSet     *rules.Set
	episodes    string
	reorder     int
	// reorderSet is true when --reorder was given; its default depends on
	// the transport.
	reorderSet bool

	listen      string
	auth        string
	path        string
	pathSet     bool // --path was given (a legacy tape's stream is at /sse otherwise)
	allowRemote bool
	origins     []string
	hosts       []string
	maxBody     string
}

func (f *replayFlags) options() (replay.EngineOptions, error) {
	mode, err := replay.ParseMode(f.match)
	if err != nil {
		return replay.EngineOptions{}, err
	}
	ignore, err := parseIgnores(f.ignore)
	if err != nil {
		return replay.EngineOptions{}, err
	}
	if f.speed < 0 {
		return replay.EngineOptions{}, fmt.Errorf("--speed %v: expected 0 (instant) or a positive factor", f.speed)
	}
	reorder := f.reorder
	switch {
	case reorder < 0:
		return replay.EngineOptions{}, fmt.Errorf("--reorder %d: expected a window of 0 or more recorded requests", reorder)
	case !f.reorderSet && f.listen != "":
		reorder = httpReorder
	}
	if f.maxWait < 0 {
		return replay.EngineOptions{}, fmt.Errorf("--max-wait %v: expected a duration of 0 or more (0: no cap)", f.maxWait)
	}
	maxWait := f.maxWait
	if maxWait == 0 {
		maxWait = -1 // the flag's 0 means no cap; the engine's, its default
	}
	return replay.EngineOptions{Server: f.server, Mode: mode, Ignore: ignore, Speed: f.speed, Reorder: reorder, MaxWait: maxWait, Exact: f.exact}, nil
}

// httpReorder is --reorder's default over HTTP, where a client's
// concurrent requests are separate POSTs that race.
const httpReorder = 4

func parseIgnores(specs []string) ([]tape.Path, error) {
	var out []tape.Path
	for _, s := range specs {
		p, err := tape.ParsePath(s)
		if err != nil {
			return nil, fmt.Errorf("--ignore: %w", err)
		}
		out = append(out, p)
	}
	return out, nil
}

func newReplayCmd(s streams) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:     "replay TAPE",
		Short:   "Serve a tape as an MCP server, failing loudly where the client departs from it",
		Long:    replayLong,
		Example: replayExample,
		Args:    f.args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.resolve(cmd); err != nil {
				return err
			}
			return runReplay(cmd.Context(), s, &f, args[0])
		},
	}
	f.add(cmd)
	return cmd
}

const replayLong = `replay serves the server side of a tape to a live MCP client, over stdio (the
client launches "tapedeck replay TAPE" in place of the real server), or over
Streamable HTTP with --listen. No live server is contacted.

Responses are the recorded bytes with the live request's id spliced in;
recorded server notifications and server requests (roots/list, sampling,
elicitation) are sent in their recorded order, and the client's replies are
checked too. initialize tolerates another protocolVersion, capabilities and
clientInfo, and answers with the client's protocolVersion; a server/discover
probe against a tape recorded without one gets "method not found", as the
older server answered, so the client falls back to initialize; and a tape
whose client probed server/discover in vain before initialize serves a client
that starts with initialize.

A tape recorded over stdio holds an episode each time the client started the
server (a $transport/start record). Over stdio, each replay process serves
the first episode whose first request has the method of the client's first
request: the 2026-07-28 TypeScript client, which starts the server once for
its server/discover probe and once for the session, gets the probe episode in
its first process and the session in its second. Unused requests and
divergences count within that episode only. When no episode's first request
has that method, the whole tape is served.

Matching modes (--match):
  strict  (default, mcporter's semantics) each request must be the next
          recorded one of the server: same method, params equal by meaning
  keyed   (Shadow's semantics) requests are looked up by (method, params);
          identical calls are served in recorded order; an unknown call or
          one repeated more often than recorded diverges
  loose   keyed, but repeats reuse the last response and unknown calls get
          an error (code -32091) that does not fail the replay

A divergence is answered with a JSON-RPC error, code -32090, whose message
names the request received and the one expected, and whose data holds a
structured diff (JSON pointers with expected and actual values). Every
divergence is printed on stderr and, with --report, written to a JSON file
with the recorded requests left unused. The exit status is 1 when any
divergence or unused request remains (a request a rule answered counts as
sent: see Rules). A task's tasks/get polls and its tasks/result are not
matched one for one: poll k gets the k-th recorded status (the last once
they run out; with --speed, the status recorded at that point of the run),
tasks/result is answered whenever it comes, and polls made more or fewer
times than recorded are neither divergences nor unused.

Over stdio, the lines the recorded server wrote on its stderr are written on
stderr as the replay reaches them (with --speed, at their recorded times),
as a host that shows a server's log would have seen them.

Over HTTP (--listen ADDR) the tape is served at http://ADDR/mcp (--path)
until SIGINT or SIGTERM, then the verdict is given as above. The URL is
printed on stderr. A request is answered with JSON or with an SSE stream as
the tape recorded it, with the recorded HTTP status; recorded server
notifications and requests travel on the stream they were recorded on (the
request's answer, or the standalone GET stream). Tapes of the 2025 era get
an Mcp-Session-Id with the initialize answer, required afterwards (400
without it, 404 for another); DELETE ends it. Tapes of the 2026-07-28 era
have no session and no GET stream (405). Concurrent requests are separate
POSTs that race, so over HTTP strict matching lets a request match one of
the next --reorder recorded requests (default 4; 0 over stdio), the ones
passed over still being expected.

Sessions: each session the tape recorded for the server (split at
$transport/start, at a DELETE, or at a new initialize) is served once, in
recorded order, by its own matcher, so a client may reconnect, or several
clients connect at once, as they did when recording. An initialize beyond
the recorded sessions gets HTTP 409 and a -32090 error naming how many the
tape holds, and counts as a divergence (restart the replay to serve them
again). A recorded session no client opened leaves its requests unused.

Streams: in eras with sessions, SSE events carry ids (STREAM_INDEX); a
client whose stream broke resumes it with a GET carrying Last-Event-ID and
gets what it missed, once; a POST's stream the recorded server closed
(after its priming event, for the client to resume) ends there too, and the
rest comes on the client's resumption, in the tape's order across streams.
Streams start with a priming event (an id, empty
data) for a 2025-11-25 client, or when the recorded server primed them.
Server notifications or requests that no open stream can carry (recorded
after their request's answer, with no GET stream open) are held and sent
first on the next stream: the GET stream or the next request's answer. At
shutdown, the count of messages that never reached the client is printed.

Guards: only loopback addresses are served unless --allow-remote; the Host
header must name a loopback host, the --listen host, or one given with
--allow-host, and a browser's Origin must be loopback or given with
--allow-origin (403 otherwise, against DNS rebinding); bodies over
--max-body get 413; an MCP-Protocol-Version the replay does not know gets
400 naming the supported ones.

OAuth (--auth MODE, over HTTP): a tape recorded through "tapedeck record
--upstream" in front of an OAuth-protected server holds the 401 challenges
and the protected resource metadata the proxy served. The replay serves
those documents at their recorded paths with "resource" naming the replay's
URL, and leaves the requests a challenge refused out of the sessions it
serves. --auth mock (the default, auto, when the tape recorded a challenge)
also serves a mock authorization server on the same address (metadata at
/.well-known/oauth-authorization-server, dynamic registration, an authorize
step that approves at once and redirects with a code, a token endpoint that
checks PKCE), names it in the documents' authorization_servers, and requires
its bearer tokens on the MCP endpoint: a request without one gets the
recorded 401 with its WWW-Authenticate, resource_metadata naming the
replay, so a client's whole OAuth path runs offline; a 403 insufficient_scope
step-up recorded mid-session is served once to the first request of the
refused call's method and target, and the retry gets the recorded answer.
--auth none (auto's choice for a tape with no challenge) requires no token.

Rules (--rules FILE): faults on the recorded answers. A client's message
goes to the rules before the tape's matcher sees it (a rule may answer it
with an error, drop it, change it, hold it, or cut the session), and each
recorded message goes to them before the client gets it; what each rule did
is printed on stderr. Over HTTP the replay is served behind the recording
proxy's rules relay, so the rules act on each POST, JSON answer and SSE
event. A request a rule answered (respond, error) or dropped (block) was
sent by the client: the recorded request it stands for counts as sent, not
unused, and is not a divergence; the verdict names the rule ("rule NAME
answered the client's tools/call ... in the tape's place"). The rules file
format: see tapedeck record --help.

Fall through to the live server (--fallback TAPE -- COMMAND ARGS, or
--fallback-url URL for a Streamable HTTP server; the client speaks stdio):
the tape answers while the client follows it; a request it cannot answer
(a call never recorded, or repeated more often than recorded; matching is
keyed unless --match says otherwise) goes to the live server, started on
the first such request and opened with the client's own initialize. The
server's answers, notifications and requests reach the client, its
requests' replies go back to it, and the live exchanges are appended to the
tape (or to -o TAPE) as a new episode, so the next replay answers them with
no server. A server started halfway has only what its own start and the
client's initialize give it: none of the state the recorded calls built
(files written, items created, subscriptions), since the tape answered
those and the server never saw them. Calls that fell through are listed,
and those the live server answered are not divergences. A live server that
ends gets each call it had not answered, and each later one, a JSON-RPC
error at once; one that does not answer in 30 s gets the client the error
then; such calls are listed as not answered, stay divergences, and are
recorded on the tape ($transport/unanswered).`

const replayExample = `  # mcporter, with the tape in place of the real server
  mcporter call --stdio "tapedeck replay session.jsonl" echo message=hi

  # a multi-server tape: choose the server; ignore a field that varies
  tapedeck replay --server linear --ignore params.arguments.requestId session.jsonl

  # reproduce the recorded latencies at twice the speed, keep a report
  tapedeck replay --speed 2 --report replay-report.json session.jsonl

  # serve over Streamable HTTP at http://127.0.0.1:8808/mcp until Ctrl-C
  tapedeck replay --listen 127.0.0.1:8808 session.jsonl
  sdkclient --url http://127.0.0.1:8808/mcp    # in another terminal

  # what the tape lacks, from the live server; the tape grows a new episode
  tapedeck replay --fallback session.jsonl -- node server.js

  # the recorded session, with get-sum's answer failing
  tapedeck replay --rules faults.yaml session.jsonl

  # in a container, reached as http://replay:8808/mcp by another one
  tapedeck replay --listen 0.0.0.0:8808 --allow-remote --allow-host replay session.jsonl`

// args checks replay's arguments: TAPE, and the live server's command
// after -- with --fallback.
func (f *replayFlags) args(cmd *cobra.Command, args []string) error {
	dash := cmd.ArgsLenAtDash()
	if f.fallbackURL != "" {
		f.fallback = true
		if dash >= 0 {
			return errors.New("replay --fallback-url: the live server is at the URL; expected no command after --")
		}
		return cobra.ExactArgs(1)(cmd, args)
	}
	switch {
	case dash < 0 && f.fallback:
		return errors.New("replay --fallback: expected the live server's command after --, e.g. tapedeck replay --fallback TAPE -- node server.js")
	case dash < 0:
		return cobra.ExactArgs(1)(cmd, args)
	case !f.fallback:
		return fmt.Errorf("replay: a command after -- (%s) is the live server of --fallback; add --fallback, or leave it out", args[dash])
	case dash != 1:
		return fmt.Errorf("replay --fallback: expected one TAPE before --, found %d", dash)
	case dash == len(args):
		return errors.New("replay --fallback: expected the live server's command after --")
	}
	f.fallbackCmd = args[dash:]
	return nil
}

// add registers replay's flags on cmd.
func (f *replayFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.server, "server", "", "serve the tape's server `NAME` (needed when it holds several)")
	cmd.Flags().StringVar(&f.match, "match", "strict", "matching `MODE`: strict, keyed or loose")
	cmd.Flags().Float64Var(&f.speed, "speed", 0, "reproduce recorded latencies divided by `X` (0: instant)")
	cmd.Flags().DurationVar(&f.maxWait, "max-wait", replay.DefaultMaxWait, "with --speed: wait at most `D` for one recorded message (0: no cap)")
	cmd.Flags().BoolVar(&f.exact, "exact", false, "tell an empty optional object ({} arguments or context) from an absent one")
	cmd.Flags().StringArrayVar(&f.ignore, "ignore", nil, "ignore the JSON `PATH` when matching, e.g. params.arguments.ts (repeatable)")
	cmd.Flags().StringVar(&f.report, "report", "", "write a JSON report of divergences and unused requests to `FILE`")
	cmd.Flags().IntVar(&f.reorder, "reorder", 0, "strict mode: let a request match one of the `N` recorded requests after the next expected one (4 over HTTP unless given)")
	cmd.Flags().StringVar(&f.listen, "listen", "", "serve Streamable HTTP on `ADDR` (host:port, port 0 picks one) instead of stdio")
	cmd.Flags().StringVar(&f.auth, "auth", replay.AuthAuto, "with --listen: OAuth `MODE`: auto (mock when the tape recorded a 401 challenge, else none), mock (a mock authorization server whose tokens are required) or none")
	cmd.Flags().StringVar(&f.path, "path", "/mcp", "with --listen: serve the MCP endpoint at `PATH`")
	cmd.Flags().BoolVar(&f.allowRemote, "allow-remote", false, "with --listen: allow an address other than loopback")
	cmd.Flags().StringArrayVar(&f.origins, "allow-origin", nil, "with --listen: accept `ORIGIN` besides loopback ones, e.g. https://app.example.com (repeatable)")
	cmd.Flags().StringArrayVar(&f.hosts, "allow-host", nil, "with --listen: accept the Host header `HOST` besides loopback ones and the --listen host, e.g. replay.internal; * accepts any (repeatable)")
	cmd.Flags().StringVar(&f.maxBody, "max-body", "64MiB", "with --listen: accept request bodies up to `SIZE` (413 beyond), e.g. 512KiB; -1: no limit")
	f.rules.add(cmd)
	cmd.Flags().BoolVar(&f.fallback, "fallback", false, "answer what the tape cannot from the live server whose command follows --, started on demand, and append those exchanges to the tape (or to -o)")
	cmd.Flags().StringVar(&f.fallbackURL, "fallback-url", "", "as --fallback, with the live server at the Streamable HTTP endpoint `URL`")
	cmd.Flags().StringVarP(&f.episodes, "output", "o", "", "with --fallback: append the live exchanges to `TAPE` instead of the replayed one")
}

// resolve completes the flags from what the command line gave (which
// flags were set) and checks the combinations: the options run takes.
func (f *replayFlags) resolve(cmd *cobra.Command) error {
	f.reorderSet = cmd.Flags().Changed("reorder")
	f.pathSet = cmd.Flags().Changed("path")
	if f.fallback {
		if f.listen != "" {
			return errors.New("replay --fallback serves stdio; over HTTP it is not available yet (record the live server with tapedeck record --upstream instead)")
		}
		if f.speed > 0 {
			return errors.New("replay --fallback answers at once: leave out --speed")
		}
		if !cmd.Flags().Changed("match") {
			f.match = "keyed" // a call the tape lacks, wherever it comes
		}
	}
	rs, err := f.rules.load(cmd)
	if err != nil {
		return err
	}
	f.ruleSet = rs
	return nil
}

// runReplay serves tapePath as f says, over stdio or HTTP, and gives the
// verdict.
func runReplay(ctx context.Context, s streams, f *replayFlags, tapePath string) error {
	opts, err := f.options()
	if err != nil {
		return err
	}
	x, err := indexTape(s.stderr, tapePath)
	if err != nil {
		return err
	}
	defer x.Close()
	onDiv := func(d replay.Divergence) { fmt.Fprintf(s.stderr, "tapedeck replay: %s\n", d.Message) }
	// Over stdio each process the client starts serves the episode
	// (recorder run) its first request opens.
	opts.Episodes = f.listen == ""
	e, err := replay.NewEngine(x, opts)
	if err != nil {
		return err
	}
	var rep replay.Report
	if f.listen != "" {
		rep, err = serveReplayHTTP(ctx, s, f, tapePath, x, opts, e, onDiv)
	} else {
		rep, err = serveReplayStdio(ctx, s, f, tapePath, e, onDiv)
	}
	if err != nil {
		return err
	}
	rep.Tape = tapePath
	return finishReport(s.stderr, &rep, f.report)
}

// serveReplayStdio serves e on stdio (with --fallback, falling through
// to the live server) until the client closes stdin or ctx is done.
func serveReplayStdio(ctx context.Context, s streams, f *replayFlags, tapePath string, e *replay.Engine, onDiv func(replay.Divergence)) (replay.Report, error) {
	if fi, ok := s.stdin.(interface{ Fd() uintptr }); ok && term.IsTerminal(fi.Fd()) {
		// Run by hand: say what it waits for instead of looking hung.
		fmt.Fprintf(s.stderr, "tapedeck replay: serving %s on stdio: it answers the JSON-RPC lines an MCP client writes on its stdin.\n"+
			"  Point a client at it by making \"tapedeck replay %s\" its server command (in place of the recorded one),\n"+
			"  or serve it over HTTP with \"tapedeck replay --listen 127.0.0.1:8808 %s\". Ctrl-C stops it.\n", text.Safe(tapePath), text.Safe(tapePath), text.Safe(tapePath))
	}
	in, restore := pollableStdin(s.stdin)
	defer restore() // also after a panic: the pipe is shared
	if f.fallback {
		return replayFallback(ctx, s, f, tapePath, e, in, onDiv)
	}
	err := replay.ServeStdio(ctx, e, in, s.stdout, replay.StdioOptions{OnDivergence: onDiv,
		Rules: f.ruleSet, Logf: ruleLog(s.stderr), Server: e.Server(), Stderr: s.stderr})
	if errors.Is(err, replay.ErrDisconnected) {
		fmt.Fprintf(s.stderr, "tapedeck replay: %v\n", err)
		err = nil
	}
	if err != nil {
		return replay.Report{}, err
	}
	return e.Report(), nil
}

// pollableStdin returns stdin in non-blocking mode when it is a pipe or a
// socket (how MCP clients start a stdio server), so the runtime polls it:
// a read then ends when ServeStdio closes it on SIGINT/SIGTERM while the
// client is idle, and is done in the serving goroutine rather than handed
// over from another one on each read (see replay.BenchmarkReplayStdio).
// restore puts back the blocking mode for whoever shares the pipe after
// us. A terminal, a file, or anything else is returned as it is:
// ServeStdio then reads it in a goroutine.
func pollableStdin(r io.Reader) (io.Reader, func()) {
	none := func() {}
	f, ok := r.(*os.File)
	if !ok {
		return r, none
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&(os.ModeNamedPipe|os.ModeSocket) == 0 {
		return r, none
	}
	if f.SetReadDeadline(time.Time{}) == nil {
		return r, none // polled already
	}
	fd := int(f.Fd())
	// O_NONBLOCK belongs to the pipe's open file description, which a dup
	// shares: restoring through the dup works even after ServeStdio closed
	// fd 0 to end a read on SIGINT/SIGTERM.
	dup, err := syscall.Dup(fd)
	if err != nil {
		return r, none
	}
	if syscall.SetNonblock(fd, true) != nil {
		syscall.Close(dup)
		return r, none
	}
	var once sync.Once
	restore := func() {
		once.Do(func() {
			syscall.SetNonblock(dup, false)
			syscall.Close(dup)
		})
	}
	// A new File over the same descriptor: os.NewFile polls it because it
	// is non-blocking now.
	return os.NewFile(uintptr(fd), f.Name()), restore
}

// serveReplayHTTP serves e over Streamable HTTP on f.listen until ctx is
// done.
func serveReplayHTTP(ctx context.Context, s streams, f *replayFlags, tapePath string, x *tape.Index, opts replay.EngineOptions, e *replay.Engine, onDiv func(replay.Divergence)) (replay.Report, error) {
	var none replay.Report
	hosts, err := mcphttp.ListenHosts(f.listen, f.allowRemote, f.hosts, "the replay")
	if err != nil {
		return none, err
	}
	if !strings.HasPrefix(f.path, "/") {
		return none, fmt.Errorf("--path %q: expected a path starting with /", f.path)
	}
	maxBody, err := parseSize(f.maxBody)
	if err != nil {
		return none, fmt.Errorf("--max-body: %w", err)
	}
	ln, err := mcphttp.Listen(f.listen)
	if err != nil {
		return none, fmt.Errorf("--listen: %w", err)
	}
	if post, ok := replay.IsLegacySSE(x, e.Server()); ok {
		if f.ruleSet != nil {
			ln.Close()
			return none, errors.New("replay --rules: a legacy HTTP+SSE tape is served without rules; replay it over stdio, or put tapedeck record --rules in front")
		}
		opts.Server = e.Server()
		return serveReplayLegacy(ctx, s, f, tapePath, x, opts, ln, post, hosts, maxBody, onDiv)
	}
	h, err := replay.NewHTTPHandler(x, opts, replay.HTTPOptions{Path: f.path, OnDivergence: onDiv, AllowOrigins: f.origins, AllowHosts: hosts, MaxBody: maxBody, Auth: f.auth})
	if err != nil {
		ln.Close()
		return none, err
	}
	fmt.Fprintf(s.stderr, "tapedeck replay: serving %s (server '%s') at http://%s%s\n", tapePath, e.Server(), ln.Addr(), f.path)
	if h.AuthMode() == replay.AuthMock {
		fmt.Fprintf(s.stderr, "tapedeck replay: OAuth: a mock authorization server at http://%s; the MCP endpoint requires its tokens (--auth none: no token)\n", ln.Addr())
	}
	if f.ruleSet != nil {
		err = serveHTTPWithRules(ctx, s, f, ln, h, e.Server(), hosts, maxBody)
	} else {
		err = replay.ServeHTTP(ctx, ln, h)
	}
	rep := h.Report()
	if rep.Dropped = h.Dropped(); rep.Dropped > 0 {
		fmt.Fprintf(s.stderr, "tapedeck replay: %d recorded server messages never reached the client (no stream opened to carry them, or their stream's client went away and did not resume it)\n", rep.Dropped)
	}
	return rep, err
}

// parseSize reads a byte count with an optional KiB, MiB or GiB suffix;
// 0 means the default, -1 no limit.
func parseSize(v string) (int64, error) {
	num, mul := strings.TrimSpace(v), int64(1)
	for _, u := range []struct {
		suffix string
		mul    int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mul = strings.TrimSpace(n), u.mul
			break
		}
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < -1 || n == -1 && mul != 1 {
		return 0, fmt.Errorf("%q: expected a byte count such as 1048576, 512KiB or 64MiB (0: the default, -1: no limit)", v)
	}
	if n > math.MaxInt64/mul {
		return 0, fmt.Errorf("%q: expected a byte count below 8 EiB", v)
	}
	return n * mul, nil
}

// finishReport writes the JSON report if asked, then prints unused requests,
// and returns the replay's verdict. The report comes first: it is the
// verdict CI reads, and a client that closed our stderr (mcp-go's does,
// before it waits for us) must not cost it.
func finishReport(stderr io.Writer, rep *replay.Report, path string) error {
	if path != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o600); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	for _, r := range rep.Resyncs {
		fmt.Fprintf(stderr, "tapedeck replay: re-synchronised at tape line %d (%s) after a divergence: the client left out %d recorded request(s) before it\n", r.Line, r.Method, r.Skipped)
	}
	for _, a := range rep.RuleAnswered {
		did := "answered"
		switch a.Action {
		case "error":
			did = "answered with its error"
		case "block":
			did = "dropped"
		}
		if a.Seq < 0 {
			fmt.Fprintf(stderr, "tapedeck replay: rule %s %s the client's %s %s, which matched no recorded request the replay expected\n", a.Rule, did, a.Method, compactParams(a.Params))
			continue
		}
		fmt.Fprintf(stderr, "tapedeck replay: rule %s %s the client's %s %s in the tape's place: the recorded request (tape line %d) counts as sent\n", a.Rule, did, a.Method, compactParams(a.Params), a.Line)
	}
	for _, u := range rep.Unused {
		fmt.Fprintf(stderr, "tapedeck replay: recorded request never sent by the client: %s %s (tape line %d)\n", u.Method, compactParams(u.Params), u.Line)
	}
	for _, u := range rep.Unanswered {
		fmt.Fprintf(stderr, "tapedeck replay: the tape holds no answer to %s (tape line %d); the client got error %d\n", u.Method, u.Line, replay.CodeNoAnswer)
	}
	if err := rep.Err(); err != nil {
		return &exitError{code: 1, err: err}
	}
	return nil
}

// compactParams shows a request's params on one line without their _meta
// (2026-07-28 requests open with a volatile protocol version and client
// info, which pushed the tool's name past the cut).
func compactParams(p json.RawMessage) string {
	if s := tape.ParamsLine(p, 200); s != "" {
		return s
	}
	return "{}"
}

// serveReplayLegacy serves a tape recorded over the legacy HTTP+SSE
// transport on ln: the stream at --path (/sse unless given), posts at the
// recorded endpoint's path.
func serveReplayLegacy(ctx context.Context, s streams, f *replayFlags, tapePath string, x *tape.Index, opts replay.EngineOptions, ln net.Listener, post string, hosts []string, maxBody int64, onDiv func(replay.Divergence)) (replay.Report, error) {
	ssePath := "/sse"
	if f.pathSet {
		ssePath = f.path
	}
	h, err := replay.NewLegacyHandler(x, opts, replay.LegacyOptions{SSEPath: ssePath, PostPath: post, AllowHosts: hosts, AllowOrigins: f.origins, MaxBody: maxBody, OnDivergence: onDiv})
	if err != nil {
		ln.Close()
		return replay.Report{}, err
	}
	fmt.Fprintf(s.stderr, "tapedeck replay: serving %s (server '%s', legacy HTTP+SSE) at http://%s%s\n", tapePath, opts.Server, ln.Addr(), ssePath)
	err = replay.ServeLegacy(ctx, ln, h)
	return h.Report(), err
}

// replayFallback serves the tape over stdio, falling through to the live
// server for what it cannot answer (replay --fallback).
func replayFallback(ctx context.Context, s streams, f *replayFlags, tapePath string, e *replay.Engine, in io.Reader, onDiv func(replay.Divergence)) (replay.Report, error) {
	dest := tapePath
	if f.episodes != "" {
		dest = f.episodes
	}
	out, notes, err := tape.Create(dest, true)
	if err != nil {
		return replay.Report{}, fmt.Errorf("replay --fallback: the tape for the live exchanges: %w", err)
	}
	defer out.Close()
	for _, n := range notes {
		fmt.Fprintf(s.stderr, "tapedeck replay: %s\n", n)
	}
	fb := &upstream.Fallback{URL: f.fallbackURL, Tape: out, Server: e.Server(), Stderr: s.stderr}
	if f.fallbackURL == "" {
		fb.Command, fb.Args = f.fallbackCmd[0], f.fallbackCmd[1:]
	}
	ft := upstream.NewFallthrough(fb)
	err = replay.ServeStdio(ctx, e, in, s.stdout, replay.StdioOptions{OnDivergence: onDiv, Miss: ft.Miss, Peek: ft.Peek, Stderr: s.stderr})
	if cerr := ft.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("replay --fallback: writing the live exchanges to %s: %w", dest, cerr))
	} else if err != nil && ctx.Err() != nil {
		err = nil // the read ended because ctx closed the input
	}
	if err != nil {
		return replay.Report{}, err
	}
	fell := ft.Fell()
	rep := e.Report()
	replay.FallbackReport(&rep, fell)
	for _, x := range fell {
		if x.Answered() {
			fmt.Fprintf(s.stderr, "tapedeck replay: %s (id %s) was not on the tape (%s): the live server answered it; appended to %s\n", x.Method, x.ID, x.Reason, dest)
			continue
		}
		fmt.Fprintf(s.stderr, "tapedeck replay: %s (id %s) was not on the tape (%s), and %s: the client got an error; recorded in %s\n", x.Method, x.ID, x.Reason, x.Outcome, dest)
	}
	if len(fell) > 0 {
		// The new episode follows the whole recorded session on the tape,
		// not the point where the client asked: only keyed matching
		// finds its answers where the client asks again.
		fmt.Fprintf(s.stderr, "tapedeck replay: %s appended to %s as a new episode, after the recorded session; to replay it without a server run \"tapedeck replay --match keyed %s\" (a strict replay follows the tape's order, in which the episode comes after the recorded session: it diverges when a client asks for the episode's calls before the recorded ones)\n", text.Plural(len(fell), "exchange"), dest, dest)
	}
	return rep, nil
}

// serveHTTPWithRules serves the HTTP replay behind the recording proxy's
// rules relay (its tape discarded), so the rules see and fault every
// message both ways as they do when recording.
func serveHTTPWithRules(ctx context.Context, s streams, f *replayFlags, ln net.Listener, h *replay.HTTPHandler, server string, hosts []string, maxBody int64) error {
	p := &record.Proxy{Tape: io.Discard, Server: server, Rules: f.ruleSet, Logf: ruleLog(s.stderr), AllowHosts: hosts, AllowOrigins: f.origins, MaxBody: maxBody,
		RuleAnswered: h.RuleAnswered}
	return record.ServeInFront(ctx, ln, p, f.path, func(ctx context.Context, inner net.Listener) error { return replay.ServeHTTP(ctx, inner, h) })
}
