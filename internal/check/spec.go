package check

// check --spec: one pass over a tape's index that holds each server's
// negotiated version and advertised tools, reading a message's bytes only
// where a rule needs them (handshakes, tool lists, failures, 2026-07-28
// traffic, calls of tools with an outputSchema), so that a long session of
// an earlier version costs little more than the index.

import (
	"bytes"
	"fmt"
	"regexp"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// specServer is what the pass knows of one server.
type specServer struct {
	version string // negotiated, or "" before it is known
	legacy  int    // seq of the HTTP+SSE endpoint event, or -1
	tools   map[string]*specTool
	schemas bool // some tool has an outputSchema
}

type specTool struct {
	schema   []byte // the outputSchema as listed, or nil
	compiled *jsonschema.Schema
	err      error // compiling failed
}

var toolNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// specCheck adds the findings of check --spec on tape x through add; the
// error is a message it could not read (see Tape, whose mmap.Catch
// covers this reading too).
func specCheck(x *tape.Index, add func(rule string, seq int, server, msg string)) error {
	servers := map[string]*specServer{}
	state := func(name string) *specServer {
		s := servers[name]
		if s == nil {
			s = &specServer{legacy: -1, tools: map[string]*specTool{}}
			servers[name] = s
		}
		return s
	}
	// The messages' bytes are read in the index's order through one
	// reader (a message behind it, such as an answer's request, through
	// the index), not a read and a classification each.
	mr := x.MessageReader()
	defer mr.Close()
	if afterMap != nil {
		afterMap()
	}
	var readErr error // the first message it could not read
	msg := func(i int) []byte {
		raw, err := mr.At(x.Entry(i))
		if err != nil {
			if readErr == nil {
				readErr = err
			}
			return nil
		}
		return raw
	}
	for i := range x.Len() {
		if readErr != nil {
			return readErr
		}
		e := x.Entry(i)
		st := state(e.Server)
		fromClient := e.Dir == tape.DirSend
		switch e.Kind {
		case tape.KindLifecycle:
			switch e.Method {
			case "$transport/start":
				st.version = ""
			case tape.MethodHTTPEndpoint:
				st.legacy = i
			}
		case tape.KindRequest:
			p := x.Pair(i)
			var raw []byte
			if st.version == "" || st.version == modern || !fromClient || p.Duplicate {
				raw = msg(i)
			}
			if p.Duplicate {
				add(SpecDuplicateID, i, e.Server, fmt.Sprintf("%s reused id %s for %s while a request of its own with that id was in flight", side(fromClient), gjson.GetBytes(raw, "id").Raw, e.Method))
			}
			switch {
			case !fromClient:
			case e.Method == "initialize":
				st.version = "" // until its answer says
			case e.Method != tape.MethodDiscover: // a probe negotiates nothing until answered
				if v := requestVersion(raw); v != "" {
					st.version = v
				}
			}
			specRequest(e, i, st, raw, fromClient, add)
		case tape.KindNotification:
			if r, ok := notificationRules[e.Method]; ok {
				specMethod("notification", r, e, i, st.version, fromClient, add)
			}
		case tape.KindResponse:
			specResponse(x, e, i, st, fromClient, msg, add)
		}
	}
	return readErr
}

// specMethod checks who sent a request or notification e, and in which
// version, against r.
func specMethod(kind string, r methodRule, e tape.Entry, i int, version string, fromClient bool, add func(string, int, string, string)) {
	rule := SpecNotification
	if kind == "request" {
		rule = SpecServerReq
	}
	switch {
	case r.client != fromClient:
		add(rule, i, e.Server, fmt.Sprintf("%s sent the %s %s, which only %s sends", side(fromClient), kind, e.Method, side(r.client)))
	case version != "" && version < r.since:
		add(rule, i, e.Server, fmt.Sprintf("%s sent the %s %s in a %s session; it came in %s", side(fromClient), kind, e.Method, version, r.since))
	case version != "" && r.until != "" && version >= r.until:
		add(rule, i, e.Server, fmt.Sprintf("%s sent the %s %s in a %s session; %s no longer has it", side(fromClient), kind, e.Method, version, r.until))
	}
}

func specRequest(e tape.Entry, i int, st *specServer, raw []byte, fromClient bool, add func(string, int, string, string)) {
	v := st.version
	if e.Batch > 0 && v >= "2025-06-18" {
		add(SpecDeprecated, i, e.Server, fmt.Sprintf("%s sent %s in a JSON-RPC batch in a %s session: 2025-06-18 removed batches; send each message on its own", side(fromClient), e.Method, v))
	}
	if !fromClient && v == modern && replacedIn2026[e.Method] {
		add(SpecDeprecated, i, e.Server, fmt.Sprintf("the server sent the request %s in a 2026-07-28 session: that version replaced server-to-client requests with a result of resultType \"input_required\" the client retries with inputResponses", e.Method))
	} else if r, ok := requestRules[e.Method]; ok {
		specMethod("request", r, e, i, v, fromClient, add)
	}
	if e.Method == "sampling/createMessage" && v >= "2025-11-25" {
		if c := gjson.GetBytes(raw, "params.includeContext").String(); c == "thisServer" || c == "allServers" {
			add(SpecDeprecated, i, e.Server, fmt.Sprintf("sampling/createMessage asks includeContext %q, which 2025-11-25 deprecated: give the context in the messages (or tools) the request carries", c))
		}
	}
	if raw == nil || !fromClient {
		return
	}
	h := tape.ParseHTTPMeta(raw)
	if h.MCPMethod != "" && h.MCPMethod != e.Method {
		add(SpecHeaders, i, e.Server, fmt.Sprintf("the client sent Mcp-Method %q with a %s request", h.MCPMethod, e.Method))
	}
	if t, ok := tape.NameHeader(e.Method, raw); ok && h.MCPName != "" && !strings.HasPrefix(h.MCPName, "=?") {
		if t != h.MCPName {
			add(SpecHeaders, i, e.Server, fmt.Sprintf("the client sent Mcp-Name %q with %s naming %q", h.MCPName, e.Method, t))
		}
	}
}

func specResponse(x *tape.Index, e tape.Entry, i int, st *specServer, fromClient bool, msg func(int) []byte, add func(string, int, string, string)) {
	p := x.Pair(i)
	if p.Orphan {
		if id := gjson.GetBytes(msg(i), "id"); id.Type != gjson.Null {
			add(SpecUnknownID, i, e.Server, fmt.Sprintf("%s answered id %s, which no request of %s had", side(fromClient), id.Raw, side(!fromClient)))
		}
		return
	}
	method := p.Method
	failure := x.Failure(i)
	if x.Negotiation(i) {
		return
	}
	needs := failure != tape.NoFailure || st.version == modern || st.version == "" && !fromClient ||
		method == "initialize" || method == "tools/list" || method == "tools/call" && st.schemas
	if !needs {
		return
	}
	raw := msg(i)
	if raw == nil {
		return
	}
	res := gjson.GetBytes(raw, "result")
	if failure == tape.RPCError {
		specErrorCode(e, i, st.version, method, gjson.GetBytes(raw, "error"), add)
		return
	}
	if st.version == modern && !fromClient && res.IsObject() && !res.Get("resultType").Exists() && p.Partner >= 0 && requestVersion(msg(p.Partner)) == modern {
		add(SpecResultType, i, e.Server, fmt.Sprintf("the server's %s result has no resultType, which 2026-07-28 requires of an answer to a 2026-07-28 request", method))
	}
	switch method {
	case tape.MethodDiscover:
		if !fromClient && res.IsObject() {
			st.version = modern
		}
	case "initialize":
		st.version = res.Get("protocolVersion").String()
		if st.legacy >= 0 && st.version >= "2025-03-26" {
			add(SpecDeprecated, st.legacy, e.Server, fmt.Sprintf("the session uses the HTTP+SSE transport with protocol %s: 2025-03-26 deprecated it for Streamable HTTP", st.version))
			st.legacy = -1
		}
	case "tools/list":
		for _, t := range res.Get("tools").Array() {
			name := t.Get("name").String()
			if !toolNameRE.MatchString(name) && (st.version == "" || st.version >= "2025-11-25") {
				add(SpecToolName, i, e.Server, fmt.Sprintf("the server lists the tool %q: tool names are 1 to 128 characters of A-Z, a-z, 0-9, _, - and .", name))
			}
			td := &specTool{}
			if s := t.Get("outputSchema"); s.IsObject() {
				td.schema = []byte(s.Raw)
				st.schemas = true
			}
			st.tools[name] = td
		}
	case "tools/call":
		specToolResult(x, e, i, st, res, failure, add)
	}
}

func specToolResult(x *tape.Index, e tape.Entry, i int, st *specServer, res gjson.Result, failure tape.Failure, add func(string, int, string, string)) {
	if failure == tape.ToolError {
		if len(res.Get("content").Array()) == 0 {
			add(SpecToolError, i, e.Server, fmt.Sprintf("the tool %s failed (isError) with no content saying why", toolCalled(x, i)))
		}
		return
	}
	if !st.schemas {
		return // no tool of the server's lists an outputSchema
	}
	if rt := res.Get("resultType").String(); rt != "" && rt != "complete" {
		return // input_required or a task: the result comes later
	}
	name := toolCalled(x, i)
	td := st.tools[name]
	if td == nil || td.schema == nil || st.version != "" && st.version < "2025-06-18" {
		return
	}
	sc := res.Get("structuredContent")
	if !sc.Exists() {
		add(SpecOutputSchema, i, e.Server, fmt.Sprintf("the tool %s has an outputSchema and its result has no structuredContent", name))
		return
	}
	if td.compiled == nil && td.err == nil {
		td.compiled, td.err = compileSchema(name, td.schema)
	}
	if td.err != nil {
		add(SpecOutputSchema, i, e.Server, fmt.Sprintf("the tool %s lists an outputSchema that does not compile as JSON Schema 2020-12: %s", name, oneLine(td.err.Error())))
		return
	}
	inst, err := jsonschema.UnmarshalJSON(strings.NewReader(sc.Raw))
	if err == nil {
		err = td.compiled.Validate(inst)
	}
	if err != nil {
		add(SpecOutputSchema, i, e.Server, fmt.Sprintf("the tool %s's structuredContent does not match its outputSchema: %s", name, oneLine(err.Error())))
	}
}

// toolCalled is the tool the tools/call answered at i called, read from
// its request ("" when there is none): only where a finding or a schema
// needs it, since reading a request's bytes costs a read of the tape.
func toolCalled(x *tape.Index, i int) string {
	if p := x.Pair(i); p.Partner >= 0 {
		if m, err := x.Message(p.Partner); err == nil {
			return tape.Target("tools/call", m.Raw)
		}
	}
	return ""
}

// requestVersion returns the protocol version a 2026-07-28 request carries
// in its own params._meta, or "".
func requestVersion(raw []byte) string {
	_, _, v := tape.RequestIdentity(raw)
	return v
}

// compileSchema compiles a tool's outputSchema (JSON Schema 2020-12 unless
// it says otherwise); it loads no document from outside the tape.
func compileSchema(tool string, schema []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	url := "urn:tapedeck:tool:" + tool
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Error codes by name: JSON-RPC's, and MCP's from tape.
const (
	codeInvalidParams       = -32602
	codeResourceNotFound    = tape.CodeResourceNotFound
	codeHeaderMismatch      = tape.CodeHeaderMismatch
	codeMissingCapability   = tape.CodeMissingClientCapability
	codeUnsupportedVersion  = tape.CodeUnsupportedProtocolVersion
	codeURLElicitationNeeds = tape.CodeURLElicitationRequired
)

func specErrorCode(e tape.Entry, i int, version, method string, er gjson.Result, add func(string, int, string, string)) {
	code := er.Get("code").Int()
	text := strings.ToLower(er.Get("message").String())
	switch {
	case code == codeResourceNotFound && method != "resources/read" && method != "resources/subscribe":
		add(SpecErrorCode, i, e.Server, fmt.Sprintf("%s answered -32002 (ResourceNotFound), which names an unknown resource of resources/read; invalid parameters are -32602 (InvalidParams)", method))
	case code == codeInvalidParams && method == "resources/read" && strings.Contains(text, "not found"):
		add(SpecErrorCode, i, e.Server, "resources/read of an unknown resource answered -32602 (InvalidParams): an unknown resource is -32002 (ResourceNotFound)")
	case code == codeURLElicitationNeeds && version != "" && version < "2025-11-25":
		add(SpecErrorCode, i, e.Server, fmt.Sprintf("%s answered -32042 (URLElicitationRequired) in a %s session; it came in 2025-11-25", method, version))
	case (code == codeHeaderMismatch || code == codeMissingCapability || code == codeUnsupportedVersion) && version != "" && version < modern:
		add(SpecErrorCode, i, e.Server, fmt.Sprintf("%s answered %d (%s) in a %s session; it came in 2026-07-28", method, code, tape.ErrorName(code), version))
	}
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
