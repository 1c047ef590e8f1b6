package rules

// Rules first, then a person
//
// Every edge that applies rules and lets the debugger hold messages (the
// stdio shim's relay, the HTTP proxy, the replay's stdio edge) puts each
// message through Decide: the rules first; a message no rule matched goes
// to the person (the debugger's live intercept), who may hold it and
// decide as a rule would. What the rules only audited or logged is kept
// with the person's decision. mitmproxy's intercept addon is the shape:
// if the flow should be intercepted, intercept it; the console resumes it.

// Person decides on messages the rules left alone: Holds says whether it
// holds m, and Decide waits for its decision, applied as a rule's.
type Person interface {
	Holds(m Message) bool
	Decide(m Message) Decision
}

// Decide puts m to the rules of c (nil: none) and then, when no rule
// matched and p (nil: nobody) holds it, to p. held, if not nil, runs
// before p decides: an edge forwards what came before the held message.
func Decide(c *Conn, p Person, m Message, held func()) Decision {
	d := c.Apply(m)
	if d.Matched || p == nil || !p.Holds(m) {
		return d
	}
	if held != nil {
		held()
	}
	audit := d
	d = p.Decide(m)
	d.Logs = append(audit.Logs, d.Logs...)
	d.Injections = append(audit.Injections, d.Injections...)
	return d
}
