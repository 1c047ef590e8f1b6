package mcptest

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/tapedeck/tapedeck/internal/sse"
)

// RecordingRoundTripper is an [http.RoundTripper] that records the MCP
// messages of a streamable HTTP client to a tape, with the raw bytes seen on
// the wire. Each line's _meta holds, besides dir, server and ts:
// "transport":"http", "http":the request method, "status":the HTTP status,
// "session":the Mcp-Session-Id (when known), and for messages that came in an
// SSE stream "sse":true and "event":the SSE event id (when set).
//
// A POSTed message is written once the response headers are in, so that its
// status is known. GET and DELETE requests, which carry no message, are
// written as lifecycle records "$http/get" and "$http/delete".
type RecordingRoundTripper struct {
	// Base does the requests; nil means http.DefaultTransport.
	Base   http.RoundTripper
	Tape   *TapeWriter
	Server string
}

// RoundTrip records req's messages and the response's messages.
func (rt *RecordingRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	base := rt.Base
	if base == nil {
		base = http.DefaultTransport
	}
	var body []byte
	if req.Body != nil && req.Body != http.NoBody {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := base.RoundTrip(req)
	extra := map[string]any{"transport": "http", "http": req.Method}
	if sid := req.Header.Get("Mcp-Session-Id"); sid != "" {
		extra["session"] = sid
	}
	if err != nil {
		extra["error"] = err.Error()
	} else {
		extra["status"] = resp.StatusCode
		if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
			extra["session"] = sid
		}
	}
	switch {
	case len(body) > 0:
		rt.writeMessages(DirSend, body, extra)
	default:
		_ = rt.Tape.Lifecycle(rt.Server, "$http/"+strings.ToLower(req.Method), extra)
	}
	if err != nil {
		return resp, err
	}

	recvExtra := map[string]any{}
	for k, v := range extra {
		recvExtra[k] = v
	}
	mediaType, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch mediaType {
	case "application/json":
		data, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(data))
		if err != nil {
			return resp, err
		}
		if len(bytes.TrimSpace(data)) > 0 {
			rt.writeMessages(DirRecv, data, recvExtra)
		}
	case "text/event-stream":
		recvExtra["sse"] = true
		resp.Body = &sseTee{body: resp.Body, rt: rt, extra: recvExtra}
	}
	return resp, nil
}

// writeMessages writes one JSON-RPC message, or each message of a batch with
// "batch": its index.
func (rt *RecordingRoundTripper) writeMessages(dir string, data []byte, extra map[string]any) {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var batch []json.RawMessage
		if err := json.Unmarshal(data, &batch); err == nil {
			for i, m := range batch {
				e := map[string]any{"batch": i}
				for k, v := range extra {
					e[k] = v
				}
				_ = rt.Tape.Write(dir, rt.Server, m, e)
			}
			return
		}
	}
	if err := rt.Tape.Write(dir, rt.Server, data, extra); err != nil {
		// Not a JSON object: keep it visible as a lifecycle record.
		e := map[string]any{"invalid": string(data)}
		for k, v := range extra {
			e[k] = v
		}
		_ = rt.Tape.Lifecycle(rt.Server, "$http/invalid", e)
	}
}

// sseTee passes an SSE body through unchanged while recording the data of
// each event as it is read.
type sseTee struct {
	body  io.ReadCloser
	rt    *RecordingRoundTripper
	extra map[string]any

	mu      sync.Mutex
	pending []byte // bytes of an unfinished event
}

func (s *sseTee) Read(p []byte) (int, error) {
	n, err := s.body.Read(p)
	if n > 0 {
		s.feed(p[:n])
	}
	return n, err
}

func (s *sseTee) Close() error { return s.body.Close() }

func (s *sseTee) feed(b []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending = append(s.pending, b...)
	rd := sse.NewReader(bytes.NewReader(s.pending))
	consumed := 0
	for {
		ev, err := rd.Next()
		if err != nil {
			break // the end of what came so far: an unfinished event waits for the rest
		}
		consumed += len(ev.Raw)
		if ev.Data == nil || len(bytes.TrimSpace(ev.Data)) == 0 {
			continue // priming events carry empty data
		}
		e := map[string]any{}
		for k, v := range s.extra {
			e[k] = v
		}
		if ev.ID != "" {
			e["event"] = ev.ID
		}
		s.rt.writeMessages(DirRecv, ev.Data, e)
	}
	s.pending = append(s.pending[:0], s.pending[consumed:]...)
}
