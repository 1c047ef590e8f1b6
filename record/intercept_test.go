package record

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// holdInterceptor holds the messages of method "hold-me" until release.
type holdInterceptor struct {
	held    chan rules.Message
	release chan rules.Decision
}

func (h *holdInterceptor) Holds(m rules.Message) bool {
	return bytes.Contains(m.Raw, []byte(`"hold-me"`))
}

func (h *holdInterceptor) Decide(m rules.Message) rules.Decision {
	h.held <- m
	return <-h.release
}

// syncBuffer is a tape written by the relays, read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) Bytes() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return bytes.Clone(s.b.Bytes())
}

// An Interceptor holds one message of the client's (cat echoes every
// line back, so what reaches the server comes back on stdout): what came
// before it goes on at once, what comes after waits, Send writes into the
// session meanwhile, and the decision (an edit) is what goes on, recorded
// with its original.
func TestStdioInterceptorHoldsAndSend(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	tp := &syncBuffer{}
	ic := &holdInterceptor{held: make(chan rules.Message), release: make(chan rules.Decision)}
	s := &Stdio{Command: "cat", Tape: tp, Server: "cat", Intercept: ic, Grace: 200 * time.Millisecond}
	done := make(chan error, 1)
	go func() {
		_, err := s.Run(context.Background(), inR, outW, io.Discard)
		outW.Close()
		done <- err
	}()
	lines := bufio.NewReader(outR)
	next := func() string {
		t.Helper()
		l, err := lines.ReadString('\n')
		if err != nil {
			t.Fatalf("stdout: %v", err)
		}
		return strings.TrimSpace(l)
	}
	go func() {
		io.WriteString(inW, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\n"+`{"jsonrpc":"2.0","id":2,"method":"hold-me"}`+"\n"+`{"jsonrpc":"2.0","id":3,"method":"ping"}`+"\n")
	}()
	if got := next(); got != `{"jsonrpc":"2.0","id":1,"method":"ping"}` {
		t.Fatalf("first line back %s", got)
	}
	held := <-ic.held
	if held.Dir != tape.DirSend || !strings.Contains(string(held.Raw), `"id":2`) {
		t.Fatalf("held %s %s", held.Dir, held.Raw)
	}
	injected := `{"jsonrpc":"2.0","id":"x","method":"injected"}`
	if err := s.Send(tape.DirSend, []byte(injected), []rules.Injection{{Rule: "test", Action: "resend", Injected: true}}); err != nil {
		t.Fatal(err)
	}
	if got := next(); got != injected {
		t.Fatalf("while held, stdout gave %s, want the message Send wrote", got)
	}
	edited := `{"jsonrpc":"2.0","id":2,"method":"edited"}`
	ic.release <- rules.Decision{Matched: true, Out: [][]byte{[]byte(edited)},
		Injections: []rules.Injection{{Rule: "debugger", Action: "modify", Original: held.Raw}}}
	if got := next(); got != edited {
		t.Fatalf("after the decision %s, want the edit", got)
	}
	if got := next(); got != `{"jsonrpc":"2.0","id":3,"method":"ping"}` {
		t.Fatalf("last %s", got)
	}
	inW.Close()
	go io.Copy(io.Discard, outR)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range readTape(t, tp.Bytes()) {
		if e.Kind == tape.KindLifecycle {
			continue
		}
		s := string(e.Dir) + " " + e.Method
		for _, in := range tape.Injections(e.Raw) {
			s += " " + in.Rule + ":" + in.Action
		}
		got = append(got, s)
	}
	want := []string{"send ping", "recv ping", "send injected test:resend", "recv injected", "send edited debugger:modify", "recv edited", "send ping", "recv ping"}
	if !sameSet(got, want) || len(got) != len(want) {
		t.Errorf("tape:\n%s\nwant (in some order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// Rules reach into a JSON-RPC batch: a message a rule answers is taken
// out of the batch that goes on and answered on its own; the rest of the
// batch goes on (cat sends it back).
func TestStdioRulesInBatch(t *testing.T) {
	set, err := rules.Parse("rules.yaml", []byte("rules:\n  - name: fail-me\n    match: {method: fail-me}\n    action: error\n    error: {code: -32001, message: no}\n"))
	if err != nil {
		t.Fatal(err)
	}
	tp := &syncBuffer{}
	var stdout bytes.Buffer
	s := &Stdio{Command: "cat", Tape: tp, Server: "cat", Rules: set, Grace: 200 * time.Millisecond}
	in := `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"fail-me"}]` + "\n"
	if _, err := s.Run(context.Background(), strings.NewReader(in), &stdout, io.Discard); err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	want := []string{`{"jsonrpc":"2.0","id":2,"error":{"code":-32001,"message":"no"}}`, `[{"jsonrpc":"2.0","id":1,"method":"ping"}]`}
	if !sameSet(got, want) || len(got) != 2 {
		t.Errorf("stdout:\n%s\nwant (in some order):\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !bytes.Contains(tp.Bytes(), []byte(`"original":{"jsonrpc":"2.0","id":2,"method":"fail-me"}`)) {
		t.Errorf("the tape does not keep the dropped message:\n%s", tp.Bytes())
	}
}

// TestStdioDelayEndsWithTheSession: a delay rule holds its message no
// longer than the session. The client sends a request a rule delays for
// nine minutes and closes stdin: the shim sees the end of its input
// although the relay is holding, the grace period runs, the session ends,
// and the held request is on the tape as dropped with the reason, never
// sent; the shim returns within seconds. A short delay that ends within
// the grace period still delivers its message.
func TestStdioDelayEndsWithTheSession(t *testing.T) {
	set, err := rules.Parse("rules.yaml", []byte(`
rules:
  - name: slow
    match: {method: slow}
    action: delay
    delay: 9m
  - name: brief
    match: {method: brief}
    action: delay
    delay: 50ms
`))
	if err != nil {
		t.Fatal(err)
	}
	tp := &syncBuffer{}
	var stdout bytes.Buffer
	s := &Stdio{Command: "cat", Tape: tp, Server: "cat", Rules: set, Grace: 500 * time.Millisecond, KillAfter: time.Second}
	in := `{"jsonrpc":"2.0","id":1,"method":"brief"}` + "\n" + `{"jsonrpc":"2.0","id":2,"method":"slow"}` + "\n"
	start := time.Now()
	done := make(chan error, 1)
	go func() { _, err := s.Run(context.Background(), strings.NewReader(in), &stdout, io.Discard); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the shim still runs 20 s after stdin closed: the delayed message holds it")
	}
	if el := time.Since(start); el > 10*time.Second {
		t.Errorf("the shim took %s", el)
	}
	if got, want := stdout.String(), `{"jsonrpc":"2.0","id":1,"method":"brief"}`+"\n"; got != want {
		t.Errorf("stdout %q, want only the briefly delayed message (cat echoes it)", got)
	}
	var slow []tape.Injection
	rd := tape.NewReader(bytes.NewReader(tp.Bytes()))
	for {
		e, err := rd.Next()
		if err != nil {
			break
		}
		if e.Method == "slow" {
			if e.Dir != tape.DirSend {
				t.Errorf("the slow request reached the server: %s", e.Raw)
			}
			slow = append(slow, tape.Injections(e.Raw)...)
		}
	}
	if len(slow) != 1 || !slow[0].Dropped || slow[0].Action != "delay" || !strings.Contains(slow[0].Note, "session ended") {
		t.Errorf("the slow request's injections on the tape: %+v, want one delay, dropped, saying the session ended\n%s", slow, tp.Bytes())
	}
}
