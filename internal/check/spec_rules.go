package check

import "strings"

// The rules of check --spec: each a protocol requirement of MCP, keyed to
// the version a session negotiated (the initialize result's
// protocolVersion, or a 2026-07-28 request's own _meta), with the spec
// section that states it. A rule's findings name the side that broke it:
// a client is held to the spec as a server is.

// SpecRule is one rule of check --spec.
type SpecRule struct {
	ID    string
	Since string // the first protocol version the section is in
	Path  string // the section's path under the specification of Since
	Help  string
}

// URL returns the rule's section in the MCP specification.
func (r SpecRule) URL() string {
	return "https://modelcontextprotocol.io/specification/" + r.Since + "/" + r.Path
}

// RuleSpec is the name --fail-on takes for every rule of check --spec.
const RuleSpec = "spec"

// Rules of check --spec.
const (
	SpecResultType   = "spec/result-type"
	SpecHeaders      = "spec/headers"
	SpecOutputSchema = "spec/output-schema"
	SpecToolError    = "spec/tool-error-content"
	SpecNotification = "spec/notification"
	SpecServerReq    = "spec/server-request"
	SpecDeprecated   = "spec/deprecated"
	SpecErrorCode    = "spec/error-code"
	SpecToolName     = "spec/tool-name"
	SpecDuplicateID  = "spec/duplicate-id"
	SpecUnknownID    = "spec/unknown-id"
)

// SpecRules lists the rules of check --spec; auth-challenge, which check
// runs anyway, is among them for its section.
var SpecRules = []SpecRule{
	{SpecResultType, "2026-07-28", "basic", "a 2026-07-28 result without resultType (\"complete\", \"input_required\", …), which every result of that version carries"},
	{SpecHeaders, "2026-07-28", "basic/transports", "an HTTP request whose Mcp-Method or Mcp-Name header disagrees with its body's method or target (the server should answer -32020 HeaderMismatch)"},
	{SpecOutputSchema, "2025-06-18", "server/tools", "a tools/call result whose structuredContent does not validate against the tool's outputSchema (JSON Schema 2020-12), or a successful result of a tool with an outputSchema that has no structuredContent"},
	{SpecToolError, "2024-11-05", "server/tools", "a tool result with isError: true and no content to say what went wrong"},
	{SpecNotification, "2024-11-05", "basic", "a notification sent by the side that may not send it, or in a version that does not have it"},
	{SpecServerReq, "2024-11-05", "client", "a request sent by the side that may not send it (a server calling a client method, a client calling a server-to-client one), or in a version that does not have it"},
	{SpecDeprecated, "2025-03-26", "changelog", "a feature the negotiated version deprecated or removed, named with what replaced it: JSON-RPC batches, the HTTP+SSE transport, sampling's includeContext, server-to-client requests in 2026-07-28"},
	{SpecErrorCode, "2024-11-05", "server/resources", "an MCP error code used where it does not belong: -32002 ResourceNotFound off resources/read, an unknown resource answered -32602 InvalidParams, -32042 URLElicitationRequired before 2025-11-25, -32020/-32021/-32022 before 2026-07-28"},
	{SpecToolName, "2025-11-25", "server/tools", "a tool name outside the naming guidance: 1 to 128 characters of A-Z, a-z, 0-9, _, - and ."},
	{SpecDuplicateID, "2024-11-05", "basic", "a request id reused while a request of the same sender with that id is still in flight"},
	{SpecUnknownID, "2024-11-05", "basic", "a response whose id no request of the other side had"},
	{RuleChallenge, "2025-06-18", "basic/authorization", "a 401 whose WWW-Authenticate names no resource_metadata (RFC 9728)"},
}

// isSpecRule reports whether rule is one of SpecRules.
func isSpecRule(rule string) bool {
	return strings.HasPrefix(rule, "spec/") || rule == RuleChallenge
}

// Methods by the side that sends them and the version that brought them.
type methodRule struct {
	client bool   // sent by the client (false: by the server)
	since  string // the first version that has it
	until  string // the first version that no longer has it, or ""
}

var notificationRules = map[string]methodRule{
	"notifications/initialized":            {client: true, since: "2024-11-05", until: modern},
	"notifications/roots/list_changed":     {client: true, since: "2024-11-05"},
	"notifications/message":                {since: "2024-11-05"},
	"notifications/resources/updated":      {since: "2024-11-05"},
	"notifications/resources/list_changed": {since: "2024-11-05"},
	"notifications/tools/list_changed":     {since: "2024-11-05"},
	"notifications/prompts/list_changed":   {since: "2024-11-05"},
	"notifications/elicitation/complete":   {since: "2025-11-25"},
}

// requestRules are requests with one sending side; ping goes both ways.
var requestRules = map[string]methodRule{
	"initialize":               {client: true, since: "2024-11-05", until: modern},
	"server/discover":          {client: true, since: modern},
	"tools/list":               {client: true, since: "2024-11-05"},
	"tools/call":               {client: true, since: "2024-11-05"},
	"prompts/list":             {client: true, since: "2024-11-05"},
	"prompts/get":              {client: true, since: "2024-11-05"},
	"resources/list":           {client: true, since: "2024-11-05"},
	"resources/templates/list": {client: true, since: "2024-11-05"},
	"resources/read":           {client: true, since: "2024-11-05"},
	"resources/subscribe":      {client: true, since: "2024-11-05"},
	"resources/unsubscribe":    {client: true, since: "2024-11-05"},
	"completion/complete":      {client: true, since: "2024-11-05"},
	"logging/setLevel":         {client: true, since: "2024-11-05"},
	"roots/list":               {since: "2024-11-05"},
	"sampling/createMessage":   {since: "2024-11-05"},
	"elicitation/create":       {since: "2025-06-18"},
}

// replacedIn2026 are the server-to-client requests 2026-07-28 replaced with
// results of resultType "input_required" (multi round-trip requests).
var replacedIn2026 = map[string]bool{"roots/list": true, "sampling/createMessage": true, "elicitation/create": true}

const modern = "2026-07-28"

// side names who sent a message of direction dir.
func side(client bool) string {
	if client {
		return "the client"
	}
	return "the server"
}
