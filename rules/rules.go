package rules

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"go.yaml.in/yaml/v3"

	"github.com/tapedeck/tapedeck/tape"
)

// Phase is where a message stands in its exchange.
type Phase uint8

const (
	phaseRequest       Phase = 1 << iota // a client's request
	phaseResponse                        // an answer, to either side's request
	phaseNotification                    // a notification, either way
	phaseServerRequest                   // a server's request to the client
)

var phaseNames = map[string]Phase{
	"request": phaseRequest, "response": phaseResponse, "notification": phaseNotification,
	"server_request": phaseServerRequest, "server-request": phaseServerRequest,
}

func (p Phase) String() string {
	switch p {
	case phaseRequest:
		return "request"
	case phaseResponse:
		return "response"
	case phaseNotification:
		return "notification"
	case phaseServerRequest:
		return "server_request"
	}
	return "other"
}

// Set is a compiled rules file. It is safe for concurrent use.
type Set struct {
	file   string
	rules  []*rule
	seed   int64
	seeded bool // the file gave a seed

	// Which requests a Conn remembers, for rules on responses that name
	// their call's method or tool: all, those methods, or none.
	trackAll     bool
	trackMethods map[string]bool
	names        map[string]string // method names interned (intern)

	// The rules a message of a method can match, in file order: those
	// that name the method (or, naming a target, a method with targets),
	// merged as they are met with those that name none (anyMethod): kept
	// apart so that loading stays linear in the rules however many
	// methods they name.
	byMethod  map[string][]*rule
	anyMethod []*rule
}

var commonMethods = []string{"initialize", "notifications/initialized", "ping", "tools/list", "prompts/list",
	"resources/list", "resources/templates/list", "notifications/progress", "notifications/cancelled",
	"notifications/message", "logging/setLevel", "roots/list", "sampling/createMessage", "elicitation/create",
	"notifications/tools/list_changed", "notifications/resources/updated", "server/discover"}

// plan decides which requests a Conn must remember: only a rule that can
// match a response and names a method, a target, or reads them in its
// expression needs its call paired.
func (s *Set) plan() {
	s.trackMethods = map[string]bool{}
	s.names = map[string]string{}
	for _, m := range append(tape.TargetMethods(), commonMethods...) {
		s.names[m] = m
	}
	s.byMethod = map[string][]*rule{}
	for i, r := range s.rules {
		r.index = i
		switch {
		case len(r.methods) > 0:
			for _, m := range r.methods {
				if l := s.byMethod[m]; len(l) == 0 || l[len(l)-1] != r { // a method listed twice
					s.byMethod[m] = append(l, r)
				}
			}
		case len(r.targets) > 0:
			for _, m := range tape.TargetMethods() {
				s.byMethod[m] = append(s.byMethod[m], r)
			}
		default:
			s.anyMethod = append(s.anyMethod, r)
		}
	}
	for _, r := range s.rules {
		for _, m := range r.methods {
			s.names[m] = m
		}
		if !r.phaseAllows(phaseResponse) {
			continue
		}
		switch {
		case len(r.methods) > 0:
			for _, m := range r.methods {
				s.trackMethods[m] = true
			}
		case len(r.targets) > 0:
			for _, m := range tape.TargetMethods() {
				s.trackMethods[m] = true
			}
		case r.usesCall:
			s.trackAll = true
		}
	}
}

// Len is the number of rules.
func (s *Set) Len() int { return len(s.rules) }

// File is the rules file's name.
func (s *Set) File() string { return s.file }

// Seed reseeds the random sources of probability schedules (a --seed flag
// overrides the file's seed) and restarts every schedule's count.
func (s *Set) Seed(seed int64) {
	s.seed = seed
	for _, r := range s.rules {
		h := fnv.New64a()
		h.Write([]byte(r.name))
		r.mu.Lock()
		r.rng = rand.New(rand.NewPCG(uint64(seed), h.Sum64()))
		r.count = 0
		r.mu.Unlock()
	}
}

// FileSeed returns the seed the rules file gives, if it gives one.
func (s *Set) FileSeed() (int64, bool) { return s.seed, s.seeded }

// Names lists the rules' names in file order.
func (s *Set) Names() []string {
	out := make([]string, len(s.rules))
	for i, r := range s.rules {
		out[i] = r.name
	}
	return out
}

type rule struct {
	name   string
	line   int
	index  int // its place in the file, from 0
	action Action
	audit  bool
	cont   bool

	// match
	phases   Phase // 0: any
	dir      tape.Dir
	methods  []string
	targets  []string
	server   string
	prog     *vm.Program
	members  []string // the message members the expression names
	needAll  bool     // it names the whole message (or something unknown)
	usesCall bool     // it reads method, target or tool

	warned atomic.Bool // a run-time failure of the expression was logged

	// schedule
	first, every, after int
	prob                float64 // 0: not a probability schedule
	mu                  sync.Mutex
	rng                 *rand.Rand
	count               int

	// actions
	errorObj  []byte // error: a JSON-RPC error object
	toolError string // error: tool: text
	patch     jsonpatch.Patch
	fast      []fastOp // set/delete alone: done on the bytes
	delayMin  time.Duration
	delayMax  time.Duration
	result    []byte      // respond: result:
	answers   *answerBook // respond: tape:
	logText   string
	maxOut    int // the longest message a modify may make (MaxMessage)
}

// candidates are the rules a message of method m can match, in file
// order: the ones naming m merged with the ones naming no method.
func (s *Set) candidates(m string) ruleIter {
	return ruleIter{a: s.byMethod[m], b: s.anyMethod}
}

// ruleIter merges two lists of rules in file order.
type ruleIter struct{ a, b []*rule }

// next returns the next rule, nil at the end.
func (it *ruleIter) next() *rule {
	var r *rule
	switch {
	case len(it.a) > 0 && (len(it.b) == 0 || it.a[0].index < it.b[0].index):
		r, it.a = it.a[0], it.a[1:]
	case len(it.b) > 0:
		r, it.b = it.b[0], it.b[1:]
	}
	return r
}

func (r *rule) phaseAllows(p Phase) bool { return r.phases == 0 || r.phases&p != 0 }
func (r *rule) phaseOnly(p Phase) bool   { return r.phases == p }

func (r *rule) compileMatch(n *yaml.Node) error {
	if n.Kind == 0 {
		return nil // no match: every message
	}
	if n.Kind == yaml.ScalarNode {
		return r.compileWhen(n.Value)
	}
	var m matchSpec
	if err := decodeStrict(n, &m); err != nil {
		return fmt.Errorf("%s (expected phase, dir, method, tool, target, server, when)", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	for _, p := range m.Phase {
		ph, ok := phaseNames[p]
		if !ok {
			return fmt.Errorf("phase %q: expected request, response, notification or server_request", p)
		}
		r.phases |= ph
	}
	switch m.Dir {
	case "", "send", "recv":
		r.dir = tape.Dir(m.Dir)
	default:
		return fmt.Errorf("dir %q: expected send (client to server) or recv (server to client)", m.Dir)
	}
	r.methods = m.Method
	r.targets = append(append([]string(nil), m.Tool...), m.Target...)
	r.server = m.Server
	if m.When != "" {
		return r.compileWhen(m.When)
	}
	return nil
}

// whenError says why an expression does not compile, quoting some 80
// bytes of it (an expression may be long) and where the problem is.
func whenError(e string, err error) error {
	var fe *file.Error
	if len(e) <= 80 && !strings.ContainsRune(e, '\n') || !errors.As(err, &fe) {
		if len(e) <= 80 {
			return fmt.Errorf("expression %q: %v", e, err)
		}
		return fmt.Errorf("expression %q: %s", clip(e, 80), clip(err.Error(), 200))
	}
	// The offending part: some 40 runes either side of the error's column
	// on its line.
	line := e
	for range fe.Line - 1 {
		_, line, _ = strings.Cut(line, "\n")
	}
	line, _, _ = strings.Cut(line, "\n")
	rs := []rune(line)
	lo, hi := max(fe.Column-40, 0), min(fe.Column+40, len(rs))
	lo, hi = min(lo, hi), max(lo, hi)
	return fmt.Errorf("expression %q (%d bytes): %s at line %d, column %d, near %q", clip(e, 80), len(e), clip(fe.Message, 200), fe.Line, fe.Column+1, string(rs[lo:hi]))
}

// compileWhen compiles an expression and notes which members it reads.
func (r *rule) compileWhen(e string) error {
	p, err := expr.Compile(e, expr.AllowUndefinedVariables(), expr.AsBool())
	if err != nil {
		return whenError(e, err)
	}
	r.prog = p
	seen := map[string]bool{}
	node := p.Node()
	ast.Find(node, func(n ast.Node) bool {
		if id, ok := n.(*ast.IdentifierNode); ok && !seen[id.Value] {
			seen[id.Value] = true
			switch id.Value {
			case "method", "target", "tool":
				r.usesCall = true
			case "phase", "dir", "server", "session", "kind", "id":
			case "$env":
				r.needAll, r.usesCall = true, true
			default:
				r.members = append(r.members, id.Value)
			}
		}
		return false
	})
	return nil
}

func (r *rule) compileSchedule(n *yaml.Node) error {
	if n.Kind == 0 {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		if n.Value == "always" {
			return nil
		}
		return fmt.Errorf("%q: expected always, or a mapping with one of first, every, after, probability", n.Value)
	}
	var s scheduleSpec
	if err := decodeStrict(n, &s); err != nil {
		return fmt.Errorf("%s (expected first, every, after or probability)", strings.TrimPrefix(err.Error(), "yaml: "))
	}
	set := 0
	for _, v := range []bool{s.First != 0, s.Every != 0, s.After != 0, s.Probability != nil} {
		if v {
			set++
		}
	}
	if set != 1 {
		return fmt.Errorf("expected exactly one of first: N, every: N, after: N, probability: P")
	}
	if s.First < 0 || s.Every < 0 || s.After < 0 {
		return fmt.Errorf("expected a positive count")
	}
	r.first, r.every, r.after = s.First, s.Every, s.After
	if s.Probability != nil {
		p := *s.Probability
		if !(p > 0 && p <= 1) { // NaN too
			return fmt.Errorf("probability %v: expected a number in (0, 1]", p)
		}
		r.prob = p
	}
	return nil
}

// due counts a match and says whether the schedule fires on it.
func (r *rule) due() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.count++
	n := r.count
	switch {
	case r.first > 0:
		return n <= r.first
	case r.every > 0:
		return n%r.every == 0
	case r.after > 0:
		return n > r.after
	case r.prob > 0:
		return r.rng.Float64() < r.prob
	}
	return true
}

func (r *rule) delay() time.Duration {
	if r.delayMax == r.delayMin {
		return r.delayMin
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.delayMin + time.Duration(r.rng.Int64N(int64(r.delayMax-r.delayMin)+1))
}

// Message is one JSON-RPC message crossing a connection.
type Message struct {
	Raw     []byte   // the message as it crossed the wire (one object, no batch)
	Dir     tape.Dir // DirSend: client to server; DirRecv: server to client
	Server  string
	Session string // the HTTP session, or ""
	// Head, if not nil, is what a tape.Peeker found in Raw (a caller
	// that walked it already); nil: Apply walks it.
	Head *tape.Head
}

// Injection is what one rule did to a message: the record the tape keeps
// in the message's _meta.injected (tape.MetaInjected).
type Injection = tape.Injection

// Decision is what to do with a message. The zero Decision (no rule
// matched) says: send it on unchanged.
type Decision struct {
	// Matched is false when no rule acted (audits included): send the
	// message on as it is, and record it with no injection.
	Matched bool
	// Out are the messages to send on in its place: none when dropped, two
	// when duplicated, a changed one when modified or turned into an error.
	// Nil with Matched false means the message itself.
	Out [][]byte
	// Reply is an answer to send back to the message's sender instead of
	// forwarding it (error and respond on a request), or nil.
	Reply []byte
	// Delay is how long to hold the message before sending it on.
	Delay time.Duration
	// Disconnect says to cut the connection instead of sending anything.
	Disconnect bool
	// Injections are the records for the tape: the message's own (in
	// _meta.injected), and ReplyInjections for the reply.
	Injections      []Injection
	ReplyInjections []Injection
	// Logs are lines for the operator (log actions).
	Logs []string
}

var peekers = sync.Pool{New: func() any { return new(tape.Peeker) }}

// intern returns a method's name as a string, without allocating for the
// methods the rules name and MCP's common ones.
func (s *Set) intern(b []byte) string {
	if m, ok := s.names[string(b)]; ok {
		return m
	}
	return string(b)
}

// Conn applies a Set to one connection, pairing responses with requests.
// It is safe for concurrent use (a connection's two directions).
type Conn struct {
	set     *Set
	mu      sync.Mutex
	pending map[pendingKey]call
	npend   atomic.Int64 // len(pending), read without the lock
}

type pendingKey struct {
	session string
	dir     tape.Dir // the request's direction
	id      tape.ID
}

type call struct{ method, target string }

// Conn returns a new connection's view of the set. A nil Set gives a nil
// Conn, whose Apply always says "send it on".
func (s *Set) Conn() *Conn {
	if s == nil {
		return nil
	}
	return &Conn{set: s, pending: map[pendingKey]call{}}
}

// env is one message as the rules see it: what a match needs at once
// (kind, phase, method, target), and the decoded members an expression
// reads, on demand.
type env struct {
	kind    tape.Kind
	id      []byte // the id's JSON text, aliasing msg.Raw
	phase   Phase
	method  string
	target  string
	msg     Message
	decoded map[string]any
	all     bool
}

func (v *env) ID() tape.ID { return tape.ID(v.id) }

func (v *env) get(members []string, all bool) map[string]any {
	if v.decoded == nil {
		v.decoded = map[string]any{}
	}
	if all && !v.all {
		var m map[string]any
		if json.Unmarshal(v.msg.Raw, &m) == nil {
			for k, x := range m {
				if _, ok := v.decoded[k]; !ok {
					v.decoded[k] = x
				}
			}
		}
		v.all = true
	}
	for _, k := range members {
		if _, ok := v.decoded[k]; ok || v.all {
			continue
		}
		raw := topRaw(v.msg.Raw, k)
		if raw == nil {
			v.decoded[k] = nil
			continue
		}
		var x any
		if json.Unmarshal(raw, &x) == nil {
			v.decoded[k] = x
		}
	}
	out := make(map[string]any, len(v.decoded)+9)
	for k, x := range v.decoded {
		if x != nil {
			out[k] = x
		}
	}
	out["phase"] = v.phase.String()
	out["dir"] = string(v.msg.Dir)
	out["server"] = v.msg.Server
	out["session"] = v.msg.Session
	out["kind"] = v.kind.String()
	out["method"] = v.method
	out["target"] = v.target
	out["tool"] = v.target
	if len(v.id) > 0 {
		var id any
		_ = json.Unmarshal(v.id, &id)
		out["id"] = id
	}
	return out
}

// topRaw returns the raw value of a top-level member of a JSON object.
func topRaw(msg []byte, key string) []byte {
	var m map[string]json.RawMessage
	// A full decode into RawMessages skips values without building them.
	if json.Unmarshal(msg, &m) != nil {
		return nil
	}
	return m[key]
}

// Apply decides what happens to one message. A nil Conn, or a message
// that is not one JSON-RPC object, is sent on unchanged.
func (c *Conn) Apply(m Message) Decision {
	if c == nil {
		return Decision{}
	}
	var h tape.Head
	if m.Head != nil {
		h = *m.Head
	} else {
		pk := peekers.Get().(*tape.Peeker)
		h = pk.Peek(m.Raw)
		peekers.Put(pk)
	}
	if h.Kind == tape.KindInvalid {
		return Decision{}
	}
	method := h.Method
	// The quick way out: a request or notification of a method no rule
	// can match, whose call no rule on responses needs, meets no rule.
	if h.Kind != tape.KindResponse {
		if len(c.set.byMethod[string(method)]) == 0 && len(c.set.anyMethod) == 0 && !c.set.trackAll && !c.set.trackMethods[string(method)] {
			return Decision{}
		}
	} else if c.npend.Load() == 0 && len(c.set.byMethod[""]) == 0 && len(c.set.anyMethod) == 0 {
		// An answer whose call nobody remembered has no method: only the
		// rules that name no method could match it.
		return Decision{}
	}
	v := &env{kind: h.Kind, id: h.ID, msg: m}
	switch h.Kind {
	case tape.KindRequest:
		v.phase, v.method = phaseRequest, c.set.intern(method)
		if m.Dir == tape.DirRecv {
			v.phase = phaseServerRequest
		}
		v.target = tape.Target(v.method, m.Raw)
		if c.set.trackAll || c.set.trackMethods[v.method] {
			c.mu.Lock()
			c.pending[pendingKey{m.Session, m.Dir, v.ID()}] = call{v.method, v.target}
			c.npend.Store(int64(len(c.pending)))
			c.mu.Unlock()
		}
	case tape.KindResponse:
		v.phase = phaseResponse
		if c.npend.Load() > 0 {
			k := pendingKey{m.Session, m.Dir.Opposite(), v.ID()}
			c.mu.Lock()
			cl, ok := c.pending[k]
			if ok {
				delete(c.pending, k)
				c.npend.Store(int64(len(c.pending)))
			}
			c.mu.Unlock()
			if ok {
				v.method, v.target = cl.method, cl.target
			}
		}
	case tape.KindNotification:
		v.phase, v.method = phaseNotification, c.set.intern(method)
	}

	var d Decision
	cur := m.Raw
	for it := c.set.candidates(v.method); ; {
		r := it.next()
		if r == nil {
			break
		}
		if !r.matches(v, &d) || !r.due() {
			continue
		}
		stop := r.apply(&d, v, cur)
		if !r.audit && len(d.Out) == 1 {
			cur = d.Out[0]
		}
		if stop || d.Disconnect || d.Reply != nil || (d.Out != nil && len(d.Out) == 0) {
			break
		}
	}
	return d
}

// matches reports whether v meets r's match; an expression that fails on
// v (a member v lacks, a type it did not expect) is no match, said once a
// rule in d's logs.
func (r *rule) matches(v *env, d *Decision) bool {
	if !r.phaseAllows(v.phase) {
		return false
	}
	if r.dir != "" && r.dir != v.msg.Dir {
		return false
	}
	if r.server != "" && r.server != v.msg.Server {
		return false
	}
	if len(r.methods) > 0 && !contains(r.methods, v.method) {
		return false
	}
	if len(r.targets) > 0 && !contains(r.targets, v.target) {
		return false
	}
	if r.prog == nil {
		return true
	}
	out, err := expr.Run(r.prog, v.get(r.members, r.needAll))
	if err != nil {
		if !r.warned.Swap(true) {
			d.Logs = append(d.Logs, fmt.Sprintf("rule %s (line %d): when: failed on %s: %s; counted as no match (said once a rule)",
				quoteName(r.name), r.line, describe(v), runError(err)))
		}
		return false
	}
	ok, _ := out.(bool)
	return ok
}

// runError is an expression's run-time error on one line: its message
// and where in the expression, without the source snippet.
func runError(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fmt.Sprintf("%s (column %d)", clip(fe.Message, 200), fe.Column+1)
	}
	return clip(strings.ReplaceAll(err.Error(), "\n", " "), 200)
}

func contains(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}
