// Package check asserts things about recorded sessions for CI (tapedeck
// check): failures the tapes hold, tools that must or must not be called,
// calls too slow, an old protocol, and tool definitions that drifted from
// a baseline. Each finding names the tape, the line and what was found.
package check

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// Rules, the names --fail-on takes.
const (
	RuleError      = "error"      // a JSON-RPC error answer
	RuleToolError  = "tool-error" // a tool that failed (result.isError)
	RuleInvalid    = "invalid"    // a line that is not a JSON-RPC message
	RulePending    = "pending"    // a request never answered
	RuleOrphan     = "orphan"     // an answer no request matched
	RuleLate       = "late"       // an answer after its cancellation
	RuleCancelled  = "cancelled"  // a request the client cancelled
	RuleStderr     = "stderr"     // a line the server wrote on stderr
	RuleDrift      = "drift"      // a definition changed from the baseline, or a baseline of other servers
	RuleDeprecated = "deprecated-protocol"
	RuleExpectTool = "expect-tool" // a tool that should have been called was not
	RuleForbidTool = "forbid-tool" // a tool that should not have been called was
	RuleSlow       = "max-duration"
	RuleTaskFailed = "task-failed" // a task that ended failed or cancelled
	// RuleChallenge: a 401 whose WWW-Authenticate has no resource_metadata,
	// which MCP's authorization (RFC 9728) requires of a protected server.
	RuleChallenge = "auth-challenge"
	// RuleShadow: a call the shadow server (record --shadow) answered
	// otherwise than the recorded server, by diff's rules (shadow.go).
	RuleShadow = "shadow"
)

// Rules lists every rule with what it finds.
var Rules = []struct{ ID, Help string }{
	{RuleError, "a JSON-RPC error answer (not a rejected server/discover probe: version negotiation)"},
	{RuleToolError, "a tool call that failed (result.isError)"},
	{RuleInvalid, "a line that is not a JSON-RPC message"},
	{RulePending, "a request the tape holds no answer to"},
	{RuleOrphan, "an answer no request matched"},
	{RuleLate, "an answer that came after its request was cancelled"},
	{RuleCancelled, "a request the client cancelled"},
	{RuleStderr, "a line the server wrote on stderr"},
	{RuleDrift, "a tool, prompt or resource definition that changed from the baseline, or a baseline that has none of the tape's servers"},
	{RuleDeprecated, "a session that negotiated a protocol version older than 2025-06-18"},
	{RuleExpectTool, "a tool --expect-tool names that was never called"},
	{RuleForbidTool, "a tool --forbid-tool names that was called"},
	{RuleSlow, "a call or a task (creation to terminal status) slower than --max-duration"},
	{RuleShadow, "a call the shadow server (record --shadow, --shadow-cmd) answered otherwise than the recorded one, by diff --shadow's rules (a note unless --fail-on names it)"},
	{RuleTaskFailed, "a task that ended failed or cancelled (tasks/get, a status notification or tasks/result said so)"},
	{RuleChallenge, "a 401 whose WWW-Authenticate names no resource_metadata (MCP authorization requires it; a note unless --fail-on names it)"},
}

// DefaultFailOn is --fail-on's default.
var DefaultFailOn = []string{RuleError, RuleToolError, RuleInvalid, RuleExpectTool, RuleForbidTool, RuleSlow, RuleDrift, RuleTaskFailed}

// deprecatedVersions are the protocol versions older than 2025-06-18.
var deprecatedVersions = []string{"2024-11-05", "2025-03-26"}

// Options say what to check.
type Options struct {
	FailOn      []string // rules whose findings fail the check; others are notes
	ExpectTools []string
	ForbidTools []string
	MaxDuration time.Duration // 0: no limit
	Baseline    *Baseline     // nil: no drift check
	// BaselineAs maps a tape's server to the baseline's server it is
	// checked against (--baseline-server TAPE=BASELINE); a server not in
	// it is checked against the baseline's server of its own name.
	BaselineAs map[string]string
	// BaselineOnly, if not "", is the baseline's server a tape's only
	// server is checked against (--baseline-server BASELINE).
	BaselineOnly string
	// Spec runs the rules of SpecRules (check --spec); "spec" in FailOn
	// fails on any of them.
	Spec bool
}

// Finding is one thing found on a tape.
type Finding struct {
	Rule    string `json:"rule"`
	Tape    string `json:"tape"`
	Line    int    `json:"line"` // 0 when it concerns the whole tape
	Seq     int    `json:"seq"`
	Server  string `json:"server,omitempty"`
	Message string `json:"message"`
	Fail    bool   `json:"fail"` // the rule is in --fail-on
}

// Tape checks one tape, x, named name. The error is a message of the
// tape it could not read (the file changed since it was indexed; cut
// shorter while mapped, an error naming it and wrapping mmap.ErrShrank):
// no findings then, which would be those of part of the tape.
func Tape(name string, x *tape.Index, o Options) (_ []Finding, err error) {
	var out []Finding
	add := func(rule string, seq int, server, msg string) {
		if _, lane := tape.ShadowOf(server); lane {
			return // a shadow lane's exchanges are B's, not the recorded server's (RuleShadow)
		}
		line := 0
		if seq >= 0 {
			line = x.Entry(seq).Line
		}
		out = append(out, Finding{Rule: rule, Tape: name, Line: line, Seq: seq, Server: server, Message: msg, Fail: o.fails(rule)})
	}

	// Messages' bytes are read forward through one reader, not a read
	// and a classification each (Index.Message).
	mr := x.MessageReader()
	defer mr.Close()
	if afterMap != nil {
		afterMap()
	}
	defer shrank(name, &err)
	defer mmap.Catch(&err)() // the tape cut shorter while mapped: ErrShrank, not a crash
	var readErr error        // the first message it could not read
	msg := func(i int) ([]byte, error) {
		raw, err := mr.At(x.Entry(i))
		if err != nil && readErr == nil {
			readErr = err
		}
		return raw, err
	}
	called := map[string]bool{}
	for i := range x.Len() {
		if readErr != nil {
			return nil, readErr
		}
		e := x.Entry(i)
		p := x.Pair(i)
		switch e.Kind {
		case tape.KindInvalid:
			msg := "not a JSON-RPC message"
			if e.Problem != "" {
				msg += ": " + e.Problem
			}
			add(RuleInvalid, i, e.Server, msg)
		case tape.KindLifecycle:
			if e.Method == tape.MethodHTTPExchange {
				if raw, err := msg(i); err == nil {
					if pr := gjson.GetBytes(raw, "params"); pr.Get("status").Int() == 401 && pr.Get(tape.ParamWWWAuthenticate).Exists() &&
						!strings.Contains(strings.ToLower(pr.Get(tape.ParamWWWAuthenticate).Raw), "resource_metadata") {
						add(RuleChallenge, i, e.Server, "a 401 whose WWW-Authenticate names no resource_metadata: "+firstLine(pr.Get(tape.ParamWWWAuthenticate+".0").String()))
					}
				}
			}
			if e.Method == tape.MethodStderr {
				if raw, err := msg(i); err == nil {
					add(RuleStderr, i, e.Server, "the server wrote: "+firstLine(gjson.GetBytes(raw, "params.text").String()))
				}
			}
		case tape.KindRequest:
			slow := o.MaxDuration > 0 && p.Partner >= 0 && p.Timed && p.Latency > o.MaxDuration
			// The tool a call names costs a read of the message: only
			// for --expect-tool, --forbid-tool or a finding's text.
			target := ""
			if e.Method == "tools/call" && (len(o.ExpectTools)+len(o.ForbidTools) > 0 || p.Cancelled || p.Pending || slow) {
				if raw, err := msg(i); err == nil {
					target = tape.Target(e.Method, raw)
					called[target] = true
				}
			}
			what := e.Method
			if target != "" {
				what += " " + target
			}
			switch {
			case p.Cancelled:
				add(RuleCancelled, i, e.Server, what+": cancelled by the client")
			case p.Pending:
				add(RulePending, i, e.Server, what+": no answer on the tape")
			}
			if slow {
				add(RuleSlow, i, e.Server, fmt.Sprintf("%s took %s, over %s", what, tape.FormatLatency(1, p.Latency), o.MaxDuration))
			}
		case tape.KindResponse:
			method := p.Method
			switch {
			case p.Orphan:
				add(RuleOrphan, i, e.Server, "an answer (id "+string(e.ID)+") no request matched")
				continue
			case p.Late:
				add(RuleLate, i, e.Server, method+": answered after it was cancelled")
			}
			switch x.Failure(i) {
			case tape.RPCError:
				raw, _ := msg(i)
				er := gjson.GetBytes(raw, "error")
				add(RuleError, i, e.Server, fmt.Sprintf("%s: error %d %s", method, er.Get("code").Int(), er.Get("message").String()))
			case tape.ToolError:
				raw, _ := msg(i)
				text := ""
				for _, c := range gjson.GetBytes(raw, "result.content").Array() {
					if t := c.Get("text"); t.Exists() {
						text = firstLine(t.String())
						break
					}
				}
				target := ""
				if p.Partner >= 0 {
					if rm, err := x.Message(p.Partner); err == nil {
						target = " " + tape.Target(method, rm.Raw)
					}
				}
				add(RuleToolError, i, e.Server, fmt.Sprintf("%s%s failed: %s", method, target, text))
			}
			if method == "initialize" {
				if raw, err := msg(i); err == nil {
					if v := gjson.GetBytes(raw, "result.protocolVersion").String(); slices.Contains(deprecatedVersions, v) {
						add(RuleDeprecated, i, e.Server, "the session negotiated protocol "+v+", older than 2025-06-18")
					}
				}
			}
		}
	}
	if readErr != nil {
		return nil, readErr
	}
	taskFindings(x, o, add)
	for _, t := range o.ExpectTools {
		if !called[t] {
			add(RuleExpectTool, -1, "", "the tool "+t+" was never called")
		}
	}
	for _, t := range o.ForbidTools {
		if called[t] {
			add(RuleForbidTool, -1, "", "the tool "+t+" was called")
		}
	}
	if o.Baseline != nil {
		for _, d := range o.Baseline.Drift(x, baselineNames(x, o)) {
			out = append(out, Finding{Rule: RuleDrift, Tape: name, Line: d.Line, Seq: d.Seq, Server: d.Server, Message: d.String(), Fail: slices.Contains(o.FailOn, RuleDrift)})
		}
		if msg := baselineMismatch(x, o); msg != "" {
			add(RuleDrift, -1, "", msg)
		}
	}
	if o.Spec {
		if err := specCheck(x, add); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// afterMap, when not nil, is called right after a pass makes its
// MessageReader, which maps a large tape (a test's hook: it cuts the tape
// there).
var afterMap func()

// shrank names the tape in *err when it wraps mmap.ErrShrank.
func shrank(name string, err *error) {
	if errors.Is(*err, mmap.ErrShrank) {
		*err = fmt.Errorf("read tape %s: %w", name, *err)
	}
}

// tapeServers returns the servers tape x names, without "" (lines with no
// _meta.server).
func tapeServers(x *tape.Index) []string {
	var out []string
	for _, s := range x.Servers() {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// baselineNames maps each server of tape x to the baseline's server it is
// checked against, where the names differ.
func baselineNames(x *tape.Index, o Options) map[string]string {
	as := map[string]string{}
	servers := tapeServers(x)
	if o.BaselineOnly != "" && len(servers) == 1 {
		as[servers[0]] = o.BaselineOnly
	}
	for t, b := range o.BaselineAs {
		as[t] = b
	}
	return as
}

// baselineMismatch says why the baseline does not apply to tape x: no
// server of the tape is one of the baseline's (after --baseline-server),
// so nothing on it could drift. It returns "" when one is.
func baselineMismatch(x *tape.Index, o Options) string {
	servers := tapeServers(x)
	as := baselineNames(x, o)
	for _, s := range servers {
		base := s
		if n, ok := as[s]; ok {
			base = n
		}
		if _, ok := o.Baseline.Servers[base]; ok {
			return ""
		}
	}
	if o.BaselineOnly != "" && len(servers) != 1 {
		return fmt.Sprintf("the baseline does not apply: --baseline-server %s names the baseline's server for a tape's only server, and the tape has %s; give --baseline-server TAPE_SERVER=%s",
			o.BaselineOnly, quoted(servers), o.BaselineOnly)
	}
	return fmt.Sprintf("the baseline does not apply: it has %s, the tape has %s; check a tape's server against a baseline's server of another name with --baseline-server TAPE_SERVER=BASELINE_SERVER",
		quoted(o.Baseline.ServerNames()), quoted(servers))
}

// quoted lists servers for a message: server "a", servers "a", "b", or no
// servers.
func quoted(servers []string) string {
	if len(servers) == 0 {
		return "no servers"
	}
	q := make([]string, len(servers))
	for i, s := range servers {
		q[i] = fmt.Sprintf("%q", s)
	}
	if len(q) == 1 {
		return "server " + q[0]
	}
	return "servers " + strings.Join(q, ", ")
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// fails reports whether rule's findings fail the check.
func (o Options) fails(rule string) bool {
	return slices.Contains(o.FailOn, rule) || o.Spec && isSpecRule(rule) && slices.Contains(o.FailOn, RuleSpec)
}

// Failed reports whether a finding fails the check.
func Failed(fs []Finding) bool {
	return slices.ContainsFunc(fs, func(f Finding) bool { return f.Fail })
}
