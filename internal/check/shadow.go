package check

import (
	"fmt"
	"slices"
	"strings"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/tape"
)

// HasShadow reports whether tape x holds a shadow lane (record --shadow).
func HasShadow(x *tape.Index) bool {
	return slices.ContainsFunc(x.Servers(), func(s string) bool { _, ok := tape.ShadowOf(s); return ok })
}

// Shadow reports, as RuleShadow findings, what diff --shadow finds on a
// tape: each call the shadow server answered otherwise than the recorded
// one (status, result, latency, a call on one side only), and each
// handshake or definition that differs, at the line of the recorded
// server's request (or of the lane's, for a call only the lane has).
func Shadow(side compare.Side, o Options) ([]Finding, error) {
	r, err := compare.Shadow(side, compare.Options{})
	if err != nil {
		return nil, err
	}
	x := side.Index
	var out []Finding
	add := func(seq int, server, msg string) {
		line := 0
		if seq >= 0 {
			line = x.Entry(seq).Line
		}
		out = append(out, Finding{Rule: RuleShadow, Tape: side.Name, Line: line, Seq: seq, Server: server, Message: msg, Fail: o.fails(RuleShadow)})
	}
	for _, s := range r.Servers {
		for _, c := range []*compare.Change{s.Protocol, s.ServerInfo} {
			if c != nil {
				add(-1, s.Server, fmt.Sprintf("the shadow's %s differs: %s → %s", c.What, c.A, c.B))
			}
		}
		for _, c := range s.Caps {
			add(-1, s.Server, fmt.Sprintf("the shadow's capability %s differs: %s → %s", c.What, c.A, c.B))
		}
		for _, d := range s.Definitions {
			add(-1, s.Server, fmt.Sprintf("the shadow's %s %s: %s", d.Kind, d.Name, d.Change))
		}
		for _, c := range s.Calls {
			call := c.Method
			if c.Target != "" {
				call += " " + c.Target
			}
			seq := c.A
			if seq < 0 {
				seq = c.B
			}
			var msg string
			switch c.Kind {
			case "onlyA":
				msg = call + ": not answered by the shadow"
			case "onlyB":
				msg = call + ": only the shadow got it"
			case "params":
				msg = call + ": the shadow got other params"
			case "status":
				msg = fmt.Sprintf("%s: %s, the shadow %s", call, c.StatusA, c.StatusB)
			case "result":
				var ops []string
				for _, op := range c.Diff {
					ops = append(ops, op.String())
				}
				msg = call + ": the shadow answered otherwise: " + firstLine(strings.Join(ops, "; "))
			case "latency":
				msg = fmt.Sprintf("%s: took %s, the shadow %s", call, tape.FormatLatency(1, c.LatencyA), tape.FormatLatency(1, c.LatencyB))
			}
			add(seq, s.Server, msg)
		}
	}
	return out, nil
}
