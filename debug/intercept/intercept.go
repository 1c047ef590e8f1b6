// Package intercept is the live intercept of "tapedeck debug -- SERVER" and
// "debug --upstream URL": the debugger between a live client and a live
// server. The recorders (record.Stdio, record.Proxy) offer it every message
// the rules left alone (rules.Decide: rules first, then a person); it holds
// those a breakpoint matches until the debugger's verdict, and sends
// requests again for the debugger. The debugger holds it as a
// debug.Intercept.
//
// # Design
//
// Service (this file) is the held messages' state machine: Holds and
// Decide for the recorders, Next, Settle, Resend, SetBreakpoints and Close
// for the debugger. A held message waits in Decide on a channel of its
// own until Settle, or until Close forwards it. Serve (serve.go) adds the
// network: one listener, with the stdio shim for each attached client in
// turn, or the recording proxy behind an http.Server.
package intercept

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/tidwall/sjson"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// Rule names the debugger in _meta.injected.
const Rule = "debugger"

// ErrNoSession is what Resend returns before a client connected.
var ErrNoSession = errors.New("no session is running: the client connects first")

// Service is the live intercept's held messages: a record.Interceptor for
// the recorders and a debug.Intercept for the debugger.
type Service struct {
	events chan debug.InterceptEvent
	closed chan struct{}
	once   sync.Once

	mu      sync.Mutex
	breaks  []debug.Breakpoint
	pending map[int]chan debug.Verdict
	next    int
	resends map[string][]byte // the id of a re-sent request → the request as the client sent it
	nresend int
	// send is the stdio session's, while one runs; resend is the HTTP
	// proxy's, which brings the answer back on its own request.
	send   func(dir tape.Dir, msg []byte, inj []rules.Injection) error
	resend func(ctx context.Context, msg []byte, inj []rules.Injection) ([]byte, error)
	serve  *served // the network side, when Serve started one
}

var (
	_ record.Interceptor = (*Service)(nil)
	_ debug.Intercept    = (*Service)(nil)
)

// New returns a Service with no breakpoints and no session.
func New() *Service {
	return &Service{events: make(chan debug.InterceptEvent, 64), closed: make(chan struct{}),
		pending: map[int]chan debug.Verdict{}, resends: map[string][]byte{}}
}

func (s *Service) emit(ev debug.InterceptEvent) {
	select {
	case s.events <- ev:
	case <-s.closed:
	}
}

// Info shows a line (a rule's log, a client's arrival) in the debugger.
func (s *Service) Info(text string) {
	s.emit(debug.InterceptEvent{Kind: debug.InterceptInfo, Text: text})
}

// Next implements debug.Intercept.
func (s *Service) Next() debug.InterceptEvent {
	select {
	case ev := <-s.events:
		return ev
	case <-s.closed:
		return debug.InterceptEvent{Kind: debug.InterceptClosed}
	}
}

// SetBreakpoints implements debug.Intercept.
func (s *Service) SetBreakpoints(bs []debug.Breakpoint) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.breaks = append([]debug.Breakpoint(nil), bs...)
}

// Holds implements record.Interceptor: a breakpoint matches m, or m
// answers a request the debugger sent again.
func (s *Service) Holds(m rules.Message) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m.Dir == tape.DirRecv && len(s.resends) > 0 {
		if es := tape.Classify(m.Raw); len(es) == 1 && es[0].Kind == tape.KindResponse {
			if _, ok := s.resends[string(es[0].ID)]; ok {
				return true
			}
		}
	}
	return s.matching(m) != ""
}

// matching returns the first enabled breakpoint m matches; mu is held.
func (s *Service) matching(m rules.Message) string {
	for _, b := range s.breaks {
		if !b.Disabled && b.MatchLive(m.Raw, m.Dir, "") {
			return b.String()
		}
	}
	return ""
}

// Decide implements record.Interceptor: it holds m until the debugger's
// verdict (or the session's end, which forwards it). The answer to a
// request the debugger sent again is shown, not forwarded.
func (s *Service) Decide(m rules.Message) rules.Decision {
	es := tape.Classify(m.Raw)
	if len(es) != 1 {
		return rules.Decision{}
	}
	e := es[0]
	s.mu.Lock()
	if req, ok := s.resends[string(e.ID)]; ok && m.Dir == tape.DirRecv && e.Kind == tape.KindResponse {
		delete(s.resends, string(e.ID))
		s.mu.Unlock()
		s.emit(debug.InterceptEvent{Kind: debug.InterceptResent, Request: req, Raw: m.Raw})
		return rules.Decision{Matched: true, Out: [][]byte{}, Injections: []rules.Injection{{Rule: Rule, Action: "resend", Dropped: true,
			Note: "the answer to a request the debugger sent again: shown in the debugger, not forwarded to the client"}}}
	}
	bp := s.matching(m)
	s.next++
	id := s.next
	ch := make(chan debug.Verdict, 1)
	s.pending[id] = ch
	s.mu.Unlock()
	s.emit(debug.InterceptEvent{Kind: debug.InterceptHeld, ID: id, Dir: m.Dir, Raw: m.Raw, Breakpoint: bp})
	var v debug.Verdict
	select {
	case v = <-ch:
	case <-s.closed:
		v = debug.Verdict{Action: debug.Forward}
	}
	s.mu.Lock()
	delete(s.pending, id)
	s.mu.Unlock()
	return verdictDecision(v, e, m)
}

// errorAnswer is the JSON-RPC error the debugger answers with.
type errorAnswer struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// CodeAnswered is the JSON-RPC error code of the debugger's error answer.
const CodeAnswered = -32000

// answer is the error answer to a message with id id.
func answer(id json.RawMessage) []byte {
	a := errorAnswer{JSONRPC: "2.0", ID: id}
	a.Error.Code, a.Error.Message = CodeAnswered, "answered with an error in the tapedeck debugger"
	b, err := json.Marshal(a)
	if err != nil { // an id Classify accepted is valid JSON
		panic(fmt.Sprintf("intercept: the error answer to id %s: %v", id, err))
	}
	return b
}

// verdictDecision turns the debugger's verdict into what the recorder does.
func verdictDecision(v debug.Verdict, e tape.Entry, m rules.Message) rules.Decision {
	drop := rules.Decision{Matched: true, Out: [][]byte{}, Injections: []rules.Injection{{Rule: Rule, Action: string(rules.Block), Dropped: true}}}
	switch v.Action {
	case debug.Drop:
		return drop
	case debug.Edited:
		return rules.Decision{Matched: true, Out: [][]byte{v.Raw}, Injections: []rules.Injection{{Rule: Rule, Action: string(rules.Modify), Original: json.RawMessage(m.Raw)}}}
	case debug.AnswerError:
		switch e.Kind {
		case tape.KindRequest:
			return rules.Decision{Matched: true, Out: [][]byte{}, Reply: answer(json.RawMessage(e.ID)),
				Injections:      []rules.Injection{{Rule: Rule, Action: string(rules.Error), Dropped: true}},
				ReplyInjections: []rules.Injection{{Rule: Rule, Action: string(rules.Error), Injected: true}}}
		case tape.KindResponse:
			return rules.Decision{Matched: true, Out: [][]byte{answer(json.RawMessage(e.ID))}, Injections: []rules.Injection{{Rule: Rule, Action: string(rules.Error), Original: json.RawMessage(m.Raw)}}}
		}
		return drop // a notification has nobody to answer
	}
	return rules.Decision{}
}

// Settle implements debug.Intercept: held message id goes on as v says.
func (s *Service) Settle(id int, v debug.Verdict) {
	s.mu.Lock()
	ch := s.pending[id]
	s.mu.Unlock()
	if ch != nil {
		ch <- v
	}
}

// resendNote says on the tape what a re-sent request is.
const resendNote = "sent again from the debugger; its answer is not forwarded to the client"

// Resend implements debug.Intercept: the client's request raw goes to the
// server again with an id of the session's own (spliced in: the rest of
// raw is sent as it is); its answer comes back as an InterceptResent event.
func (s *Service) Resend(raw []byte) error {
	es := tape.Classify(raw)
	if len(es) != 1 || es[0].Kind != tape.KindRequest {
		return fmt.Errorf("re-send: expected one JSON-RPC request, found %s", describe(es))
	}
	s.mu.Lock()
	send, resend := s.send, s.resend
	if send == nil && resend == nil {
		s.mu.Unlock()
		return ErrNoSession
	}
	s.nresend++
	id, _ := json.Marshal(fmt.Sprintf("tapedeck-resend-%d", s.nresend))
	if send != nil {
		s.resends[string(id)] = raw
	}
	s.mu.Unlock()
	msg, err := sjson.SetRawBytes(raw, "id", id)
	if err != nil {
		return fmt.Errorf("re-send: replacing the request's id: %w", err)
	}
	inj := []rules.Injection{{Rule: Rule, Action: "resend", Injected: true, Note: resendNote}}
	if send != nil {
		return send(tape.DirSend, msg, inj)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	answer, err := resend(ctx, msg, inj)
	if err != nil {
		return err
	}
	s.emit(debug.InterceptEvent{Kind: debug.InterceptResent, Request: raw, Raw: answer})
	return nil
}

func describe(es []tape.Entry) string {
	switch len(es) {
	case 0:
		return "no message"
	case 1:
		return "a " + es[0].Kind.String()
	}
	return fmt.Sprintf("a batch of %d", len(es))
}

// Close implements debug.Intercept: held messages go on, and the network
// side Serve started, if any, stops.
func (s *Service) Close() error {
	s.once.Do(func() { close(s.closed) })
	s.mu.Lock()
	sv := s.serve
	s.mu.Unlock()
	if sv != nil {
		sv.stop()
	}
	return nil
}
