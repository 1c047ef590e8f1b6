package tape

// MCP's own JSON-RPC error codes, by name (the JSON-RPC 2.0 ones, -32700 to
// -32603, are not repeated here).
const (
	CodeResourceNotFound           = -32002 // resources/read of an unknown resource
	CodeHeaderMismatch             = -32020 // 2026-07-28: Mcp-Method or Mcp-Name disagrees with the body
	CodeMissingClientCapability    = -32021 // 2026-07-28
	CodeUnsupportedProtocolVersion = -32022 // 2026-07-28
	CodeURLElicitationRequired     = -32042 // 2025-11-25: the client must complete a URL-mode elicitation first
)

// ErrorName names an MCP error code ("URLElicitationRequired"), or returns
// "" for another code.
func ErrorName(code int64) string {
	switch code {
	case CodeResourceNotFound:
		return "ResourceNotFound"
	case CodeHeaderMismatch:
		return "HeaderMismatch"
	case CodeMissingClientCapability:
		return "MissingRequiredClientCapability"
	case CodeUnsupportedProtocolVersion:
		return "UnsupportedProtocolVersion"
	case CodeURLElicitationRequired:
		return "URLElicitationRequired"
	}
	return ""
}
