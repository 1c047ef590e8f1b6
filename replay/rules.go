package replay

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// Rules at the replay's stdio edge
//
// With StdioOptions.Rules, a client's line is put to the rules before the
// engine sees it (a rule may answer it, drop it, change it, hold it or cut
// the session), and each message the engine sends is put to them before
// the client gets it: faults on recorded answers. What a rule did is said
// on Logf, one line each, as the recorders record it on the tape. A
// request a rule answered or dropped is told to the engine
// (Engine.RuleAnswered): the client sent it.

// ErrDisconnected is what ServeStdio returns when a rule cut the session.
var ErrDisconnected = errors.New("replay: a rule disconnected the client")

// RuleEdge applies a rules file at an edge that serves a tape: In before
// the engine receives a client's line, Out before the engine's messages
// reach the client. A nil RuleEdge lets everything by.
type RuleEdge struct {
	conn   *rules.Conn
	server string
	logf   func(string)
}

func (o StdioOptions) ruleEdge() *RuleEdge { return NewRuleEdge(o.Rules, o.Server, o.Logf) }

// NewRuleEdge returns the edge of one client's session (nil without
// rules); logf is told what the rules did.
func NewRuleEdge(set *rules.Set, server string, logf func(string)) *RuleEdge {
	if set == nil {
		return nil
	}
	if logf == nil {
		logf = func(string) {}
	}
	return &RuleEdge{conn: set.Conn(), server: server, logf: logf}
}

func (r *RuleEdge) decide(msg []byte, dir tape.Dir) (rules.Decision, bool) {
	msg = bytes.TrimSpace(msg)
	// Rules first, then a person (rules.Decide): at a tape's edge nobody
	// holds a message here; the debugger's breakpoints hold the engine's
	// answers instead (debug.Player, replay.Gate).
	d := rules.Decide(r.conn, nil, rules.Message{Raw: msg, Dir: dir, Server: r.server}, nil)
	for _, l := range d.Logs {
		r.logf(l)
	}
	for _, in := range d.Injections {
		if !in.Audit && in.Action != string(rules.Log) {
			r.logf(fmt.Sprintf("rule %s: %s on %s %s", in.Rule, in.Action, dir, summary(msg)))
		}
	}
	return d, d.Matched
}

// stoppedBy returns the injection of the rule that stopped a message (it
// answered or dropped it), if one did.
func stoppedBy(d rules.Decision) (rules.Injection, bool) {
	for _, in := range d.Injections {
		if in.Dropped && !in.Audit {
			return in, true
		}
	}
	return rules.Injection{}, false
}

// summary names a message in a log line: its method or id.
func summary(msg []byte) string {
	es := tape.Classify(msg)
	if len(es) != 1 {
		return "message"
	}
	e := es[0]
	var parts []string
	parts = append(parts, e.Kind.String())
	if e.Method != "" {
		parts = append(parts, e.Method)
	}
	if t := tape.Target(e.Method, msg); t != "" {
		parts = append(parts, t)
	}
	if e.ID != "" {
		parts = append(parts, "id "+string(e.ID))
	}
	return strings.Join(parts, " ")
}

// In puts a client's line to the rules before the engine receives it.
func (r *RuleEdge) In(e *Engine, line []byte, now time.Time) ([]Output, error) {
	if r == nil || line == nil {
		return receive(e, line, now), nil
	}
	d, ok := r.decide(line, tape.DirSend)
	if !ok {
		return receive(e, line, now), nil
	}
	if d.Delay > 0 {
		time.Sleep(d.Delay)
		now = now.Add(d.Delay)
	}
	if d.Disconnect {
		return nil, ErrDisconnected
	}
	var out []Output
	switch {
	case d.Out == nil:
		out = receive(e, line, now)
	case len(d.Out) == 0:
		// Answered or dropped here: the client sent it, so the recorded
		// request it stands for is consumed, in the rule's name.
		if in, ok := stoppedBy(d); ok {
			out = e.RuleAnswered(bytes.TrimSpace(line), in.Rule, in.Action, now)
		}
	default:
		for _, m := range d.Out {
			out = append(out, receive(e, append(m, '\n'), now)...)
		}
	}
	if d.Reply != nil {
		out = append(out, Output{Msg: d.Reply, At: now, Seq: -1})
	}
	return out, nil
}

// Out puts the engine's messages to the rules before the client gets them.
func (r *RuleEdge) Out(outs []Output) ([]Output, error) {
	if r == nil {
		return outs, nil
	}
	res := outs[:0:0]
	for _, o := range outs {
		if o.Msg == nil {
			res = append(res, o)
			continue
		}
		d, ok := r.decide(o.Msg, tape.DirRecv)
		if !ok {
			res = append(res, o)
			continue
		}
		o.hold = d.Delay
		if d.Disconnect {
			return res, ErrDisconnected
		}
		switch {
		case d.Out == nil:
			res = append(res, o)
		case len(d.Out) == 0:
		default:
			for i, m := range d.Out {
				c := o
				c.Msg = m
				if i > 0 {
					c.hold = 0
				}
				res = append(res, c)
			}
		}
		// A server's request a rule answered: the engine takes the answer
		// as the client's.
		_ = d.Reply
	}
	return res, nil
}
