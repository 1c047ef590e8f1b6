package tape

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"github.com/tidwall/gjson"
)

// The HTTP dialect of a tape
//
// A tape recorded over HTTP says, in each record's tape metadata, how the
// message travelled; the recording proxy writes these members and lifecycle
// records, and the HTTP replay server, verify and the debugger read them,
// all through this one definition.
//
// Written by "tapedeck record --upstream" (the proxy):
//
//   - every record: MetaTransport "http", MetaHTTP the request's method
//     (POST, GET, DELETE), MetaSession the request's Mcp-Session-Id, and
//     MetaProtocol its MCP-Protocol-Version;
//   - a request: MetaMCPMethod and MetaMCPName, its Mcp-Method and Mcp-Name,
//     and MetaMCPParams, its Mcp-Param-* headers (an object by NAME)
//     headers (2026-07-28);
//   - an answer: MetaStatus, the HTTP status, and MetaNewSession, the
//     Mcp-Session-Id the answer assigned (initialize);
//   - an SSE event: MetaStream, a number naming the response stream it
//     came on, and MetaEvent, its event id;
//   - an answer with id null to a POSTed request: MetaInReplyTo, that
//     request's id;
//   - a POST with no session, its request and answers: MetaExchange, a
//     number naming the POST (the pairer keys requests and answers by it,
//     so two clients initializing at once with one id do not collide);
//   - MethodHTTPExchange for an exchange whose answer held no message (a
//     202, an error status with a plain body, a GET stream opened, a
//     DELETE), with params method, status and, for a stream, stream;
//     MethodHTTPEndpoint for a legacy endpoint event; MethodHTTPRejected
//     for a request the proxy refused;
//   - a 401 or 403 with a WWW-Authenticate challenge (OAuth): a
//     MethodHTTPExchange with params method, status, ParamWWWAuthenticate
//     (the header's values as the client got them, resource_metadata
//     naming the proxy), contentType and body, and MetaInReplyTo the id of
//     the request it refused, with which it pairs;
//   - MethodHTTPMetadata for a protected resource metadata document
//     (RFC 9728) the proxy served: params path, source (where it was
//     fetched), status, document (as served: "resource" names the proxy),
//     upstreamResource (the upstream's "resource"), and with record
//     --proxy-auth upstreamAuthorizationServers (the document's
//     authorization_servers then name the proxy);
//   - MethodHTTPAuth (record --proxy-auth) for an exchange with an
//     authorization server through the proxy: params endpoint ("metadata",
//     "authorization", "token", "registration", "revocation", ...), method,
//     path (the proxy's), target (the real URL, without its query),
//     status, request (query, form or body, contentType, authorization:
//     the scheme only) and response (body, contentType, location: a
//     redirect's url, query and fragment), or error; every secret in them
//     (codes, tokens, client secrets, PKCE verifiers) is RedactedMarker or
//     a Fingerprint.
//
// Read as well, for tapes written before the dialect was one (an earlier
// fixture recorder wrote them), and only here (ParseHTTPMeta,
// ParseHTTPExchange): MetaSSE true on a message that came on an SSE
// stream, MetaSession on the initialize request of a tape with sessions,
// and lifecycle records MethodHTTPGet (a GET stream opened) and
// MethodHTTPDelete (a DELETE).

// Lifecycle records of the HTTP dialect.
const (
	MethodHTTPExchange = "$http/exchange"
	MethodHTTPEndpoint = "$http/endpoint"
	MethodHTTPRejected = "$http/rejected"
	MethodHTTPMetadata = "$http/metadata"
	MethodHTTPAuth     = "$http/auth"
	// Read only: the older dialect's.
	MethodHTTPGet    = "$http/get"
	MethodHTTPDelete = "$http/delete"
)

// ParamWWWAuthenticate is the params member of a challenge's
// MethodHTTPExchange that holds its WWW-Authenticate values.
const ParamWWWAuthenticate = "wwwAuthenticate"

// Tape metadata members of the HTTP dialect.
const (
	MetaTransport  = "transport"
	MetaHTTP       = "http"
	MetaSession    = "session"
	MetaNewSession = "newSession"
	MetaProtocol   = "protocolVersion"
	MetaMCPMethod  = "mcpMethod"
	MetaMCPName    = "mcpName"
	MetaMCPParams  = "mcpParams"
	MetaStatus     = "status"
	MetaStream     = "stream"
	MetaEvent      = "event"
	MetaInReplyTo  = "inReplyTo"
	MetaExchange   = "exchange"
	// Read only: the older dialect's.
	MetaSSE = "sse"
)

// HTTPMeta is what a record's tape metadata says about how it travelled
// over HTTP (see the dialect above). The zero HTTPMeta is a record not
// recorded over HTTP.
type HTTPMeta struct {
	HTTP       bool   // recorded over HTTP (MetaTransport "http")
	Method     string // the HTTP method of the request it belongs to
	Session    string // the request's Mcp-Session-Id
	NewSession string // the Mcp-Session-Id this answer assigned
	Protocol   string
	MCPMethod  string
	MCPName    string
	MCPParams  string // a 2026-07-28 tools/call's Mcp-Param-* headers: a JSON object by NAME (ParamsObject, Params)
	Status     int    // the HTTP status of the answer, 0 if not an answer
	Stream     int64  // the SSE stream it came on, 0 if none
	Event      string // its SSE event id
	HasEvent   bool
	SSE        bool   // it came on an SSE stream (MetaStream, or the older MetaSSE)
	InReplyTo  string // the JSON text of the request id an id-null answer replies to
	Exchange   int64  // the POST a record of a sessionless exchange belongs to, 0 if none
}

// MCPParam is one Mcp-Param-NAME header of a 2026-07-28 tools/call: the
// value of the argument the tool's inputSchema marks with x-mcp-header NAME,
// as the client sent it (a non-ASCII value Base64 inside "=?base64?...?=").
// The tape keeps them under MetaMCPParams as {"NAME":"value"}.
type MCPParam struct{ Name, Value string }

// MCPParamHeader is the prefix of the Mcp-Param-* headers.
const MCPParamHeader = "Mcp-Param-"

// ParamsObject is Mcp-Param-* headers as HTTPMeta.MCPParams keeps them: a
// JSON object of the values by NAME, or "" for none.
func ParamsObject(ps []MCPParam) string {
	if len(ps) == 0 {
		return ""
	}
	b := []byte{'{'}
	for i, p := range ps {
		if i > 0 {
			b = append(b, ',')
		}
		k, _ := json.Marshal(p.Name)
		v, _ := json.Marshal(p.Value)
		b = append(append(append(b, k...), ':'), v...)
	}
	return string(append(b, '}'))
}

// Params returns the Mcp-Param-* headers m.MCPParams holds, sorted by NAME.
func (m HTTPMeta) Params() []MCPParam {
	var o map[string]string
	if m.MCPParams == "" || json.Unmarshal([]byte(m.MCPParams), &o) != nil {
		return nil
	}
	out := make([]MCPParam, 0, len(o))
	for k, v := range o {
		out = append(out, MCPParam{Name: k, Value: v})
	}
	slices.SortFunc(out, func(a, b MCPParam) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// ParseHTTPMeta reads the HTTP members of a tape line's metadata (see
// RecordMeta). Members of the wrong type are left zero.
func ParseHTTPMeta(line []byte) HTTPMeta {
	return httpMetaOf(RecordMeta(line))
}

// httpMetaOf reads the HTTP members of meta, a record's metadata object
// (RecordMeta's), or nil.
func httpMetaOf(meta []byte) HTTPMeta {
	if meta == nil {
		return HTTPMeta{}
	}
	var c classifier
	var m HTTPMeta
	_, _ = c.members(meta, skipWS(meta, 0), func(key []byte, v span) {
		raw := v.in(meta)
		switch string(key) {
		case MetaTransport:
			m.HTTP = stringValue(meta, v) == "http"
		case MetaHTTP:
			m.Method = stringValue(meta, v)
		case MetaSession:
			m.Session = stringValue(meta, v)
		case MetaNewSession:
			m.NewSession = stringValue(meta, v)
		case MetaProtocol:
			m.Protocol = stringValue(meta, v)
		case MetaMCPMethod:
			m.MCPMethod = stringValue(meta, v)
		case MetaMCPName:
			m.MCPName = stringValue(meta, v)
		case MetaMCPParams:
			if raw[0] == '{' {
				m.MCPParams = string(raw)
			}
		case MetaStatus:
			if n, ok := digits(raw); ok {
				m.Status = n
			}
		case MetaStream:
			if n, ok := digits(raw); ok && n > 0 {
				m.Stream, m.SSE = int64(n), true
			}
		case MetaEvent:
			m.Event, m.HasEvent = stringValue(meta, v), true
		case MetaSSE:
			m.SSE = m.SSE || string(raw) == "true"
		case MetaInReplyTo:
			m.InReplyTo = string(raw)
		case MetaExchange:
			if n, ok := digits(raw); ok {
				m.Exchange = int64(n)
			}
		}
	})
	return m
}

// AppendJSON appends m's members as `,"key":value` in key order, as Writer
// orders Meta.Extra, for Encoder.AppendLineMeta: the recording proxy's hot
// path. m is a record recorded over HTTP (MetaTransport is written whatever
// m.HTTP says); empty strings and zero numbers are left out, but an event
// id is written when HasEvent, even empty.
func (m HTTPMeta) AppendJSON(b []byte) []byte {
	if m.HasEvent {
		b = appendMetaString(b, MetaEvent, m.Event)
	}
	if m.Exchange != 0 {
		b = strconv.AppendInt(appendMetaKey(b, MetaExchange), m.Exchange, 10)
	}
	b = appendMetaString(b, MetaHTTP, m.Method)
	if m.InReplyTo != "" {
		b = append(appendMetaKey(b, MetaInReplyTo), m.InReplyTo...)
	}
	b = appendMetaString(b, MetaMCPMethod, m.MCPMethod)
	b = appendMetaString(b, MetaMCPName, m.MCPName)
	if m.MCPParams != "" {
		b = append(appendMetaKey(b, MetaMCPParams), m.MCPParams...)
	}
	b = appendMetaString(b, MetaNewSession, m.NewSession)
	b = appendMetaString(b, MetaProtocol, m.Protocol)
	b = appendMetaString(b, MetaSession, m.Session)
	if m.Status != 0 {
		b = strconv.AppendInt(appendMetaKey(b, MetaStatus), int64(m.Status), 10)
	}
	if m.Stream != 0 {
		b = strconv.AppendInt(appendMetaKey(b, MetaStream), m.Stream, 10)
	}
	return append(appendMetaKey(b, MetaTransport), `"http"`...)
}

// Fields returns the members AppendJSON writes as a map, for Meta.Extra
// (the slow paths: redaction, batches, lifecycle records).
func (m HTTPMeta) Fields() map[string]any {
	f := map[string]any{MetaTransport: "http"}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	if m.HasEvent {
		f[MetaEvent] = m.Event
	}
	if m.Exchange != 0 {
		f[MetaExchange] = m.Exchange
	}
	if m.InReplyTo != "" {
		f[MetaInReplyTo] = json.RawMessage(m.InReplyTo)
	}
	set(MetaHTTP, m.Method)
	set(MetaMCPMethod, m.MCPMethod)
	set(MetaMCPName, m.MCPName)
	if m.MCPParams != "" {
		f[MetaMCPParams] = json.RawMessage(m.MCPParams)
	}
	set(MetaNewSession, m.NewSession)
	set(MetaProtocol, m.Protocol)
	set(MetaSession, m.Session)
	if m.Status != 0 {
		f[MetaStatus] = m.Status
	}
	if m.Stream != 0 {
		f[MetaStream] = m.Stream
	}
	return f
}

func appendMetaKey(b []byte, key string) []byte {
	return append(append(append(b, `,"`...), key...), `":`...)
}

// appendMetaString appends `,"key":"value"` unless value is empty (an event
// id may be empty: AppendJSON calls it then only when the event has one).
func appendMetaString(b []byte, key, value string) []byte {
	if value == "" && key != MetaEvent {
		return b
	}
	return jsonscan.AppendQuoted(appendMetaKey(b, key), value, false)
}

// HTTPExchange is what a lifecycle record of an HTTP exchange whose answer
// held no message says (MethodHTTPExchange's params).
type HTTPExchange struct {
	Method      string // the request's HTTP method: GET, POST, DELETE
	Status      int    // the answer's HTTP status, 0 if not recorded
	Stream      int64  // the SSE stream a GET opened (params stream)
	SSE         bool   // the answer was an SSE stream
	LastEventID string // a GET's Last-Event-ID (a resumption), "" if none
	Body        string // a plain answer's body, "" if none
}

// ParseHTTPExchange reads record raw, a lifecycle record of method, as an
// HTTP exchange: a MethodHTTPExchange, or the older dialect's MethodHTTPGet
// (a GET stream, its status in the tape metadata) and MethodHTTPDelete.
// ok is false for any other record.
func ParseHTTPExchange(method string, raw []byte) (ex HTTPExchange, ok bool) {
	if !IsHTTPExchange(method) {
		return HTTPExchange{}, false
	}
	switch method {
	case MethodHTTPExchange:
		p := gjson.GetBytes(raw, "params")
		ex = HTTPExchange{Method: p.Get("method").String(), Status: int(p.Get("status").Int()),
			LastEventID: p.Get("lastEventId").String(), Body: p.Get("body").String()}
		if s := p.Get("stream"); s.Exists() {
			ex.Stream, ex.SSE = s.Int(), true
		}
		return ex, true
	case MethodHTTPGet:
		ex = HTTPExchange{Method: "GET", Status: ParseHTTPMeta(raw).Status}
		ex.SSE = ex.Status == 0 || ex.Status == 200
		return ex, true
	default: // MethodHTTPDelete
		return HTTPExchange{Method: "DELETE", Status: ParseHTTPMeta(raw).Status}, true
	}
}

// IsHTTPExchange reports whether a lifecycle record of method is one
// ParseHTTPExchange reads.
func IsHTTPExchange(method string) bool {
	return method == MethodHTTPExchange || method == MethodHTTPGet || method == MethodHTTPDelete
}
