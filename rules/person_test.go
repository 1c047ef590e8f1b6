package rules

import (
	"strings"
	"testing"
)

// person holds every message whose method is "hold" and decides to drop it.
type person struct{ asked, decided int }

func (p *person) Holds(m Message) bool { p.asked++; return strings.Contains(string(m.Raw), `"hold"`) }
func (p *person) Decide(m Message) Decision {
	p.decided++
	return Decision{Matched: true, Out: [][]byte{}, Injections: []Injection{{Rule: "debugger", Action: string(Block), Dropped: true}}}
}

func TestDecideRulesThenPerson(t *testing.T) {
	set := mustParse(t, `
rules:
  - name: echo-fails
    match: {phase: request, tool: echo}
    action: error
`)
	audit := mustParse(t, `
mode: audit
rules:
  - name: no-hold
    match: {method: hold}
    action: error
`)
	hold := send(`{"jsonrpc":"2.0","id":1,"method":"hold"}`)
	t.Run("a rule that matched decides; the person is not asked", func(t *testing.T) {
		p := &person{}
		d := Decide(set.Conn(), p, send(callEcho), nil)
		if !d.Matched || d.Reply == nil || p.asked != 0 {
			t.Fatalf("matched %v, reply %s, person asked %d times; want the rule's error and no question", d.Matched, d.Reply, p.asked)
		}
	})
	t.Run("left alone and held: the person decides, the audit kept", func(t *testing.T) {
		p := &person{}
		heldFirst := false
		d := Decide(audit.Conn(), p, hold, func() { heldFirst = p.decided == 0 })
		if !d.Matched || d.Out == nil || len(d.Out) != 0 || p.decided != 1 || !heldFirst {
			t.Fatalf("matched %v, out %v, decided %d, held hook before decide %v; want the person's drop", d.Matched, d.Out, p.decided, heldFirst)
		}
		if len(d.Injections) != 2 || !d.Injections[0].Audit || d.Injections[1].Rule != "debugger" {
			t.Errorf("injections %+v: want the audit's, then the person's", d.Injections)
		}
	})
	t.Run("left alone, not held", func(t *testing.T) {
		p := &person{}
		if d := Decide(set.Conn(), p, send(callSum), nil); d.Matched || p.decided != 0 || p.asked != 1 {
			t.Fatalf("matched %v, asked %d, decided %d: want asked once, not decided", d.Matched, p.asked, p.decided)
		}
	})
	t.Run("no rules, no person", func(t *testing.T) {
		if d := Decide(nil, nil, hold, nil); d.Matched {
			t.Fatal("matched without rules or a person")
		}
	})
}
