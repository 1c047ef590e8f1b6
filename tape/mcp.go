package tape

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// MCP vocabulary
//
// What MCP's methods mean, defined once for every part of tapedeck that
// asks: which tool, prompt or resource a call names (Target), whether an
// exchange failed and how (Failure: a JSON-RPC error, or a tool's failure
// reported in its result), and a response's method (Index.MethodOf). The
// recorders, replay, stats and the debugger all go through these, so a
// tool failure is a failure everywhere, and a rejected server/discover
// probe (Negotiation) is a failure nowhere.

// A call's target: the tool, prompt or resource it names. The methods whose
// calls name one, what they name and where: params.name of tools/call and
// prompts/get, params.uri of resources/read, subscribe and unsubscribe, and
// params.ref's name or uri of completion/complete. header marks the methods
// whose target a 2026-07-28 client sends in the Mcp-Name header.
var targets = [...]struct {
	method, kind string
	header       bool
}{
	{"tools/call", TargetTool, true},
	{"prompts/get", TargetPrompt, true},
	{"resources/read", TargetResource, true},
	{"resources/subscribe", TargetResource, false},
	{"resources/unsubscribe", TargetResource, false},
	{"completion/complete", TargetRef, false},
}

// What a call's target is (TargetKind).
const (
	TargetTool     = "tool"
	TargetPrompt   = "prompt"
	TargetResource = "resource"
	TargetRef      = "ref" // completion/complete: a prompt or a resource (params.ref)
)

// TargetKind returns what a method's calls name (TargetTool, TargetPrompt,
// TargetResource, TargetRef), or "" when its calls name no target.
func TargetKind(method string) string {
	for _, t := range targets {
		if t.method == method {
			return t.kind
		}
	}
	return ""
}

// NamesTarget reports whether a method's calls name a tool, prompt or
// resource (see Target).
func NamesTarget(method string) bool { return TargetKind(method) != "" }

// TargetMethods returns the methods whose calls name a target.
func TargetMethods() []string {
	out := make([]string, len(targets))
	for i, t := range targets {
		out[i] = t.method
	}
	return out
}

// NameHeader returns what a call's Mcp-Name header carries (its Target),
// and whether the method has that header at all: tools/call, prompts/get
// and resources/read.
func NameHeader(method string, raw []byte) (string, bool) {
	for _, t := range targets {
		if t.method == method && t.header {
			return Target(method, raw), true
		}
	}
	return "", false
}

// Target returns the tool, prompt or resource a call names (see targets). It
// returns "" for other methods, or when the call names nothing readable.
// raw is the message, or just its params.
func Target(method string, raw []byte) string {
	var path []string
	switch TargetKind(method) {
	case TargetTool, TargetPrompt:
		path = []string{"name"}
	case TargetResource:
		path = []string{"uri"}
	case TargetRef:
		path = []string{"ref", "name", "uri"}
	default:
		return ""
	}
	var c classifier
	params := topMember(&c, raw, "params")
	if !params.ok() {
		params = span{0, len(raw)} // raw is the params themselves
	}
	b := raw
	if path[0] == "ref" {
		ref := member(&c, b, params, "ref")
		if !ref.ok() {
			return ""
		}
		for _, k := range path[1:] {
			if v := member(&c, b, ref, k); v.ok() {
				return stringValue(b, v)
			}
		}
		return ""
	}
	return stringValue(b, member(&c, b, params, path[0]))
}

// topMember returns the value of the top-level member key of the object in
// raw, or an empty span.
func topMember(c *classifier, raw []byte, key string) span {
	i := skipWS(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return span{}
	}
	return member(c, raw, span{i, len(raw)}, key)
}

// member returns the value of member key of the object at obj in b, or an
// empty span.
func member(c *classifier, b []byte, obj span, key string) span {
	if !obj.ok() || b[obj.start] != '{' {
		return span{}
	}
	var found span
	_, _ = c.members(b, obj.start, func(k []byte, v span) {
		if !found.ok() && string(k) == key {
			found = v
		}
	})
	return found
}

// Failure is how an exchange failed, if it did.
type Failure uint8

// Failures. MCP reports a tool's failure in a successful JSON-RPC response
// whose result has "isError": true; both kinds are failures.
const (
	NoFailure Failure = iota
	RPCError          // the response is a JSON-RPC error
	ToolError         // the result says isError: the tool failed
)

func (f Failure) String() string {
	switch f {
	case RPCError:
		return "error"
	case ToolError:
		return "tool-error"
	}
	return "ok"
}

// MethodDiscover is the request a 2026-07-28 client opens with; a server
// of an earlier era rejects it and the client falls back to initialize.
const MethodDiscover = "server/discover"

// JSON-RPC error codes a server of an earlier era rejects server/discover
// with: method not found (stdio), and the -32000 "Server not initialized"
// of a Streamable HTTP server that expects initialize first.
const (
	codeMethodNotFound = "-32601"
	codeServerError    = "-32000"
)

// Negotiation reports whether an exchange is version negotiation rather
// than a failure: a server/discover request (method) sent before
// initialize on its connection (beforeInit), answered with resp, a
// JSON-RPC error meaning the server predates server/discover: method not
// found (-32601), -32000 saying the server is not initialized, or any
// error that came with an HTTP 4xx status. status is the HTTP status the
// answer came with, or 0 to read it from resp's tape metadata (resp is the
// message as recorded or as received). A successful server/discover is no
// failure anyway; one failing otherwise, or after initialize, is a failure.
// The index (and through it check, stats, the debugger and the library),
// replay and verify all decide with this one function.
func Negotiation(method string, beforeInit bool, resp []byte, status int) bool {
	if method != MethodDiscover || !beforeInit {
		return false
	}
	var c classifier
	er := topMember(&c, resp, "error")
	if !er.ok() || resp[er.start] != '{' {
		return false
	}
	if status == 0 {
		status = ParseHTTPMeta(resp).Status
	}
	if status >= 400 && status < 500 {
		return true
	}
	switch string(member(&c, resp, er, "code").in(resp)) {
	case codeMethodNotFound:
		return true
	case codeServerError:
		return strings.Contains(strings.ToLower(stringValue(resp, member(&c, resp, er, "message"))), "not initialized")
	}
	return false
}

// Failed reports how the exchange e belongs to failed, judged by its
// response: NoFailure for a request, notification or lifecycle record
// (see Index.Failure for a request's answer), and for an answer that was
// version negotiation (e.Negotiation, known only to an Index).
func (e *Entry) Failed() Failure {
	switch {
	case e.Kind != KindResponse, e.Negotiation:
		return NoFailure
	case e.Error:
		return RPCError
	case e.ToolError:
		return ToolError
	}
	return NoFailure
}

// Failure reports how the exchange of message i failed: its own failure
// for a response, its response's for a request (NoFailure while it has
// none, and for version negotiation: see Negotiation).
func (x *Index) Failure(i int) Failure {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r := x.recs.at(i)
	if r.kind == KindRequest && r.partner >= 0 {
		r = x.recs.at(int(r.partner))
	}
	return failureOf(r)
}

// failureOf is how response r failed (NoFailure for any other message).
func failureOf(r *rec) Failure {
	switch {
	case r.kind != KindResponse, r.flags&flagNegotiation != 0:
		return NoFailure
	case r.flags&flagError != 0:
		return RPCError
	case r.flags&flagToolError != 0:
		return ToolError
	}
	return NoFailure
}

// Negotiation reports whether message i, a request or its answer, is a
// server/discover probe a server of an earlier era rejected before
// initialize (see the function Negotiation): version negotiation, which
// Failure, NextFailure and Failures do not count.
func (x *Index) Negotiation(i int) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.recs.at(i).flags&flagNegotiation != 0
}

// MethodOf returns the method of message i; a response's is its request's
// (empty for an orphan). Entry leaves a response's Method empty, and Pair
// builds more than this needs.
func (x *Index) MethodOf(i int) string {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.methods.names[x.recs.at(i).method]
}

// NextFailure returns the first response at or after from (dir > 0), or
// at or before it (dir < 0), whose exchange failed (a JSON-RPC error or a
// tool error; version negotiation is not a failure), or -1 when there is
// none that way. It scans the index under
// one lock: a key press on a tape of a million messages.
func (x *Index) NextFailure(from, dir int) int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	n := x.recs.len()
	step := 1
	if dir < 0 {
		step = -1
	}
	for i := from; i >= 0 && i < n; i += step {
		if r := x.recs.at(i); r.kind == KindResponse && r.flags&(flagError|flagToolError) != 0 && r.flags&flagNegotiation == 0 {
			return i
		}
	}
	return -1
}

// Failures returns how many responses indexed so far are JSON-RPC errors
// and how many are tool errors; rejected server/discover probes (version
// negotiation) are not counted.
func (x *Index) Failures() (rpc, tool int) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return x.rpcErrors, x.toolErrors
}

// HasMethod reports whether a message indexed so far has method m (a
// response counts its request's): a replay answers a method the tape never
// holds without scanning the tape for it.
func (x *Index) HasMethod(m string) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.methods.index[m]
	return ok
}

// List is one of MCP's list methods: what a server lists, where the answer
// holds the items, what names an item, and the notification that says the
// list changed. The state pane, check's baseline, diff's definitions and
// the context cost all read this one table.
type List struct {
	Method  string // the request: "tools/list"
	Member  string // the result member that holds the items: "tools"
	Key     string // the item member that names an item: "name", "uri"
	Kind    string // what one item is, for people: "tool"
	Changed string // the list_changed notification it answers to
}

var lists = [...]List{
	{"tools/list", "tools", "name", "tool", "notifications/tools/list_changed"},
	{"prompts/list", "prompts", "name", "prompt", "notifications/prompts/list_changed"},
	{"resources/list", "resources", "uri", "resource", "notifications/resources/list_changed"},
	{"resources/templates/list", "resourceTemplates", "uriTemplate", "resource template", "notifications/resources/list_changed"},
}

// Lists returns MCP's list methods, in the order people read them: tools,
// prompts, resources, resource templates.
func Lists() []List { return slices.Clone(lists[:]) }

// ListOf returns the list method's entry of Lists, and whether method is one.
func ListOf(method string) (List, bool) {
	for _, l := range lists {
		if l.Method == method {
			return l, true
		}
	}
	return List{}, false
}

// Subscriptions of 2026-07-28: a client's subscriptions/listen request
// (params.notifications, a filter) opens a stream of change notifications;
// the server first sends notifications/subscriptions/acknowledged with the
// part of the filter it honors (params.notifications), and stamps it and
// every notification it delivers on the subscription with the listen
// request's id in _meta[SubscriptionIDKey]. The listen request is answered
// (an empty result) only when the server ends the subscription; a client
// ends it with notifications/cancelled.
const (
	MethodListen      = "subscriptions/listen"
	MethodListenAck   = "notifications/subscriptions/acknowledged"
	SubscriptionIDKey = "io.modelcontextprotocol/subscriptionId"
)

// ListenFilter returns, in words, what the filter of a subscriptions/listen
// request or of its acknowledgement names (raw is the message, or its
// params): "tools", "prompts", "resources" for the list_changed
// notifications, "updates of URI" for each resource subscription; and the
// subscription id the message carries in params._meta (the
// acknowledgement's), raw JSON, or "". ok is false when raw holds no filter.
func ListenFilter(raw []byte) (what []string, subscription string, ok bool) {
	var m struct {
		Params *struct {
			Notifications *struct {
				Tools     bool     `json:"toolsListChanged"`
				Prompts   bool     `json:"promptsListChanged"`
				Resources bool     `json:"resourcesListChanged"`
				Updates   []string `json:"resourceSubscriptions"`
			} `json:"notifications"`
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(raw, &m) != nil {
		return nil, "", false
	}
	if m.Params == nil || m.Params.Notifications == nil {
		// raw may be the params themselves
		if json.Unmarshal([]byte(`{"params":`+string(raw)+`}`), &m) != nil || m.Params == nil || m.Params.Notifications == nil {
			return nil, "", false
		}
	}
	n := m.Params.Notifications
	for _, f := range []struct {
		on   bool
		name string
	}{{n.Tools, "tools"}, {n.Prompts, "prompts"}, {n.Resources, "resources"}} {
		if f.on {
			what = append(what, f.name)
		}
	}
	for _, u := range n.Updates {
		what = append(what, "updates of "+u)
	}
	if id, ok := m.Params.Meta[SubscriptionIDKey]; ok {
		subscription = string(id)
	}
	return what, subscription, true
}

// ParamHeaders returns the Mcp-Param-* headers a 2026-07-28 client sends
// with a tools/call (SEP-2243, as the v2 SDK 2.4.0 builds them): for each
// property of the tool's inputSchema marked "x-mcp-header": NAME (reached
// through "properties" only), the call's argument at that path, a string,
// number or boolean, as text; a value with a byte outside printable ASCII
// is sent Base64 inside "=?base64?...?=". An argument absent or null sends
// no header. inputSchema and arguments are JSON; the result is sorted by
// name.
func ParamHeaders(inputSchema, arguments []byte) []MCPParam {
	var schema map[string]any
	var args any
	if json.Unmarshal(inputSchema, &schema) != nil || json.Unmarshal(arguments, &args) != nil {
		return nil
	}
	var out []MCPParam
	var walk func(node map[string]any, val any)
	walk = func(node map[string]any, val any) {
		props, _ := node["properties"].(map[string]any)
		obj, _ := val.(map[string]any)
		for k, p := range props {
			pm, ok := p.(map[string]any)
			if !ok {
				continue
			}
			v := obj[k]
			if name, ok := pm["x-mcp-header"].(string); ok && name != "" {
				if text, ok := paramText(v); ok {
					out = append(out, MCPParam{Name: name, Value: text})
				}
				continue
			}
			walk(pm, v)
		}
	}
	walk(schema, args)
	slices.SortFunc(out, func(a, b MCPParam) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// paramText is an argument's Mcp-Param-* header value.
func paramText(v any) (string, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case bool:
		s = strconv.FormatBool(x)
	case float64:
		s = strconv.FormatFloat(x, 'f', -1, 64)
	default:
		return "", false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e || (s[i] == ' ' && (i == 0 || i == len(s)-1)) {
			return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?=", true
		}
	}
	return s, true
}

// RequestIdentity is what a 2026-07-28 request says of its client in its
// own params._meta (there is no initialize to say it once): the client's
// name and version (io.modelcontextprotocol/clientInfo) and the protocol
// version it speaks (io.modelcontextprotocol/protocolVersion); "" for what
// it does not carry. raw is the message.
func RequestIdentity(raw []byte) (name, version, protocol string) {
	m := gjson.GetBytes(raw, "params._meta")
	if !m.IsObject() {
		return "", "", ""
	}
	ci := m.Get(`io\.modelcontextprotocol/clientInfo`)
	return ci.Get("name").String(), ci.Get("version").String(), m.Get(`io\.modelcontextprotocol/protocolVersion`).String()
}
