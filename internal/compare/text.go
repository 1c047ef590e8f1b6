package compare

import (
	"fmt"
	"io"
	"strings"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// WriteText writes the report for people: per server, what changed in the
// handshake and the definitions, then each call that differs, with its
// JSON-pointer differences (A's value → B's).
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A %s\nB %s\n", r.A, r.B)
	for _, s := range r.Servers {
		name := s.Server
		if name == "" {
			name = "(unnamed)"
		}
		name = text.Safe(name)
		if s.ServerB != "" {
			name += " (in B: " + text.Safe(s.ServerB) + ")"
		}
		fmt.Fprintf(&b, "\nserver %s: %s in A, %d in B, %d aligned; %s\n", name, text.Plural(s.CallsA, "call"), s.CallsB, s.Matched, text.Plural(s.differences(), "difference"))
		// Each difference counted is one line marked -, + or ~.
		switch s.OnlyIn {
		case "A":
			b.WriteString("  - server only on tape A\n")
		case "B":
			b.WriteString("  + server only on tape B\n")
		}
		for _, c := range []*Change{s.Protocol, s.ServerInfo} {
			if c != nil {
				fmt.Fprintf(&b, "  ~ %s: %s → %s\n", c.What, c.A, c.B)
			}
		}
		for _, c := range s.Caps {
			fmt.Fprintf(&b, "  ~ capability %s: %s → %s\n", c.What, c.A, c.B)
		}
		for _, d := range s.Definitions {
			sign := map[string]string{"added": "+", "removed": "-", "changed": "~"}[d.Change]
			fmt.Fprintf(&b, "  %s %s %s %s\n", sign, d.Kind, d.Name, d.Change)
			writeOps(&b, d.Diff)
		}
		for _, c := range s.Calls {
			call := c.Method
			if c.Target != "" {
				call += " " + c.Target
			}
			switch c.Kind {
			case "onlyA":
				fmt.Fprintf(&b, "  - only in A: #%d %s %s\n", c.A, call, c.Params)
			case "onlyB":
				fmt.Fprintf(&b, "  + only in B: #%d %s %s\n", c.B, call, c.Params)
			case "params":
				fmt.Fprintf(&b, "  ~ #%d ↔ #%d %s: params changed\n", c.A, c.B, call)
				writeOps(&b, c.Diff)
			case "status":
				fmt.Fprintf(&b, "  ~ #%d ↔ #%d %s: %s → %s\n", c.A, c.B, call, c.StatusA, c.StatusB)
			case "result":
				fmt.Fprintf(&b, "  ~ #%d ↔ #%d %s: answer changed\n", c.A, c.B, call)
				writeOps(&b, c.Diff)
			case "latency":
				ratio := float64(c.LatencyB) / float64(max(c.LatencyA, 1))
				fmt.Fprintf(&b, "  ~ #%d ↔ #%d %s: latency %s → %s (%.1f×)\n", c.A, c.B, call, tape.FormatLatency(1, c.LatencyA), tape.FormatLatency(1, c.LatencyB), ratio)
			}
		}
	}
	n := r.Differences()
	if n == 0 {
		b.WriteString("\nthe sessions do not differ\n")
	} else {
		fmt.Fprintf(&b, "\n%s\n", text.Plural(n, "difference"))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeOps(b *strings.Builder, ops []tape.DiffOp) {
	const most = 20
	for i, op := range ops {
		if i == most {
			fmt.Fprintf(b, "      and %d more\n", len(ops)-most)
			return
		}
		path := op.Path
		if path == "" {
			path = "/"
		}
		switch op.Op {
		case "add":
			fmt.Fprintf(b, "      %s: (absent) → %s\n", path, clip(op.ActualJSON()))
		case "remove":
			fmt.Fprintf(b, "      %s: %s → (absent)\n", path, clip(op.ExpectedJSON()))
		default:
			fmt.Fprintf(b, "      %s: %s → %s\n", path, clip(op.ExpectedJSON()), clip(op.ActualJSON()))
		}
	}
}

func clip(s string) string {
	if len(s) > 160 {
		return s[:160] + "…"
	}
	return s
}
