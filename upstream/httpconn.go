package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/internal/mcphttp"
	"github.com/tapedeck/tapedeck/internal/sse"
	"github.com/tapedeck/tapedeck/tape"
)

// CodeHTTPStatus is the code of the error response an HTTPConn makes up
// for a request the server answered with an HTTP error and no JSON-RPC
// message, so that Verify compares it with the tape like any answer.
const CodeHTTPStatus = -32092

// HTTPConn is a Conn to a Streamable HTTP MCP server: each message is a
// POST; answers come back as JSON or on SSE streams, read in the
// background and handed out by Recv in arrival order. It keeps the
// Mcp-Session-Id the server issues, sends the negotiated
// Mcp-Protocol-Version, the 2026-07-28 Mcp-Method and Mcp-Name headers, and
// once a session is initialized opens the standalone GET stream on which
// servers send their own requests. Close ends the session (DELETE).
//
// It is a small client over net/http rather than the Go SDK's transport,
// because Verify compares the server's messages as they came, byte for
// byte, which the SDK's decoded messages do not give.
type HTTPConn struct {
	url    string
	client *http.Client

	done chan struct{} // closed by Close: the background streams end
	once sync.Once
	wg   sync.WaitGroup
	in   chan connMsg

	mu      sync.Mutex
	session string
	version string
	schemas map[string][]byte // tool name → its inputSchema, from tools/list answers (Mcp-Param-* headers)
	getOpen bool
}

type connMsg struct {
	msg []byte
	err error
}

// NewHTTPConn returns a Conn posting to the endpoint url with client (nil
// means http.DefaultClient).
func NewHTTPConn(url string, client *http.Client) *HTTPConn {
	if client == nil {
		client = http.DefaultClient
	}
	return &HTTPConn{url: url, client: client, done: make(chan struct{}), in: make(chan connMsg, 256)}
}

// background returns a context for a request that outlives the call that
// made it (an answer read in the background, the GET stream): it ends at
// Close, or when stop is called.
func (c *HTTPConn) background() (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	ended := make(chan struct{})
	go func() {
		select {
		case <-c.done:
			cancel()
		case <-ended:
		}
	}()
	return ctx, func() { close(ended); cancel() }
}

// closed reports whether Close was called.
func (c *HTTPConn) closed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// SessionID returns the session the server issued, if any.
func (c *HTTPConn) SessionID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// Send posts msg. A notification or a reply is posted before Send returns
// (an HTTP error is returned); a request's answer is read in the
// background, so that the server's own requests can be answered while it
// waits, and an HTTP error becomes an error response for Recv.
func (c *HTTPConn) Send(ctx context.Context, msg []byte) error {
	msg = bytes.TrimSpace(msg)
	entries := tape.Classify(msg)
	if len(entries) != 1 || entries[0].Kind == tape.KindInvalid {
		return fmt.Errorf("send: expected one JSON-RPC message, got %d (%s)", len(entries), firstProblem(entries))
	}
	m := entries[0]
	req, err := c.newRequest(ctx, http.MethodPost, msg, m)
	if err != nil {
		return err
	}
	if m.Kind != tape.KindRequest {
		resp, err := c.client.Do(req)
		if err != nil {
			return fmt.Errorf("post %s: %w", describe(m), err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		resp.Body.Close()
		c.noteSession(resp)
		if resp.StatusCode/100 != 2 {
			return fmt.Errorf("post %s: HTTP %s: %s", describe(m), resp.Status, bytes.TrimSpace(body))
		}
		if m.Method == "notifications/initialized" && c.SessionID() != "" {
			c.openGet()
		}
		return nil
	}
	// The request outlives Send: its answer may take long.
	bctx, stop := c.background()
	req = req.WithContext(bctx)
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer stop()
		c.roundTrip(req, m)
	}()
	return nil
}

func firstProblem(entries []tape.Entry) string {
	for _, e := range entries {
		if e.Problem != "" {
			return e.Problem
		}
	}
	return "a batch"
}

func describe(m tape.Entry) string {
	if m.Method != "" {
		return m.Method
	}
	return "reply " + string(m.ID)
}

func (c *HTTPConn) newRequest(ctx context.Context, method string, body []byte, m tape.Entry) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.url, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.mu.Lock()
	if v := gjson.GetBytes(body, `params._meta.io\.modelcontextprotocol/protocolVersion`); v.Type == gjson.String {
		c.version = v.String() // 2026-07-28: each request names its version
	}
	if c.session != "" {
		req.Header.Set(mcphttp.HeaderSession, c.session)
	}
	version := c.version
	c.mu.Unlock()
	if version != "" {
		req.Header.Set(mcphttp.HeaderProtocol, version)
	}
	if version >= mcphttp.ModernVersion && m.Kind == tape.KindRequest {
		req.Header.Set(mcphttp.HeaderMethod, m.Method)
		if name, ok := tape.NameHeader(m.Method, body); ok {
			req.Header.Set(mcphttp.HeaderName, name)
		}
		if m.Method == "tools/call" {
			c.mu.Lock()
			schema := c.schemas[gjson.GetBytes(body, "params.name").String()]
			c.mu.Unlock()
			if schema != nil {
				for _, p := range tape.ParamHeaders(schema, []byte(gjson.GetBytes(body, "params.arguments").Raw)) {
					req.Header.Set(tape.MCPParamHeader+p.Name, p.Value)
				}
			}
		}
	}
	return req, nil
}

func (c *HTTPConn) noteSession(resp *http.Response) {
	if sid := resp.Header.Get(mcphttp.HeaderSession); sid != "" {
		c.mu.Lock()
		c.session = sid
		c.mu.Unlock()
	}
}

// roundTrip posts request m and delivers what comes back.
func (c *HTTPConn) roundTrip(req *http.Request, m tape.Entry) {
	resp, err := c.client.Do(req)
	if err != nil {
		c.deliver(connMsg{err: fmt.Errorf("post %s %s: %w", m.Method, m.ID, err)})
		return
	}
	defer resp.Body.Close()
	c.noteSession(resp)
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mediaType == "text/event-stream":
		err := sse.Each(resp.Body, func(ev sse.Event) bool {
			if len(bytes.TrimSpace(ev.Data)) > 0 { // not a priming event
				c.deliverMessage(ev.Data, m)
			}
			return !c.closed()
		})
		if err != nil && !c.closed() {
			c.deliver(connMsg{err: fmt.Errorf("read the SSE answer to %s %s: %w", m.Method, m.ID, err)})
		}
	case mediaType == "application/json":
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			c.deliver(connMsg{err: fmt.Errorf("read the answer to %s %s: %w", m.Method, m.ID, err)})
			return
		}
		// An HTTP error's JSON body that is no JSON-RPC message (an OAuth
		// error, {"error":"invalid_token"}) is the HTTP error's text.
		if gjson.ValidBytes(body) && (resp.StatusCode < 400 || gjson.GetBytes(body, "jsonrpc").Exists()) {
			c.deliverMessage(body, m)
			return
		}
		c.deliverMessage(httpError(m.ID, resp.Status, withChallenge(resp, body)), m)
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		c.deliverMessage(httpError(m.ID, resp.Status, withChallenge(resp, body)), m)
	}
}

// httpError makes up the error response for an HTTP error without a
// JSON-RPC message.
func httpError(id tape.ID, status string, body []byte) []byte {
	return jsonrpc.ErrorResponse([]byte(id), CodeHTTPStatus, fmt.Sprintf("HTTP %s: %s", status, strings.TrimSpace(string(body))), nil)
}

// withChallenge appends a 401 or 403's WWW-Authenticate (which names no
// secret: the scheme, an error, the scope, resource_metadata) to its body.
func withChallenge(resp *http.Response, body []byte) []byte {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return body
	}
	v := resp.Header.Values("WWW-Authenticate")
	if len(v) == 0 {
		return body
	}
	return fmt.Appendf(bytes.TrimSpace(body), " (WWW-Authenticate: %s)", strings.Join(v, "; "))
}

// BearerClient returns an HTTP client that sends "Authorization: Bearer
// token" with each request to one of hosts (host:port, as in the servers'
// URLs), and to no other host a redirect may lead to. The token is held by
// the client's transport only: no error or report of a Conn carries it.
func BearerClient(hosts map[string]bool, token string) *http.Client {
	return &http.Client{Transport: &bearerTransport{hosts: hosts, value: "Bearer " + token, next: http.DefaultTransport}}
}

type bearerTransport struct {
	hosts map[string]bool
	value string
	next  http.RoundTripper
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if !t.hosts[req.URL.Host] {
		return t.next.RoundTrip(req)
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", t.value)
	return t.next.RoundTrip(r)
}

// httpStatusOf returns the HTTP status of an error response httpError
// made up (an HTTP error without a JSON-RPC message), or 0.
func httpStatusOf(msg []byte) int {
	er := gjson.GetBytes(msg, "error")
	if er.Get("code").Int() != CodeHTTPStatus {
		return 0
	}
	var status int
	if _, err := fmt.Sscanf(er.Get("message").String(), "HTTP %d", &status); err != nil {
		return 0
	}
	return status
}

// deliverMessage hands a message to Recv; a response to m with "id":null
// (a server's rejection of a request it could not read) gets m's id.
func (c *HTTPConn) deliverMessage(msg []byte, m tape.Entry) {
	msg = bytes.TrimSpace(msg)
	if r := gjson.GetBytes(msg, "id"); r.Type == gjson.Null && r.Index > 0 && !gjson.GetBytes(msg, "method").Exists() {
		msg = jsonrpc.SpliceID(msg, []byte(m.ID))
	}
	if m.Method == "tools/list" {
		// The tools' inputSchemas: which arguments a tools/call mirrors
		// in Mcp-Param-* headers (x-mcp-header), as the v2 SDK's client
		// learns them from its cached tools/list.
		c.mu.Lock()
		for _, t := range gjson.GetBytes(msg, "result.tools").Array() {
			if c.schemas == nil {
				c.schemas = map[string][]byte{}
			}
			c.schemas[t.Get("name").String()] = []byte(t.Get("inputSchema").Raw)
		}
		c.mu.Unlock()
	}
	if m.Method == "initialize" {
		if v := gjson.GetBytes(msg, "result.protocolVersion"); v.Type == gjson.String {
			c.mu.Lock()
			c.version = v.String()
			c.mu.Unlock()
		}
	}
	c.deliver(connMsg{msg: msg})
}

func (c *HTTPConn) deliver(m connMsg) {
	select {
	case c.in <- m:
	case <-c.done:
	}
}

// openGet opens the standalone SSE stream once; a server without one
// answers 405, which is fine.
func (c *HTTPConn) openGet() {
	c.mu.Lock()
	if c.getOpen {
		c.mu.Unlock()
		return
	}
	c.getOpen = true
	c.mu.Unlock()
	bctx, stop := c.background()
	req, err := c.newRequest(bctx, http.MethodGet, nil, tape.Entry{})
	if err != nil {
		stop()
		return
	}
	req.Header.Set("Accept", "text/event-stream")
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer stop()
		resp, err := c.client.Do(req)
		if err != nil {
			return
		}
		defer resp.Body.Close()
		if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); resp.StatusCode != http.StatusOK || mt != "text/event-stream" {
			return
		}
		sse.Each(resp.Body, func(ev sse.Event) bool {
			if msg := bytes.TrimSpace(ev.Data); len(msg) > 0 { // not a priming event
				c.deliver(connMsg{msg: msg})
			}
			return !c.closed()
		})
	}()
}

// Recv returns the next message the server sent, on any stream.
func (c *HTTPConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case m := <-c.in:
		return m.msg, m.err
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.done:
		return nil, io.EOF
	}
}

// Close ends the session with DELETE (when there is one), stops the
// background streams and waits for them.
func (c *HTTPConn) Close() error {
	var err error
	if sid := c.SessionID(); sid != "" {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, rerr := c.newRequest(ctx, http.MethodDelete, nil, tape.Entry{})
		if rerr == nil {
			var resp *http.Response
			if resp, err = c.client.Do(req); err == nil {
				resp.Body.Close()
				if resp.StatusCode/100 != 2 && resp.StatusCode != http.StatusMethodNotAllowed {
					err = fmt.Errorf("delete session %s: HTTP %s", sid, resp.Status)
				}
			}
		}
		cancel()
	}
	c.once.Do(func() { close(c.done) })
	c.wg.Wait()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}
