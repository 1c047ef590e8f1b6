package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

const (
	call = `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`
	ping = `{"jsonrpc":"2.0","id":8,"method":"ping"}`
	resp = `{"jsonrpc":"2.0","id":7,"result":{"content":[]}}`
)

func msg(dir tape.Dir, raw string) rules.Message { return rules.Message{Raw: []byte(raw), Dir: dir} }

// breaking returns a Service holding what spec matches.
func breaking(t *testing.T, spec string) *Service {
	t.Helper()
	b, err := debug.ParseBreakpoint(spec)
	if err != nil {
		t.Fatal(err)
	}
	s := New()
	t.Cleanup(func() { s.Close() })
	s.SetBreakpoints([]debug.Breakpoint{b})
	return s
}

// next waits for s's next event, which must be of kind k.
func next(t *testing.T, s *Service, k debug.InterceptEventKind) debug.InterceptEvent {
	t.Helper()
	c := make(chan debug.InterceptEvent, 1)
	go func() { c <- s.Next() }()
	select {
	case ev := <-c:
		if ev.Kind != k {
			t.Fatalf("event %+v, want kind %d", ev, k)
		}
		return ev
	case <-time.After(5 * time.Second):
		t.Fatalf("no event of kind %d in 5s", k)
	}
	panic("unreachable")
}

// decide runs Decide, which blocks while m is held, in a goroutine.
func decide(s *Service, m rules.Message) <-chan rules.Decision {
	c := make(chan rules.Decision, 1)
	go func() { c <- s.Decide(m) }()
	return c
}

func await(t *testing.T, c <-chan rules.Decision) rules.Decision {
	t.Helper()
	select {
	case d := <-c:
		return d
	case <-time.After(5 * time.Second):
		t.Fatal("Decide still holds the message after 5s")
	}
	panic("unreachable")
}

func TestHolds(t *testing.T) {
	s := breaking(t, "tools/call")
	if !s.Holds(msg(tape.DirSend, call)) {
		t.Error("a tools/call request is not held under a tools/call breakpoint")
	}
	if s.Holds(msg(tape.DirSend, ping)) {
		t.Error("a ping is held under a tools/call breakpoint")
	}
	s.SetBreakpoints(nil)
	if s.Holds(msg(tape.DirSend, call)) {
		t.Error("held with no breakpoints")
	}
}

func TestSettle(t *testing.T) {
	cases := []struct {
		name string
		dir  tape.Dir
		raw  string
		v    debug.Verdict
		// what the recorder does
		matched   bool
		out       []string // nil: forward as is
		replyCode int      // the error answered, 0 for none
		action    string
	}{
		{name: "forward", dir: tape.DirSend, raw: call, v: debug.Verdict{Action: debug.Forward}},
		{name: "drop", dir: tape.DirSend, raw: call, v: debug.Verdict{Action: debug.Drop}, matched: true, out: []string{}, action: "block"},
		{name: "edit", dir: tape.DirSend, raw: call, v: debug.Verdict{Action: debug.Edited, Raw: []byte(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"other"}}`)},
			matched: true, out: []string{`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"other"}}`}, action: "modify"},
		{name: "error on a request answers the client", dir: tape.DirSend, raw: call, v: debug.Verdict{Action: debug.AnswerError}, matched: true, out: []string{}, replyCode: CodeAnswered, action: "error"},
		{name: "error on a response turns it into one", dir: tape.DirRecv, raw: resp, v: debug.Verdict{Action: debug.AnswerError}, matched: true,
			out: []string{`{"jsonrpc":"2.0","id":7,"error":{"code":-32000,"message":"answered with an error in the tapedeck debugger"}}`}, action: "error"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := breaking(t, "when true")
			done := decide(s, msg(c.dir, c.raw))
			ev := next(t, s, debug.InterceptHeld)
			if ev.ID == 0 || ev.Dir != c.dir || string(ev.Raw) != c.raw || ev.Breakpoint == "" {
				t.Fatalf("held event %+v: want id, dir %s, the message and the breakpoint", ev, c.dir)
			}
			s.Settle(ev.ID, c.v)
			d := await(t, done)
			if d.Matched != c.matched {
				t.Fatalf("matched %v, want %v (%+v)", d.Matched, c.matched, d)
			}
			if (c.out == nil) != (d.Out == nil) || len(c.out) != len(d.Out) {
				t.Fatalf("out %q, want %q", d.Out, c.out)
			}
			for i := range c.out {
				if string(d.Out[i]) != c.out[i] {
					t.Errorf("out[%d] %s, want %s", i, d.Out[i], c.out[i])
				}
			}
			if c.replyCode != 0 {
				var a struct {
					ID    json.RawMessage
					Error struct{ Code int }
				}
				if err := json.Unmarshal(d.Reply, &a); err != nil || string(a.ID) != "7" || a.Error.Code != c.replyCode {
					t.Errorf("reply %s (%v): want an error %d to id 7", d.Reply, err, c.replyCode)
				}
			} else if d.Reply != nil {
				t.Errorf("reply %s, want none", d.Reply)
			}
			if c.action != "" && (len(d.Injections) != 1 || d.Injections[0].Rule != Rule || d.Injections[0].Action != c.action) {
				t.Errorf("injections %+v, want the debugger's %s", d.Injections, c.action)
			}
		})
	}
}

func TestHeldInOrderWithTheirOwnIDs(t *testing.T) {
	s := breaking(t, "when true")
	first := decide(s, msg(tape.DirSend, call))
	a := next(t, s, debug.InterceptHeld)
	second := decide(s, msg(tape.DirSend, ping))
	b := next(t, s, debug.InterceptHeld)
	if a.ID == b.ID {
		t.Fatalf("two held messages share id %d", a.ID)
	}
	s.Settle(b.ID, debug.Verdict{Action: debug.Drop})
	if d := await(t, second); !d.Matched {
		t.Errorf("the second, dropped: %+v", d)
	}
	select {
	case d := <-first:
		t.Fatalf("the first was settled by the second's verdict: %+v", d)
	default:
	}
	s.Settle(a.ID, debug.Verdict{Action: debug.Forward})
	if d := await(t, first); d.Matched {
		t.Errorf("the first, forwarded: %+v", d)
	}
	s.Settle(a.ID, debug.Verdict{Action: debug.Drop}) // settled already: nothing waits
}

func TestCloseForwardsHeld(t *testing.T) {
	s := breaking(t, "when true")
	done := decide(s, msg(tape.DirSend, call))
	next(t, s, debug.InterceptHeld)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := await(t, done); d.Matched || d.Out != nil {
		t.Errorf("after Close: %+v, want the message forwarded", d)
	}
	next(t, s, debug.InterceptClosed)
	if err := s.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}

func TestResend(t *testing.T) {
	s := breaking(t, "ping")
	if err := s.Resend([]byte(call)); !errors.Is(err, ErrNoSession) {
		t.Fatalf("Resend with no session: %v, want ErrNoSession", err)
	}
	var sent []byte
	var inj []rules.Injection
	s.send = func(dir tape.Dir, m []byte, in []rules.Injection) error {
		if dir != tape.DirSend {
			t.Errorf("re-sent %s, want send", dir)
		}
		sent, inj = m, in
		return nil
	}
	if err := s.Resend([]byte(resp)); err == nil {
		t.Error("Resend of a response: no error")
	}
	// Key order, spacing and _meta are the client's: only the id changes.
	req := `{"method":"tools/call", "id":7,"params":{"name":"echo","_meta":{"k":1}},"jsonrpc":"2.0"}`
	if err := s.Resend([]byte(req)); err != nil {
		t.Fatal(err)
	}
	want := `{"method":"tools/call", "id":"tapedeck-resend-1","params":{"name":"echo","_meta":{"k":1}},"jsonrpc":"2.0"}`
	if string(sent) != want {
		t.Errorf("sent\n%s\nwant\n%s", sent, want)
	}
	if len(inj) != 1 || inj[0].Rule != Rule || inj[0].Action != "resend" || !inj[0].Injected {
		t.Errorf("injections %+v", inj)
	}
	answer := msg(tape.DirRecv, `{"jsonrpc":"2.0","id":"tapedeck-resend-1","result":{}}`)
	if !s.Holds(answer) {
		t.Fatal("the re-sent request's answer is not held")
	}
	d := s.Decide(answer) // not held for a verdict: shown and dropped
	if !d.Matched || d.Out == nil || len(d.Out) != 0 {
		t.Errorf("the answer's decision %+v: want it kept from the client", d)
	}
	ev := next(t, s, debug.InterceptResent)
	if string(ev.Request) != req || !bytes.Equal(ev.Raw, answer.Raw) {
		t.Errorf("resent event %+v", ev)
	}
	if s.Holds(answer) {
		t.Error("a second answer with the re-sent id is held: the first settled it")
	}
}
