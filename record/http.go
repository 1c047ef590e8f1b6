package record

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/rules"
	"github.com/tapedeck/tapedeck/tape"
)

// Lifecycle records of the HTTP recorder, besides tape.MethodStart and
// tape.MethodClose.
const (
	// MethodHTTPExchange records an HTTP exchange whose answer carried no
	// JSON-RPC message: a 202 to a notification or response, an error
	// status with a plain body, a GET or DELETE. Params: method, status,
	// and the body's text when it is not a message.
	MethodHTTPExchange = tape.MethodHTTPExchange
	// MethodHTTPEndpoint records a legacy HTTP+SSE endpoint event: the POST
	// URL the server named and the one the client was given instead.
	MethodHTTPEndpoint = tape.MethodHTTPEndpoint
	// MethodHTTPRejected records a request refused by the Origin check.
	MethodHTTPRejected = tape.MethodHTTPRejected
)

// DefaultMaxBody is Proxy.MaxBody's default: generous, because messages
// carry base64 images and whole files.
const DefaultMaxBody = 64 << 20

// Proxy is a recording reverse proxy for MCP's Streamable HTTP transport
// (2025-03-26 to 2026-07-28) and the legacy HTTP+SSE transport (2024-11-05).
// It forwards every request to Upstream with its headers, and the answer
// with its status and headers; JSON bodies are recorded whole, SSE streams
// event by event, each event written to the tape before it is forwarded and
// flushed.
//
// Each message's _meta holds, besides dir, server and ts: "transport":
// "http", "http": the request method, "session": the request's
// Mcp-Session-Id, for answers "status": the HTTP status and "newSession":
// a session the answer assigned, and for SSE events "stream": a number
// naming the response stream and "event": the event id; an answer with id
// null to a POSTed request has "inReplyTo": that request's id; the records
// of a POST with no session have "exchange": a number naming the POST. The
// request's MCP-Protocol-Version header is "protocolVersion" on every
// record of its exchange; its Mcp-Method and Mcp-Name headers (2026-07-28)
// are "mcpMethod" and "mcpName" on the records of the request itself, so
// replay can send them again. Requests are
// recorded before they are forwarded, so they carry no status; exchanges
// whose answer holds no message are recorded as $http/exchange.
//
// Credential headers (tape.IsCredentialHeader) are forwarded but never
// recorded. The proxy guards its own listener against DNS rebinding and
// cross-site requests (mcphttp.Guard): a Host header that is not loopback
// or in AllowHosts, or an Origin header that is not loopback or in
// AllowOrigins, gets 403 and a $http/rejected record, and never reaches the
// server. The Origin check matters because the proxy adds the upstream
// URL's credentials (user info, query) to what it forwards: a web page's
// simple POST (text/plain, no CORS preflight) must not reach the server
// with them. A request without Origin (not from a browser page) passes, and
// an accepted Origin is forwarded as sent, so with AllowOrigins "*" the
// server's own verdict is what the tape shows. The proxy serves only the
// upstream's MCP endpoint (and, for a legacy server, the endpoints its
// endpoint events name); everything else gets 404 without reaching the
// server.
type Proxy struct {
	// Upstream is the server's MCP endpoint (or its /sse URL for legacy
	// servers). Requests keep their path and query: the proxy mirrors the
	// upstream's URL space on its own address.
	Upstream *url.URL
	// Tape receives the records, one Write per record.
	Tape io.Writer
	// Server names the server in the tape; empty means
	// DefaultHTTPServerName(Upstream).
	Server string
	// Redact, if set, redacts the tape's copy of each message.
	Redact *tape.Redactor
	// Transport does the upstream requests; nil means a clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// AllowHosts are Host header values accepted besides loopback ones
	// (the --listen host when it is a name); "*" accepts any.
	AllowHosts []string
	// AllowOrigins are Origin header values accepted besides loopback
	// ones, e.g. "https://app.example.com"; "*" accepts any (to test a
	// server's own Origin check through the proxy).
	AllowOrigins []string
	// MaxBody bounds a request body in bytes, which is read whole to be
	// recorded before it is forwarded; 0 means DefaultMaxBody, < 0 no
	// limit. A larger body gets 413 and never reaches the server.
	MaxBody int64
	// MaxEvent is the largest SSE event the proxy holds back to record
	// whole; a longer one (an event without end) is relayed as it comes
	// and recorded as $transport/oversize, so memory stays bounded. 0
	// means DefaultMaxEvent.
	MaxEvent int
	// Now stamps the records; nil means time.Now.
	Now func() time.Time
	// Warn, if not nil, is told of the first failure to write the tape,
	// once (see Stdio.Warn).
	Warn func(error)
	// Rules, if set, may change, drop, delay or answer messages on their
	// way (see Stdio.Rules); Logf receives their log lines.
	Rules *rules.Set
	Logf  func(string)
	// Intercept, if set, may hold messages for a person's decision (see
	// Interceptor).
	Intercept Interceptor
	// RuleAnswered, if set, is told of each client message a rule (or the
	// intercept) answered or dropped, which so never went upstream: the
	// Mcp-Session-Id it came with ("" before one), the message, and the
	// rule and its action. replay --listen --rules tells the replay behind
	// the proxy, whose recorded request the client did send.
	RuleAnswered func(session string, msg []byte, rule, action string)
	// ProxyAuth routes the authorization server through the proxy too
	// (authserver.go): the protected resource metadata served names the
	// proxy as the authorization server, whose metadata and endpoints the
	// proxy serves by forwarding them to the real one, each exchange
	// recorded as a tape.MethodHTTPAuth with its secrets redacted.
	ProxyAuth bool
	// Shadow, if set, sends a copy of every client message to a second
	// server (ShadowOptions.URL), one session of its own a client session,
	// recorded as a shadow lane and never forwarded (shadow.go). Not with
	// Rules or Intercept.
	Shadow *ShadowOptions

	once    sync.Once
	guard   mcphttp.Guard
	pathsMu sync.Mutex
	paths   map[string]bool // the paths served: the MCP endpoint, legacy endpoints
	// metaSources maps a protected resource metadata path the proxy
	// serves to the URL an upstream challenge named for it (auth.go).
	metaSources map[string]string
	rec         *recorder
	sink        *sink // lifecycle records
	rp          *httputil.ReverseProxy
	streams     atomic.Int64
	// exchanges numbers the POSTs that carry no session, so that their
	// requests pair with their answers even when two clients use one id
	// at once (two initializes).
	exchanges atomic.Int64
	readers   sync.Pool // of *sse.Reader, with their buffers
	rules     *rules.Conn
	shadow    *shadow // nil: no shadow
	shadowErr error

	// With ProxyAuth (authserver.go): the proxy's issuer path of each real
	// issuer and back, the endpoints forwarded by proxy path, the secret
	// values seen, scrubbed from every auth record.
	asPaths, asIssuers map[string]string
	asRoutes           map[string]authRoute
	secrets            map[string]bool

	// The latest client request's session and protocol version, for
	// Resend.
	lastMu      sync.Mutex
	lastSession string
	lastVersion string

	// Messages, a sink a direction, each record flushed to the tape as it
	// is written (under msgMu: the sinks' batches are not shared).
	msgMu      sync.Mutex
	send, recv *sink
	sendBatch  *lineBatch
	recvBatch  *lineBatch
}

type ctxKey struct{}

// exchange is what the proxy knows of one request while it is answered.
type exchange struct {
	method  string
	session string
	// Request headers replay needs to reproduce (never credentials).
	protocolVersion, mcpMethod, mcpName string
	mcpParams                           []tape.MCPParam // its Mcp-Param-* headers, sorted by name
	// body is the POSTed body, kept to name the request an id-null
	// answer replies to.
	body []byte
	// newSession is the Mcp-Session-Id an answer assigned.
	newSession string
	// no numbers a POST with no session (Proxy.exchanges), 0 otherwise.
	no   int64
	host string // the proxy's host as the client addressed it
	// shadow is the shadow's copy of the body, held for A's answer.
	shadow *shadowOrder
}

func (p *Proxy) init() {
	p.once.Do(func() {
		server := p.Server
		if server == "" {
			server = DefaultHTTPServerName(p.Upstream)
		}
		p.guard = mcphttp.Guard{AllowHosts: p.AllowHosts, AllowOrigins: p.AllowOrigins}
		p.rules = p.Rules.Conn()
		p.paths = map[string]bool{}
		p.rec = newRecorder(p.Tape, server, p.Redact, p.Now)
		p.rec.dest.warn = p.Warn
		p.sink = p.rec.direct()
		p.send, p.sendBatch = p.rec.stream(tape.DirSend)
		p.recv, p.recvBatch = p.rec.stream(tape.DirRecv)
		p.shadow, p.shadowErr = p.newShadow()
		transport := p.Transport
		if transport == nil {
			t := http.DefaultTransport.(*http.Transport).Clone()
			// Bodies must be readable to be recorded: no transparent gzip.
			t.DisableCompression = true
			// One client may hold several streams open at once (a GET
			// stream, concurrent POSTs): keep their connections for reuse.
			t.MaxIdleConnsPerHost = 64
			transport = t
		}
		p.rp = &httputil.ReverseProxy{
			Rewrite: func(pr *httputil.ProxyRequest) {
				pr.Out.URL.Scheme = p.Upstream.Scheme
				pr.Out.URL.Host = p.Upstream.Host
				pr.Out.Host = p.Upstream.Host
				// The upstream URL's own query (an API key, a signature) goes
				// upstream with every request; a parameter the client sent
				// too (it was given the upstream's URL) goes once.
				pr.Out.URL.RawQuery = mergeQuery(p.Upstream.RawQuery, pr.Out.URL.RawQuery)
				// Credentials in the upstream URL go upstream as basic auth
				// (never onto the tape), unless the client sent its own.
				if u := p.Upstream.User; u != nil && pr.Out.Header.Get("Authorization") == "" {
					pass, _ := u.Password()
					pr.Out.SetBasicAuth(u.Username(), pass)
				}
				// Bodies must be readable to be recorded: ask for identity.
				pr.Out.Header.Del("Accept-Encoding")
				// No X-Forwarded-*: the server sees what the client sent.
			},
			Transport:      transport,
			FlushInterval:  -1, // flush after every write: events go out as they come
			ModifyResponse: p.modifyResponse,
			ErrorHandler:   p.errorHandler,
			BufferPool:     new(copyBuffers),
		}
	})
}

// Err returns the first error met while writing the tape, if any.
func (p *Proxy) Err() error {
	p.init()
	return p.rec.Err()
}

func (p *Proxy) note(err error) { p.rec.note(err) }

// Start writes the $transport/start record; listen is the proxy's address.
func (p *Proxy) Start(listen, version string) error {
	p.init()
	if p.shadowErr != nil {
		return p.shadowErr
	}
	err := p.sink.lifecycle(tape.MethodStart, map[string]any{
		"transport": "http", "upstream": SafeURL(p.Upstream), "listen": listen, "version": version,
	}, map[string]any{"transport": "http"})
	p.shadow.begin()
	return err
}

// Close writes the $transport/close record.
func (p *Proxy) Close(reason string) error {
	p.init()
	p.shadow.close()
	return errors.Join(p.sink.lifecycle(tape.MethodClose, map[string]any{"reason": reason}, map[string]any{"transport": "http"}), p.Err())
}

// ServeHTTP records and forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.init()
	if !p.guard.HostAllowed(r.Host) {
		p.note(p.sink.lifecycle(MethodHTTPRejected, map[string]any{"method": r.Method, "host": r.Host, "status": http.StatusForbidden},
			map[string]any{"transport": "http"}))
		http.Error(w, "tapedeck: host "+r.Host+" is not allowed: expected a loopback host (localhost, 127.0.0.1, [::1]) or one given with --allow-host (DNS rebinding guard)", http.StatusForbidden)
		return
	}
	if origin := r.Header.Get("Origin"); !p.guard.OriginAllowed(origin) {
		p.note(p.sink.lifecycle(MethodHTTPRejected, map[string]any{"method": r.Method, "origin": origin, "status": http.StatusForbidden},
			map[string]any{"transport": "http"}))
		http.Error(w, "tapedeck: Origin "+origin+" is not allowed: expected a loopback origin or one given with --allow-origin (a web page must not reach the server with the upstream's credentials)", http.StatusForbidden)
		return
	}
	if p.serveResourceMetadata(w, r) {
		return
	}
	if p.ProxyAuth && p.serveAuth(w, r) {
		return
	}
	if !p.served(r.URL.Path) {
		http.Error(w, "tapedeck: the recording proxy serves only the MCP endpoint "+p.Upstream.Path+" and its protected resource metadata ("+WellKnownResourceMetadata+"[/PATH]), not "+r.URL.Path, http.StatusNotFound)
		return
	}
	ex := &exchange{
		method: r.Method, session: r.Header.Get("Mcp-Session-Id"), host: r.Host,
		protocolVersion: r.Header.Get("Mcp-Protocol-Version"),
		mcpMethod:       r.Header.Get("Mcp-Method"), mcpName: r.Header.Get("Mcp-Name"),
		mcpParams: mcpParams(r.Header),
	}
	if r.Method == http.MethodPost {
		p.lastMu.Lock()
		if ex.session != "" {
			p.lastSession = ex.session
		}
		if ex.protocolVersion != "" {
			p.lastVersion = ex.protocolVersion
		}
		p.lastMu.Unlock()
	}
	if r.Method == http.MethodDelete {
		p.shadow.end(ex.session)
	}
	if r.Method == http.MethodPost && r.Body != nil {
		limit := p.MaxBody
		if limit == 0 {
			limit = DefaultMaxBody
		}
		rd := r.Body
		if limit > 0 {
			rd = http.MaxBytesReader(w, r.Body, limit)
		}
		body, err := readBody(rd, r.ContentLength)
		r.Body.Close()
		if _, tooBig := errors.AsType[*http.MaxBytesError](err); tooBig {
			p.note(p.sink.lifecycle(MethodHTTPRejected, map[string]any{"method": r.Method, "status": http.StatusRequestEntityTooLarge, "limit": limit},
				map[string]any{"transport": "http"}))
			http.Error(w, fmt.Sprintf("tapedeck: request body larger than %d bytes: raise the limit with --max-body", limit), http.StatusRequestEntityTooLarge)
			return
		}
		if err != nil {
			http.Error(w, "tapedeck: reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		ex.body = body
		if ex.session == "" {
			ex.no = p.exchanges.Add(1)
		}
		if p.rules != nil || p.Intercept != nil {
			var done bool
			if body, done = p.ruleRequest(w, r, ex, body); done {
				return
			}
		} else {
			// The tape first, then the server.
			p.note(p.message(body, tape.DirSend, recordMeta{ex: ex}))
			// B gets the copy once A's answer was forwarded (written to
			// the client's connection), or the shadow's hold passed.
			if o := p.shadow.give(shadowItem{msg: body, session: ex.session, exchange: ex.no,
				protocol: ex.protocolVersion, mcpMethod: ex.mcpMethod, mcpName: ex.mcpName}); o != nil {
				ex.shadow = o
				defer func() {
					_ = http.NewResponseController(w).Flush()
					p.shadow.answered(o)
				}()
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
	}
	p.rp.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, ex)))
}

func (p *Proxy) extra(ex *exchange, status int) map[string]any {
	return recordMeta{ex: ex, status: status}.fields()
}

// message records one message of an exchange, at once, through the
// sink of its direction (the fast path when nothing is redacted).
func (p *Proxy) message(msg []byte, dir tape.Dir, m metaExtra) error {
	s, b := p.recv, p.recvBatch
	if dir == tape.DirSend {
		s, b = p.send, p.sendBatch
	}
	p.msgMu.Lock()
	defer p.msgMu.Unlock()
	return errors.Join(s.message(msg, dir, m), b.flush())
}

func (p *Proxy) modifyResponse(resp *http.Response) error {
	ex, _ := resp.Request.Context().Value(ctxKey{}).(*exchange)
	if ex == nil {
		ex = &exchange{method: resp.Request.Method}
	}
	// _meta.session stays the request's session, so that a response pairs
	// with its request; a session the answer assigns (initialize) is
	// recorded as _meta.newSession.
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" && sid != ex.session {
		ex.newSession = sid
		p.shadow.bind(ex.no, sid)
	}
	if done, err := p.challenge(resp, ex); done {
		return err
	}
	switch mediaType := mediaType(resp.Header.Get("Content-Type")); {
	case mediaType == "text/event-stream":
		stream := p.streams.Add(1)
		if ex.method != http.MethodPost {
			params := map[string]any{"method": ex.method, "status": resp.StatusCode, "stream": stream}
			if id := resp.Request.Header.Get("Last-Event-ID"); id != "" {
				params["lastEventId"] = id // a resumption
			}
			p.note(p.sink.lifecycle(MethodHTTPExchange, params, p.extra(ex, resp.StatusCode)))
		}
		resp.Body = &sseRelay{p: p, ex: ex, status: resp.StatusCode, stream: stream, body: resp.Body, events: p.sseReader(resp.Body)}
	default:
		// A JSON body (one message or a batch), or a body that carries no
		// message (202, errors): read it whole, record, then forward.
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		// A's whole answer is here and goes to the client next: the
		// client's messages from now on reach B after B's answer to
		// the shadow's copy of this request.
		p.shadow.forwarding(ex.shadow)
		trimmed := bytes.TrimSpace(body)
		if mediaType == "application/json" && len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[') {
			m := recordMeta{ex: ex, status: resp.StatusCode}
			// An error the server could not tie to a request has id null
			// (server-everything answers server/discover so); the proxy
			// knows which request it answers. Only such an answer is worth
			// classifying the request again.
			if bytes.Contains(trimmed, []byte("null")) {
				if es := tape.Classify(trimmed); len(es) == 1 && es[0].ID == "null" {
					if rs := tape.Classify(ex.body); len(rs) == 1 && rs[0].Kind == tape.KindRequest {
						m.inReplyTo = string(rs[0].ID)
					}
				}
			}
			if p.rules != nil || p.Intercept != nil {
				return p.ruleResponse(resp, trimmed, m)
			}
			p.note(p.message(trimmed, tape.DirRecv, m))
			return nil
		}
		params := map[string]any{"method": ex.method, "status": resp.StatusCode}
		if len(trimmed) > 0 {
			params["body"] = string(p.rec.redactText(trimmed))
		}
		p.note(p.sink.lifecycle(MethodHTTPExchange, params, p.extra(ex, resp.StatusCode)))
	}
	return nil
}

func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	ex, _ := r.Context().Value(ctxKey{}).(*exchange)
	if ex == nil {
		ex = &exchange{method: r.Method}
	}
	if errors.Is(err, errDisconnect) {
		panic(http.ErrAbortHandler) // a rule cut the connection
	}
	if errors.Is(err, context.Canceled) {
		// The client went away (closed a stream): not the upstream's fault.
		p.note(p.sink.lifecycle(MethodHTTPExchange, map[string]any{"method": ex.method, "error": "client closed the request"}, p.extra(ex, 0)))
		return
	}
	p.note(p.sink.lifecycle(MethodHTTPExchange, map[string]any{"method": ex.method, "status": http.StatusBadGateway, "error": err.Error()}, p.extra(ex, http.StatusBadGateway)))
	http.Error(w, "tapedeck: upstream "+SafeURL(p.Upstream)+": "+err.Error(), http.StatusBadGateway)
}

// mcpParams returns a request's Mcp-Param-* headers (2026-07-28: a
// tools/call's arguments its tool marks with x-mcp-header), sorted by name.
func mcpParams(h http.Header) []tape.MCPParam {
	var out []tape.MCPParam
	for k, vs := range h {
		if name, ok := strings.CutPrefix(http.CanonicalHeaderKey(k), tape.MCPParamHeader); ok && name != "" && len(vs) > 0 {
			out = append(out, tape.MCPParam{Name: name, Value: vs[0]})
		}
	}
	slices.SortFunc(out, func(a, b tape.MCPParam) int { return strings.Compare(a.Name, b.Name) })
	return out
}
