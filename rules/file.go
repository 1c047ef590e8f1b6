package rules

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"go.yaml.in/yaml/v3"

	"github.com/tapedeck/tapedeck/tape"
)

// The rules file (YAML; JSON is YAML too):
//
//	seed: 42               # optional: the random source of probability schedules
//	mode: audit            # optional: every rule only reports what it would do
//	rules:
//	  - name: echo-fails
//	    match:             # every key optional; all must hold
//	      phase: request   # request | response | notification | server_request
//	      dir: send        # send (client to server) | recv
//	      method: tools/call          # or a list
//	      tool: echo                  # the call's tool, prompt or resource (also: target)
//	      when: 'params.arguments.message == "boom"'   # an expr-lang boolean
//	    action: error      # block | error | modify | delay | respond | duplicate | disconnect | log
//	    error: {code: -32001, message: injected}
//	    schedule: {first: 2}         # always | {first: N} | {every: N} | {after: N} | {probability: P}
//
// match may also be a bare expression string: match: 'method == "ping"'.

// fileDoc is the top level of a rules file.
type fileDoc struct {
	Seed  *int64     `yaml:"seed"`
	Mode  string     `yaml:"mode"`
	Rules []ruleNode `yaml:"rules"`
}

// ruleNode keeps a rule's line for error messages.
type ruleNode struct {
	line int
	col  int
	spec ruleSpec
}

func (n *ruleNode) UnmarshalYAML(v *yaml.Node) error {
	n.line, n.col = v.Line, v.Column
	if deref(v).Kind != yaml.MappingNode {
		return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: a rule must be a mapping (name, match, action, ...), found %s", v.Line, nodeKind(deref(v)))}}
	}
	// The keys were checked with the whole file's (checkKeys).
	return v.Decode(&n.spec)
}

// decodeStrict decodes v into out, refusing unknown keys. The node is
// decoded where it stands (never re-marshalled alone), so that aliases of
// anchors elsewhere in the file resolve and line numbers are the file's.
func decodeStrict(v *yaml.Node, out any) error {
	if err := checkKeys(v, reflect.TypeOf(out), map[keyCheck]bool{}); err != nil {
		return err
	}
	return v.Decode(out)
}

// deref follows aliases to the node they name.
func deref(v *yaml.Node) *yaml.Node {
	for v != nil && v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	return v
}

type keyCheck struct {
	v *yaml.Node
	t reflect.Type
}

var (
	nodeType     = reflect.TypeFor[yaml.Node]()
	ruleNodeType = reflect.TypeFor[ruleNode]()
	ruleSpecType = reflect.TypeFor[ruleSpec]()
)

// checkKeys refuses a mapping key that names no field of the struct type t
// decodes it into, through lists, maps, aliases and merge keys (<<), as
// yaml's KnownFields does for a whole document: yaml.Node.Decode has no
// such option. Each (node, type) is checked once, so aliases cost no more
// than the nodes they name.
func checkKeys(v *yaml.Node, t reflect.Type, seen map[keyCheck]bool) error {
	if v != nil && v.Kind == yaml.DocumentNode && len(v.Content) == 1 {
		v = v.Content[0]
	}
	v = deref(v)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == ruleNodeType {
		t = ruleSpecType
	}
	if v == nil || t == nodeType || seen[keyCheck{v, t}] {
		return nil
	}
	seen[keyCheck{v, t}] = true
	switch t.Kind() {
	case reflect.Struct:
		if v.Kind != yaml.MappingNode {
			return nil // Decode says what was expected
		}
		for i := 0; i+1 < len(v.Content); i += 2 {
			k, val := v.Content[i], v.Content[i+1]
			if k.Kind == yaml.ScalarNode && k.Value == "<<" && (k.Tag == "!!merge" || k.Tag == "") {
				from := []*yaml.Node{val}
				if d := deref(val); d.Kind == yaml.SequenceNode {
					from = d.Content
				}
				for _, m := range from {
					if err := checkKeys(m, t, seen); err != nil {
						return err
					}
				}
				continue
			}
			f, ok := fieldByTag(t, k.Value)
			if !ok {
				return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: field %s not found in type %s", k.Line, printable(clip(k.Value, 80)), t)}}
			}
			if err := checkKeys(val, f, seen); err != nil {
				return err
			}
		}
	case reflect.Slice:
		if v.Kind == yaml.SequenceNode {
			for _, item := range v.Content {
				if err := checkKeys(item, t.Elem(), seen); err != nil {
					return err
				}
			}
		}
	case reflect.Map:
		if v.Kind == yaml.MappingNode {
			for i := 1; i < len(v.Content); i += 2 {
				if err := checkKeys(v.Content[i], t.Elem(), seen); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// fieldByTag returns the type of t's field whose yaml tag names key.
func fieldByTag(t reflect.Type, key string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name != "" && name != "-" && name == key {
			return f.Type, true
		}
	}
	return nil, false
}

// printable is s, quoted when it holds what a terminal would act on.
func printable(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// clip shortens s to at most n bytes (on a rune boundary) and an
// ellipsis, for an error message.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func nodeKind(v *yaml.Node) string {
	switch v.Kind {
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", v.Value)
	case yaml.SequenceNode:
		return "a list"
	case yaml.MappingNode:
		return "a mapping"
	}
	return "nothing"
}

type ruleSpec struct {
	Name     string            `yaml:"name"`
	Match    yaml.Node         `yaml:"match"`
	Action   string            `yaml:"action"`
	Mode     string            `yaml:"mode"`
	Continue bool              `yaml:"continue"`
	Schedule yaml.Node         `yaml:"schedule"`
	Error    *errorSpec        `yaml:"error"`
	Patch    []map[string]any  `yaml:"patch"`
	Set      map[string]any    `yaml:"set"`
	Delete   []string          `yaml:"delete"`
	Delay    string            `yaml:"delay"`
	Respond  *respondSpec      `yaml:"respond"`
	Log      string            `yaml:"log"`
	Extra    map[string]string `yaml:"-"`
}

type matchSpec struct {
	Phase  stringList `yaml:"phase"`
	Dir    string     `yaml:"dir"`
	Method stringList `yaml:"method"`
	Tool   stringList `yaml:"tool"`
	Target stringList `yaml:"target"`
	Server string     `yaml:"server"`
	When   string     `yaml:"when"`
}

// stringList is a string or a list of strings.
type stringList []string

func (s *stringList) UnmarshalYAML(v *yaml.Node) error {
	switch v.Kind {
	case yaml.ScalarNode:
		*s = stringList{v.Value}
		return nil
	case yaml.SequenceNode:
		var l []string
		if err := v.Decode(&l); err != nil {
			return err
		}
		*s = l
		return nil
	}
	return &yaml.TypeError{Errors: []string{fmt.Sprintf("line %d: expected a string or a list of strings, found %s", v.Line, nodeKind(v))}}
}

type errorSpec struct {
	Code    *int   `yaml:"code"`
	Message string `yaml:"message"`
	Data    any    `yaml:"data"`
	// Tool makes the error a tool's failure: a result with isError and
	// this text, instead of a JSON-RPC error.
	Tool string `yaml:"tool"`
}

type respondSpec struct {
	Result any    `yaml:"result"`
	Tape   string `yaml:"tape"`
}

type scheduleSpec struct {
	First       int      `yaml:"first"`
	Every       int      `yaml:"every"`
	After       int      `yaml:"after"`
	Probability *float64 `yaml:"probability"`
}

// Load reads and compiles the rules file at path.
func Load(path string) (*Set, error) { return LoadContext(context.Background(), path) }

// LoadContext is Load, stopped when ctx is done.
func LoadContext(ctx context.Context, path string) (*Set, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("rules: %w", err)
	}
	return ParseContext(ctx, path, data)
}

// Parse compiles a rules file's contents; name is the file's name in
// error messages, which say the line and what was expected.
func Parse(name string, data []byte) (*Set, error) {
	return ParseContext(context.Background(), name, data)
}

// ParseContext is Parse, stopped with ctx's error when ctx is done: a
// rules file of many thousand rules takes a while.
func ParseContext(ctx context.Context, name string, data []byte) (*Set, error) {
	// The YAML parser cannot be stopped: it runs on its own, and a done
	// ctx returns at once (what it parsed is dropped when it ends).
	var root yaml.Node
	parsed := make(chan error, 1)
	go func() { parsed <- yaml.NewDecoder(bytes.NewReader(data)).Decode(&root) }()
	var err error
	select {
	case err = <-parsed:
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: stopped while parsing: %w", name, ctx.Err())
	}
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s: empty rules file: expected a mapping with a rules: list", name)
		}
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	// One document, decoded where it stands: anchors defined in one rule
	// serve aliases in another.
	var doc fileDoc
	if err := decodeStrict(&root, &doc); err != nil {
		return nil, fmt.Errorf("%s: %s", name, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if len(doc.Rules) == 0 {
		return nil, fmt.Errorf("%s: no rules: expected a rules: list with at least one rule", name)
	}
	switch doc.Mode {
	case "", "enforce", "audit":
	default:
		return nil, fmt.Errorf("%s: mode %q: expected enforce or audit", name, doc.Mode)
	}
	s := &Set{file: name}
	if doc.Seed != nil {
		s.seed, s.seeded = *doc.Seed, true
	}
	seen := map[string]int{}
	for i := range doc.Rules {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("%s: stopped at rule %d of %d: %w", name, i+1, len(doc.Rules), err)
			}
		}
		n := &doc.Rules[i]
		r, err := compileRule(ctx, name, n, doc.Mode)
		if err != nil {
			return nil, err
		}
		if r.name == "" {
			r.name = fmt.Sprintf("rule%d", i+1)
		}
		if prev, dup := seen[r.name]; dup {
			return nil, fmt.Errorf("%s:%d: rule name %q is already used at line %d: expected unique names", name, n.line, r.name, prev)
		}
		seen[r.name] = n.line
		s.rules = append(s.rules, r)
	}
	s.Seed(s.seed)
	s.plan()
	return s, nil
}

// Action is what a rule does to a message it matches.
type Action string

const (
	Block      Action = "block"      // drop the message
	Error      Action = "error"      // answer a request with an error, or turn a response into one
	Modify     Action = "modify"     // change the message (JSON Patch, set, delete)
	Delay      Action = "delay"      // hold the message, then send it on
	Respond    Action = "respond"    // answer a request without sending it on
	Duplicate  Action = "duplicate"  // send the message twice
	Disconnect Action = "disconnect" // cut the connection before the message
	Log        Action = "log"        // report the message and send it on
)

var actions = []Action{Block, Error, Modify, Delay, Respond, Duplicate, Disconnect, Log}

func compileRule(ctx context.Context, file string, n *ruleNode, mode string) (*rule, error) {
	sp := n.spec
	at := func(format string, a ...any) error {
		return fmt.Errorf("%s:%d: rule %s: %s", file, n.line, quoteName(sp.Name), fmt.Sprintf(format, a...))
	}
	r := &rule{name: sp.Name, line: n.line, cont: sp.Continue, audit: mode == "audit", maxOut: MaxMessage}
	switch sp.Mode {
	case "":
	case "audit":
		r.audit = true
	case "enforce":
		r.audit = false
	default:
		return nil, at("mode %q: expected enforce or audit", sp.Mode)
	}
	r.action = Action(sp.Action)
	valid := false
	for _, a := range actions {
		valid = valid || a == r.action
	}
	if !valid {
		names := make([]string, len(actions))
		for i, a := range actions {
			names[i] = string(a)
		}
		if sp.Action == "" {
			return nil, at("no action: expected action: one of %s", strings.Join(names, ", "))
		}
		return nil, at("action %q: expected one of %s", sp.Action, strings.Join(names, ", "))
	}
	if err := r.compileMatch(&sp.Match); err != nil {
		return nil, at("match: %v", err)
	}
	if err := r.compileSchedule(&sp.Schedule); err != nil {
		return nil, at("schedule: %v", err)
	}
	// What each action needs, and nothing it cannot use.
	extra := func(what string, set bool) error {
		if set {
			return at("%s is for another action than %s", what, r.action)
		}
		return nil
	}
	if err := errors.Join(
		extra("error:", sp.Error != nil && r.action != Error),
		extra("patch:/set:/delete:", (sp.Patch != nil || sp.Set != nil || sp.Delete != nil) && r.action != Modify),
		extra("delay:", sp.Delay != "" && r.action != Delay),
		extra("respond:", sp.Respond != nil && r.action != Respond),
	); err != nil {
		return nil, err
	}
	switch r.action {
	case Error:
		if err := r.compileError(sp.Error); err != nil {
			return nil, at("error: %v", err)
		}
		if r.phaseOnly(phaseNotification) {
			return nil, at("action error on notifications: expected phase request, response or server_request (a notification has nobody to answer; use block)")
		}
	case Modify:
		if err := r.compilePatch(sp.Patch, sp.Set, sp.Delete); err != nil {
			return nil, at("%v", err)
		}
	case Delay:
		lo, hi, err := parseDelay(sp.Delay)
		if err != nil {
			return nil, at("delay: %v", err)
		}
		r.delayMin, r.delayMax = lo, hi
	case Respond:
		if err := r.compileRespond(ctx, file, sp.Respond); err != nil {
			return nil, at("respond: %v", err)
		}
		if !r.phaseAllows(phaseRequest) && !r.phaseAllows(phaseServerRequest) {
			return nil, at("action respond: expected phase request or server_request (only a request can be answered)")
		}
	case Log:
		r.logText = sp.Log
	}
	return r, nil
}

func quoteName(n string) string {
	if n == "" {
		return "(unnamed)"
	}
	return strconv.Quote(n)
}

func (r *rule) compileError(e *errorSpec) error {
	if e == nil {
		e = &errorSpec{}
	}
	if e.Tool != "" {
		if e.Code != nil || e.Message != "" || e.Data != nil {
			return fmt.Errorf("tool: is a tool's failure (a result with isError): expected no code, message or data beside it")
		}
		r.toolError = e.Tool
		return nil
	}
	code := -32000
	if e.Code != nil {
		code = *e.Code
	}
	msg := e.Message
	if msg == "" {
		msg = "injected by tapedeck rule " + quoteName(r.name)
	}
	obj := map[string]any{"code": code, "message": msg}
	if e.Data != nil {
		obj["data"] = jsonable(e.Data)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	r.errorObj = b
	return nil
}

func (r *rule) compilePatch(patch []map[string]any, set map[string]any, del []string) error {
	var ops []map[string]any
	for _, op := range patch {
		ops = append(ops, jsonable(op).(map[string]any))
	}
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sortStrings(keys)
	for _, k := range keys {
		if !strings.HasPrefix(k, "/") {
			return fmt.Errorf("set: %q: expected a JSON pointer from the message's top, like /params/arguments/name", k)
		}
		// add replaces a member that exists and creates one that does not.
		ops = append(ops, map[string]any{"op": "add", "path": k, "value": jsonable(set[k])})
	}
	for _, k := range del {
		if !strings.HasPrefix(k, "/") {
			return fmt.Errorf("delete: %q: expected a JSON pointer from the message's top, like /result/structuredContent", k)
		}
		ops = append(ops, map[string]any{"op": "remove", "path": k})
	}
	if len(ops) == 0 {
		return fmt.Errorf("action modify: expected patch: (JSON Patch operations), set: (pointer: value) or delete: (pointers)")
	}
	b, err := json.Marshal(ops)
	if err != nil {
		return fmt.Errorf("patch: %v", err)
	}
	p, err := jsonpatch.DecodePatch(b)
	if err != nil {
		return fmt.Errorf("patch: %v", err)
	}
	for i, op := range p {
		switch op.Kind() {
		case "add", "remove", "replace", "move", "copy", "test":
		default:
			return fmt.Errorf("patch operation %d: op %q: expected add, remove, replace, move, copy or test", i+1, op.Kind())
		}
		if _, err := op.Path(); err != nil {
			return fmt.Errorf("patch operation %d: %v", i+1, err)
		}
	}
	r.patch = p
	if len(patch) == 0 {
		// set and delete alone: straight on the bytes (sjson), which is
		// an order of magnitude faster than a JSON Patch's decode and
		// encode; a set creates the members missing on its path.
		for _, k := range keys {
			v, err := json.Marshal(jsonable(set[k]))
			if err != nil {
				return fmt.Errorf("set %s: %v", k, err)
			}
			r.fast = append(r.fast, fastOp{path: sjsonPath(k), value: v})
		}
		for _, k := range del {
			r.fast = append(r.fast, fastOp{path: sjsonPath(k), del: true})
		}
	}
	return nil
}

func (r *rule) compileRespond(ctx context.Context, file string, sp *respondSpec) error {
	if sp == nil || (sp.Result == nil && sp.Tape == "") {
		return fmt.Errorf("expected result: (the answer's result) or tape: (a tape whose recorded answer to the same call is sent)")
	}
	if sp.Result != nil && sp.Tape != "" {
		return fmt.Errorf("expected one of result: and tape:, found both")
	}
	if sp.Result != nil {
		b, err := json.Marshal(jsonable(sp.Result))
		if err != nil {
			return err
		}
		r.result = b
		return nil
	}
	answers, err := loadAnswers(ctx, file, sp.Tape)
	if err != nil {
		return err
	}
	r.answers = answers
	return nil
}

// MaxDelay bounds a delay rule's delay: a message held longer would be
// held past any session (and, held, is on neither the wire nor the tape).
const MaxDelay = 10 * time.Minute

// parseDelay reads "250ms" or a range "100ms..2s", at most MaxDelay.
func parseDelay(s string) (lo, hi time.Duration, err error) {
	defer func() {
		if err == nil && hi > MaxDelay {
			lo, hi, err = 0, 0, fmt.Errorf("%q: expected at most %s (a delay must end within the session)", s, MaxDelay)
		}
	}()
	if s == "" {
		return 0, 0, fmt.Errorf("expected a duration (250ms) or a range (100ms..2s)")
	}
	loText, hiText, isRange := strings.Cut(s, "..")
	a, err := time.ParseDuration(strings.TrimSpace(loText))
	if err != nil || a < 0 {
		return 0, 0, fmt.Errorf("%q: expected a duration such as 250ms or a range such as 100ms..2s", s)
	}
	if !isRange {
		return a, a, nil
	}
	b, err := time.ParseDuration(strings.TrimSpace(hiText))
	if err != nil || b < a {
		return 0, 0, fmt.Errorf("%q: expected a range low..high with low <= high, such as 100ms..2s", s)
	}
	return a, b, nil
}

// jsonable turns YAML's decoded values into ones encoding/json marshals
// (YAML maps may have non-string keys).
func jsonable(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = jsonable(v)
		}
		return out
	case map[any]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[fmt.Sprint(k)] = jsonable(v)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = jsonable(v)
		}
		return out
	}
	return v
}

// MaxAnswerTape bounds the tape a respond: tape: reads its answers from,
// and MaxAnswerLine each of its lines: a tape past them is refused at load
// time, as is a device or a named pipe that no one writes to (a FIFO or
// /dev/zero used to hang the load or fill the memory).
const (
	MaxAnswerTape = 256 << 20
	MaxAnswerLine = 64 << 20
)

// loadAnswers reads a tape's answered calls for respond: tape:, keyed by
// method and canonical params (and by method and target as a fallback).
func loadAnswers(ctx context.Context, file, path string) (*answerBook, error) {
	if !strings.HasPrefix(path, "/") {
		if k := strings.LastIndexByte(file, '/'); k >= 0 {
			path = file[:k+1] + path
		}
	}
	f, err := tape.OpenContext(ctx, path, MaxAnswerTape)
	if err != nil {
		return nil, fmt.Errorf("respond: tape: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > MaxAnswerTape {
		return nil, fmt.Errorf("respond: tape: %s: expected a tape of at most %d bytes, found %d", path, MaxAnswerTape, st.Size())
	}
	book := &answerBook{exact: map[string][]byte{}, loose: map[string][]byte{}}
	pending := map[tape.ID][2]string{}
	rd := tape.NewReader(io.LimitReader(f, MaxAnswerTape), tape.MaxLine(MaxAnswerLine))
	for e := range rd.Entries() {
		if e.Seq%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		switch {
		case e.Kind == tape.KindRequest && e.Dir == tape.DirSend:
			var m struct {
				Params json.RawMessage `json:"params"`
			}
			_ = json.Unmarshal(e.Raw, &m)
			canon, _ := tape.Canonical(m.Params)
			pending[e.ID] = [2]string{e.Method + "\x00" + string(canon), e.Method + "\x00" + tape.Target(e.Method, e.Raw)}
		case e.Kind == tape.KindResponse && e.Dir == tape.DirRecv:
			keys, ok := pending[e.ID]
			if !ok {
				continue
			}
			delete(pending, e.ID)
			var m struct {
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			_ = json.Unmarshal(tape.StripMeta(e.Raw), &m)
			ans := []byte(`{"result":` + string(m.Result) + `}`)
			if m.Result == nil {
				ans = []byte(`{"error":` + string(m.Error) + `}`)
			}
			if _, dup := book.exact[keys[0]]; !dup {
				book.exact[keys[0]] = ans
			}
			if _, dup := book.loose[keys[1]]; !dup {
				book.loose[keys[1]] = ans
			}
		}
	}
	if err := rd.Err(); err != nil {
		return nil, fmt.Errorf("respond: tape: %s: %w", path, err)
	}
	if len(book.exact) == 0 {
		return nil, fmt.Errorf("tape %s: no answered requests to respond with", path)
	}
	return book, nil
}

type answerBook struct {
	exact map[string][]byte // method, canonical params → {"result":…} or {"error":…}
	loose map[string][]byte // method, target
}

// fastOp is a set or delete done with sjson.
type fastOp struct {
	path  string
	value []byte // nil: delete
	del   bool
}

// sjsonPath turns a JSON pointer (/params/arguments/a.b, /items/-) into
// sjson's path syntax (params.arguments.a\.b, items.-1).
func sjsonPath(ptr string) string {
	var sb strings.Builder
	for i, seg := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if i > 0 {
			sb.WriteByte('.')
		}
		seg = strings.ReplaceAll(strings.ReplaceAll(seg, "~1", "/"), "~0", "~")
		if seg == "-" {
			sb.WriteString("-1")
			continue
		}
		for _, c := range seg {
			switch c {
			case '.', '*', '?', '|', '#', '@', '\\', ':', '!', '=', '<', '>', '%':
				sb.WriteByte('\\')
			}
			sb.WriteRune(c)
		}
	}
	return sb.String()
}
