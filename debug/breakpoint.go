package debug

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"

	"github.com/tapedeck/tapedeck/tape"
)

// Breakpoint pauses playback before a message it matches. Exactly one of
// Method, Tool, OnError and Expr is set.
type Breakpoint struct {
	ID       int    // given by Player.AddBreakpoint
	Method   string // a request's or notification's method, e.g. "tools/call"
	Tool     string // a tools/call request for this tool (params.name)
	OnError  bool   // a JSON-RPC error response or a tool result with isError
	Expr     string // an expr-lang/expr boolean over the decoded message, e.g. `params.arguments.limit > 5`
	Disabled bool
}

// BreakpointHit says which breakpoint stopped playback, before which message.
type BreakpointHit struct {
	Breakpoint Breakpoint
	Seq        int
}

// String renders the breakpoint in the syntax ParseBreakpoint reads.
func (b Breakpoint) String() string {
	switch {
	case b.Method != "":
		return b.Method
	case b.Tool != "":
		return "tool=" + b.Tool
	case b.OnError:
		return "error"
	case b.Expr != "":
		return "when " + b.Expr
	}
	return "(empty)"
}

// ParseBreakpoint reads a breakpoint spec: a method ("tools/call" or
// "method=tools/call"), "tool=NAME", "error", or "when EXPR" where EXPR is an
// expr-lang/expr boolean over the decoded message (its members at the top
// level, plus seq, dir, server, kind, and method for responses).
func ParseBreakpoint(spec string) (Breakpoint, error) {
	s := strings.TrimSpace(spec)
	switch {
	case s == "":
		return Breakpoint{}, fmt.Errorf("empty breakpoint: expected a method, tool=NAME, error or when EXPR")
	case s == "error" || s == "errors":
		return Breakpoint{OnError: true}, nil
	case strings.HasPrefix(s, "tool="):
		name := strings.TrimSpace(strings.TrimPrefix(s, "tool="))
		if name == "" {
			return Breakpoint{}, fmt.Errorf("breakpoint %q: expected a tool name after tool=", spec)
		}
		return Breakpoint{Tool: name}, nil
	case strings.HasPrefix(s, "method="):
		m := strings.TrimSpace(strings.TrimPrefix(s, "method="))
		if m == "" {
			return Breakpoint{}, fmt.Errorf("breakpoint %q: expected a method after method=", spec)
		}
		return Breakpoint{Method: m}, nil
	case strings.HasPrefix(s, "when ") || s == "when":
		e := strings.TrimSpace(strings.TrimPrefix(s, "when"))
		if e == "" {
			return Breakpoint{}, fmt.Errorf("breakpoint %q: expected an expression after when", spec)
		}
		if _, err := compileExpr(e); err != nil {
			return Breakpoint{}, err
		}
		return Breakpoint{Expr: e}, nil
	case strings.ContainsAny(s, " \t"):
		return Breakpoint{}, fmt.Errorf("breakpoint %q: expected a method, tool=NAME, error or when EXPR", spec)
	}
	return Breakpoint{Method: s}, nil
}

func compileExpr(e string) (*vm.Program, error) {
	p, err := expr.Compile(e, expr.AllowUndefinedVariables(), expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("breakpoint expression %q: %v", e, err)
	}
	return p, nil
}

// bp is a breakpoint with its compiled expression.
type bp struct {
	Breakpoint
	prog *vm.Program
}

// needsBody reports whether matching b needs the message's decoded body.
func (b *bp) needsBody(e tape.Entry) bool {
	switch {
	case b.Tool != "":
		return e.Kind == tape.KindRequest && e.Method == "tools/call"
	case b.Expr != "":
		return true
	}
	return false
}

// match reports whether b matches message e; body is the decoded message
// (nil when no breakpoint needed it) and method the pair's method.
func (b *bp) match(e tape.Entry, raw []byte, body map[string]any, method string) bool {
	if b.Disabled {
		return false
	}
	switch {
	case b.Method != "":
		return e.Method == b.Method && (e.Kind == tape.KindRequest || e.Kind == tape.KindNotification)
	case b.Tool != "":
		if e.Kind != tape.KindRequest || e.Method != "tools/call" || body == nil {
			return false
		}
		return tape.Target(e.Method, raw) == b.Tool
	case b.OnError:
		return e.Failed() != tape.NoFailure // a JSON-RPC error or a tool's
	case b.prog != nil:
		env := map[string]any{}
		for k, v := range body {
			env[k] = v
		}
		env["seq"] = e.Seq
		env["dir"] = string(e.Dir)
		env["server"] = e.Server
		env["kind"] = e.Kind.String()
		if _, ok := env["method"]; !ok {
			env["method"] = method
		}
		out, err := expr.Run(b.prog, env)
		if err != nil {
			return false // a path missing from this message: no match
		}
		ok, _ := out.(bool)
		return ok
	}
	return false
}

// decodeForExpr decodes a message with plain float64 numbers, which
// expressions compare naturally (`limit > 5`).
func decodeForExpr(raw []byte) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}

// progs caches compiled breakpoint expressions for MatchLive.
var progs sync.Map // string → *vm.Program

// MatchLive reports whether b matches a live message, one not on a tape
// (the debugger's live intercept): raw is the message, dir its direction,
// method the method of the request a response answers ("" if unknown).
func (b Breakpoint) MatchLive(raw []byte, dir tape.Dir, method string) bool {
	es := tape.Classify(raw)
	if len(es) != 1 || !es[0].IsWire() {
		return false
	}
	e := es[0]
	e.Dir, e.Seq = dir, -1
	x := &bp{Breakpoint: b}
	if b.Expr != "" {
		p, ok := progs.Load(b.Expr)
		if !ok {
			c, err := compileExpr(b.Expr)
			if err != nil {
				return false
			}
			p, _ = progs.LoadOrStore(b.Expr, c)
		}
		x.prog = p.(*vm.Program)
	}
	var body map[string]any
	if x.needsBody(e) {
		body = decodeForExpr(raw)
	}
	if method == "" {
		method = e.Method
	}
	return x.match(e, raw, body, method)
}
