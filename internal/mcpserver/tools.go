package mcpserver

// The tools: each a handler over the library, its input and output Go
// types (the go-sdk derives inputSchema and outputSchema from them; the
// jsonschema tags are the properties' descriptions).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/check"
	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/internal/library"
	"github.com/tapedeck/tapedeck/tape"
)

// maxNotifications caps the notifications get_call returns with a call.
const maxNotifications = 200

// ListInput is list_tapes' input.
type ListInput struct {
	Limit int `json:"limit,omitempty" jsonschema:"at most this many tapes (default 100)"`
}

// TapeInfo is a tape of the library.
type TapeInfo struct {
	Path       string   `json:"path" jsonschema:"the tape's absolute path, what the other tools take"`
	URI        string   `json:"uri" jsonschema:"its resource, tape://PATH"`
	Start      string   `json:"start,omitempty" jsonschema:"when it started (RFC 3339)"`
	DurationMS float64  `json:"duration_ms"`
	Servers    []string `json:"servers"`
	Client     string   `json:"client,omitempty"`
	Protocol   string   `json:"protocol_version,omitempty"`
	Messages   int      `json:"messages"`
	Calls      int      `json:"calls"`
	Errors     int      `json:"errors" jsonschema:"JSON-RPC errors (and servers that failed to start)"`
	ToolErrors int      `json:"tool_errors" jsonschema:"tool results with isError"`
	Pending    int      `json:"pending" jsonschema:"requests never answered"`
	Recording  bool     `json:"recording,omitempty" jsonschema:"still being written"`
}

// ListOutput is list_tapes' result.
type ListOutput struct {
	Tapes []TapeInfo `json:"tapes"`
	// More is how many tapes past the limit were left out.
	More        int      `json:"more,omitempty"`
	Directories []string `json:"directories" jsonschema:"the library's directories and tape files"`
}

func (s *service) listTapes(ctx context.Context, _ *mcp.CallToolRequest, in ListInput) (*mcp.CallToolResult, ListOutput, error) {
	var out ListOutput
	if _, err := s.lib.Refresh(ctx); err != nil {
		return nil, out, err
	}
	tapes, err := s.lib.Tapes()
	if err != nil {
		return nil, out, err
	}
	if out.Directories, err = s.lib.Roots(); err != nil {
		return nil, out, err
	}
	limit := in.Limit
	if limit <= 0 {
		limit = 100
	}
	if len(tapes) > limit {
		out.More = len(tapes) - limit
		tapes = tapes[:limit]
	}
	out.Tapes = []TapeInfo{}
	for _, t := range tapes {
		ti := TapeInfo{Path: t.Path, URI: TapeURI(t.Path), DurationMS: ms(t.Duration), Servers: t.Servers, Client: t.Client,
			Protocol: t.Protocol, Messages: t.Messages, Calls: t.Calls, Errors: t.RPCErrors, ToolErrors: t.ToolErrors, Pending: t.Pending, Recording: t.Partial}
		if t.ClientVersion != "" {
			ti.Client += " " + t.ClientVersion
		}
		if !t.Start.IsZero() {
			ti.Start = t.Start.Format(time.RFC3339Nano)
		}
		if ti.Servers == nil {
			ti.Servers = []string{}
		}
		out.Tapes = append(out.Tapes, ti)
	}
	return nil, out, nil
}

// SearchInput is search_tapes' input.
type SearchInput struct {
	Query  string `json:"query" jsonschema:"words that all have to occur (any order, any case); \"quoted words\" a phrase; word* a prefix; OR between alternatives; empty with a filter for every message"`
	Tool   string `json:"tool,omitempty" jsonschema:"only calls of this tool"`
	Method string `json:"method,omitempty" jsonschema:"only messages of this method (an answer counts its request's)"`
	Status string `json:"status,omitempty" jsonschema:"only exchanges in this state: ok, error, rpc-error, tool-error, negotiation, pending, cancelled, late, orphan"`
	Since  string `json:"since,omitempty" jsonschema:"only messages recorded since: an age (90m, 24h, 7d) or a date (2026-01-31)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"at most this many hits (default 50)"`
}

// SearchHit is a message search_tapes found.
type SearchHit struct {
	Tape    string `json:"tape"`
	Seq     int    `json:"seq" jsonschema:"the message's place on the tape, from 0"`
	Time    string `json:"time,omitempty"`
	Kind    string `json:"kind"`
	Method  string `json:"method,omitempty"`
	Target  string `json:"target,omitempty" jsonschema:"the tool, prompt or resource it names"`
	Status  string `json:"status,omitempty"`
	Snippet string `json:"snippet"`
}

// SearchOutput is search_tapes' result.
type SearchOutput struct {
	Hits []SearchHit `json:"hits"`
	// Truncated says the limit cut the hits short.
	Truncated bool `json:"truncated,omitempty"`
}

func (s *service) searchTapes(ctx context.Context, _ *mcp.CallToolRequest, in SearchInput) (*mcp.CallToolResult, SearchOutput, error) {
	out := SearchOutput{Hits: []SearchHit{}}
	q := library.Query{Text: in.Query, Tool: in.Tool, Method: in.Method, Status: in.Status, Limit: in.Limit}
	if q.Limit <= 0 {
		q.Limit = 50
	}
	if q.Status != "" && !slices.Contains(library.Statuses, q.Status) {
		return nil, out, fmt.Errorf("status %q: expected one of %s", q.Status, strings.Join(library.Statuses, ", "))
	}
	if in.Since != "" {
		t, err := library.ParseAge(in.Since, time.Now())
		if err != nil {
			return nil, out, fmt.Errorf("since %w", err)
		}
		q.Since = t
	}
	if strings.TrimSpace(q.Text) == "" && q.Tool == "" && q.Method == "" && q.Status == "" && q.Since.IsZero() {
		return nil, out, fmt.Errorf(`query "": expected words to look for, or a filter (tool, method, status, since)`)
	}
	if _, err := s.lib.Refresh(ctx); err != nil {
		return nil, out, err
	}
	hits, err := s.lib.SearchContext(ctx, q)
	if err != nil {
		return nil, out, err
	}
	for _, h := range hits {
		sh := SearchHit{Tape: h.Path, Seq: h.Seq, Kind: h.Kind, Method: h.Method, Target: h.Target, Status: h.Status, Snippet: h.Snippet}
		if !h.Time.IsZero() {
			sh.Time = h.Time.Format(time.RFC3339Nano)
		}
		out.Hits = append(out.Hits, sh)
	}
	out.Truncated = len(hits) == q.Limit
	return nil, out, nil
}

// CallInput is get_call's input.
type CallInput struct {
	Tape string `json:"tape" jsonschema:"the tape's path (as list_tapes or search_tapes give it)"`
	Seq  int    `json:"seq" jsonschema:"the seq of the call's request or of its answer"`
}

// Message is one message of a tape as it crossed the wire (without the
// tape's _meta).
type Message struct {
	Seq     int    `json:"seq"`
	Line    int    `json:"line"`
	Kind    string `json:"kind" jsonschema:"request, response or notification"`
	Dir     string `json:"dir" jsonschema:"send: from the client; recv: from the server"`
	Method  string `json:"method,omitempty"`
	Time    string `json:"time,omitempty"`
	Message any    `json:"message" jsonschema:"the JSON-RPC message"`
}

// CallOutput is get_call's result.
type CallOutput struct {
	Tape   string `json:"tape"`
	Server string `json:"server"`
	Method string `json:"method"`
	Target string `json:"target,omitempty" jsonschema:"the tool, prompt or resource it names"`
	Status string `json:"status" jsonschema:"ok, error (JSON-RPC), tool-error (isError), negotiation, pending, cancelled, late, orphan"`
	// LatencyMS is the time from request to answer, when both are timed.
	LatencyMS *float64 `json:"latency_ms,omitempty"`
	Request   *Message `json:"request,omitempty" jsonschema:"absent for an answer no request matched"`
	Response  *Message `json:"response,omitempty" jsonschema:"absent when the tape holds no answer"`
	// Notifications are the notifications and server requests of the
	// call's server recorded while it was open (between request and
	// answer), up to 200.
	Notifications []Message `json:"notifications"`
	Open          string    `json:"open" jsonschema:"the command that opens the tape at this call in the debugger"`
}

func (s *service) getCall(ctx context.Context, _ *mcp.CallToolRequest, in CallInput) (*mcp.CallToolResult, CallOutput, error) {
	out := CallOutput{Notifications: []Message{}}
	path, x, err := s.index(in.Tape)
	if err != nil {
		return nil, out, err
	}
	defer x.Close()
	if err := checkSeq(x, in.Seq); err != nil {
		return nil, out, err
	}
	e := x.Entry(in.Seq)
	p := x.Pair(in.Seq)
	req, resp := -1, -1
	switch e.Kind {
	case tape.KindRequest:
		req, resp = in.Seq, p.Partner
	case tape.KindResponse:
		req, resp = p.Partner, in.Seq
	default:
		return nil, out, fmt.Errorf("message %d of %s is a %s (%s), not a request or an answer; get_call takes a request's or its answer's seq", in.Seq, in.Tape, e.Kind, e.Method)
	}
	if resp >= 0 && x.Entry(resp).Kind != tape.KindResponse {
		resp = -1 // a lifecycle record (an HTTP challenge) carries no message
	}
	out.Tape, out.Server, out.Method = path, e.Server, p.Method
	if out.Request, err = message(x, req); err != nil {
		return nil, out, err
	}
	if out.Response, err = message(x, resp); err != nil {
		return nil, out, err
	}
	if req >= 0 {
		r, err := x.Message(req)
		if err != nil {
			return nil, out, fmt.Errorf("message %d: %w", req, err)
		}
		out.Target = tape.Target(p.Method, r.Raw)
	}
	out.Status = status(x, req, resp)
	if p.Timed {
		v := ms(p.Latency)
		out.LatencyMS = &v
	}
	if req >= 0 {
		end := resp
		if end < req {
			end = x.Len()
		}
		for j := req + 1; j < end && len(out.Notifications) < maxNotifications; j++ {
			if err := ctxErr(ctx); err != nil {
				return nil, out, err
			}
			o := x.Entry(j)
			if o.Server != e.Server || !(o.Kind == tape.KindNotification || o.Kind == tape.KindRequest && o.Dir == tape.DirRecv) {
				continue
			}
			m, err := message(x, j)
			if err != nil {
				return nil, out, err
			}
			out.Notifications = append(out.Notifications, *m)
		}
	}
	at := in.Seq
	if req >= 0 {
		at = req
	}
	out.Open = openCommand(path, at)
	return nil, out, nil
}

// status says what became of the exchange of request req and answer resp
// (either -1).
func status(x *tape.Index, req, resp int) string {
	if req < 0 {
		return "orphan"
	}
	p := x.Pair(req)
	switch {
	case resp < 0 && p.Cancelled:
		return "cancelled"
	case resp < 0:
		return "pending"
	}
	r := x.Entry(resp)
	switch {
	case r.Negotiation:
		return "negotiation"
	case r.Error:
		return "error"
	case r.ToolError:
		return "tool-error"
	case x.Pair(resp).Late:
		return "late"
	}
	return "ok"
}

// message reads message i of x (nil for -1).
func message(x *tape.Index, i int) (*Message, error) {
	if i < 0 {
		return nil, nil
	}
	e, err := x.Message(i)
	if err != nil {
		return nil, fmt.Errorf("message %d: %w", i, err)
	}
	m := &Message{Seq: e.Seq, Line: e.Line, Kind: e.Kind.String(), Dir: string(e.Dir), Method: e.Method, Message: asJSON(tape.StripMeta(e.Raw))}
	if !e.Time.IsZero() {
		m.Time = e.Time.Format(time.RFC3339Nano)
	}
	return m, nil
}

// StatsInput is tape_stats' input.
type StatsInput struct {
	Tape   string `json:"tape" jsonschema:"the tape's path"`
	Server string `json:"server,omitempty" jsonschema:"only this server's messages"`
}

// StatsOutput is tape_stats' result.
type StatsOutput struct {
	Tape    string     `json:"tape"`
	Summary string     `json:"summary" jsonschema:"the one-line summary tapedeck stats prints first"`
	Stats   tape.Stats `json:"stats" jsonschema:"as tapedeck stats --json (durations in nanoseconds)"`
}

func (s *service) tapeStats(_ context.Context, _ *mcp.CallToolRequest, in StatsInput) (*mcp.CallToolResult, StatsOutput, error) {
	path, x, err := s.index(in.Tape)
	if err != nil {
		return nil, StatsOutput{}, err
	}
	defer x.Close()
	out, err := stats(path, x, in.Server)
	return nil, out, err
}

func stats(path string, x *tape.Index, server string) (StatsOutput, error) {
	st := tape.ComputeStats(x, server)
	tape.AddContextCosts(&st, x)
	tape.AddInjections(&st, x)
	if server != "" && len(st.Servers) == 0 {
		return StatsOutput{}, fmt.Errorf("server %q: not on the tape; it holds %q", server, x.Servers())
	}
	return StatsOutput{Tape: path, Summary: st.Summary(), Stats: st}, nil
}

// CheckInput is check_tape's input.
type CheckInput struct {
	Tape        string   `json:"tape" jsonschema:"the tape's path"`
	FailOn      []string `json:"fail_on,omitempty" jsonschema:"the rules whose findings fail the check (default: tapedeck check's)"`
	ExpectTools []string `json:"expect_tools,omitempty" jsonschema:"tools that must have been called"`
	ForbidTools []string `json:"forbid_tools,omitempty" jsonschema:"tools that must not have been called"`
	MaxDuration string   `json:"max_duration,omitempty" jsonschema:"a call slower than this is a finding (a Go duration: 500ms, 2s)"`
	Spec        bool     `json:"spec,omitempty" jsonschema:"also hold the session to the MCP specification of its negotiated version"`
}

// CheckOutput is check_tape's result.
type CheckOutput struct {
	Tape     string          `json:"tape"`
	Failed   bool            `json:"failed" jsonschema:"a finding's rule is in fail_on"`
	FailOn   []string        `json:"fail_on"`
	Findings []check.Finding `json:"findings"`
}

func (s *service) checkTape(_ context.Context, _ *mcp.CallToolRequest, in CheckInput) (*mcp.CallToolResult, CheckOutput, error) {
	var out CheckOutput
	o := check.Options{ExpectTools: in.ExpectTools, ForbidTools: in.ForbidTools, Spec: in.Spec}
	if in.MaxDuration != "" {
		d, err := time.ParseDuration(in.MaxDuration)
		if err != nil || d <= 0 {
			return nil, out, fmt.Errorf("max_duration %q: expected a positive Go duration such as 500ms or 2s", in.MaxDuration)
		}
		o.MaxDuration = d
	}
	known := []string{check.RuleSpec}
	for _, r := range check.Rules {
		known = append(known, r.ID)
	}
	for _, r := range check.SpecRules {
		known = append(known, r.ID)
	}
	o.FailOn = in.FailOn
	if len(o.FailOn) == 0 {
		o.FailOn = slices.Clone(check.DefaultFailOn)
		if in.Spec {
			o.FailOn = append(o.FailOn, check.RuleSpec)
		}
	}
	for _, r := range o.FailOn {
		if !slices.Contains(known, r) {
			return nil, out, fmt.Errorf("fail_on %q: expected rules among %s", r, strings.Join(known, ", "))
		}
	}
	path, x, err := s.index(in.Tape)
	if err != nil {
		return nil, out, err
	}
	defer x.Close()
	fs, err := check.Tape(path, x, o)
	if err != nil {
		return nil, out, fmt.Errorf("check %s: %w", path, err)
	}
	out = CheckOutput{Tape: path, FailOn: o.FailOn, Findings: fs}
	if out.Findings == nil {
		out.Findings = []check.Finding{}
	}
	out.Failed = check.Failed(out.Findings)
	return nil, out, nil
}

// DiffInput is diff_tapes' input.
type DiffInput struct {
	A      string   `json:"a" jsonschema:"the first tape's path (the before)"`
	B      string   `json:"b" jsonschema:"the second tape's path (the after)"`
	Server string   `json:"server,omitempty" jsonschema:"only this server"`
	Ignore []string `json:"ignore,omitempty" jsonschema:"paths left out of every comparison, e.g. result.content.0.text"`
}

// DiffOutput is diff_tapes' result.
type DiffOutput struct {
	A           string                 `json:"a"`
	B           string                 `json:"b"`
	Differences int                    `json:"differences" jsonschema:"how many differences (what tapedeck diff --exit-code fails on)"`
	Servers     []compare.ServerReport `json:"servers"`
	Text        string                 `json:"text" jsonschema:"the report as tapedeck diff prints it"`
}

func (s *service) diffTapes(_ context.Context, _ *mcp.CallToolRequest, in DiffInput) (*mcp.CallToolResult, DiffOutput, error) {
	var out DiffOutput
	o := compare.Options{Server: in.Server, LatencyAbs: 100 * time.Millisecond, LatencyRatio: 2}
	for _, p := range in.Ignore {
		path, err := tape.ParsePath(p)
		if err != nil {
			return nil, out, fmt.Errorf("ignore %q: %w", p, err)
		}
		o.Ignore = append(o.Ignore, path)
	}
	pa, err := s.resolve(in.A)
	if err != nil {
		return nil, out, fmt.Errorf("a: %w", err)
	}
	pb, err := s.resolve(in.B)
	if err != nil {
		return nil, out, fmt.Errorf("b: %w", err)
	}
	var sides []compare.Side
	defer func() {
		for _, sd := range sides {
			sd.Index.Close()
		}
	}()
	for _, p := range []string{pa, pb} {
		sd, err := compare.OpenSide(p)
		if err != nil {
			return nil, out, err
		}
		sides = append(sides, sd)
		if err := sd.Index.CheckRecords(); err != nil {
			return nil, out, fmt.Errorf("%s: %w", p, err)
		}
	}
	r, err := compare.Compare(sides[0], sides[1], o)
	if err != nil {
		return nil, out, fmt.Errorf("diff: %w", err)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		return nil, out, err
	}
	out = DiffOutput{A: pa, B: pb, Differences: r.Differences(), Servers: r.Servers, Text: text.String()}
	if out.Servers == nil {
		out.Servers = []compare.ServerReport{}
	}
	return nil, out, nil
}

// OpenInput is open_at's input.
type OpenInput struct {
	Tape string `json:"tape" jsonschema:"the tape's path"`
	Seq  int    `json:"seq" jsonschema:"the message to put the cursor on"`
}

// OpenOutput is open_at's result.
type OpenOutput struct {
	Command string   `json:"command" jsonschema:"the command line, quoted for a POSIX shell"`
	Argv    []string `json:"argv" jsonschema:"the same as arguments"`
}

func (s *service) openAt(_ context.Context, _ *mcp.CallToolRequest, in OpenInput) (*mcp.CallToolResult, OpenOutput, error) {
	path, x, err := s.index(in.Tape)
	if err != nil {
		return nil, OpenOutput{}, err
	}
	defer x.Close()
	if err := checkSeq(x, in.Seq); err != nil {
		return nil, OpenOutput{}, err
	}
	arg := fmt.Sprintf("%s:%d", path, in.Seq)
	return nil, OpenOutput{Command: openCommand(path, in.Seq), Argv: []string{"tapedeck", "open", arg}}, nil
}

func openCommand(path string, seq int) string {
	return "tapedeck open " + shellArg(fmt.Sprintf("%s:%d", path, seq))
}

// shellArg quotes s for a POSIX shell when it needs it.
func shellArg(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// index resolves p in the library and indexes the tape there.
func (s *service) index(p string) (string, *tape.Index, error) {
	path, err := s.resolve(p)
	if err != nil {
		return "", nil, err
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		return "", nil, err
	}
	if err := x.CheckRecords(); err != nil {
		x.Close()
		return "", nil, fmt.Errorf("%s: %w", p, err)
	}
	return path, x, nil
}

func checkSeq(x *tape.Index, seq int) error {
	if seq < 0 || seq >= x.Len() {
		return fmt.Errorf("seq %d: expected a message of the tape, which holds seq 0 to %d", seq, x.Len()-1)
	}
	return nil
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// readTape is the tape://PATH resource: the tape's summary and stats.
func (s *service) readTape(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	p, ok := strings.CutPrefix(uri, "tape://")
	if !ok || p == "" {
		return nil, fmt.Errorf("%s: expected tape://PATH", uri)
	}
	path, x, err := s.index(p)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	st, err := stats(path, x, "")
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(st); err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: b.String()}}}, nil
}

// readFile reads a file of the library whole, up to limit bytes.
func readFile(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: over %d bytes, expected a replay report", path, limit)
	}
	return b, nil
}
