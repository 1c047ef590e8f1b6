package record

import (
	"io"
	"sync"

	"github.com/tapedeck/tapedeck/tape"
)

// recordMeta is the _meta of one record of an exchange besides dir, server
// and ts (see Proxy). It is encoded straight into the tape line on the hot
// path, and as a map for the sink's slow paths (redaction, batches,
// lifecycle records); both give the same members.
type recordMeta struct {
	ex        *exchange
	status    int    // 0: the request's own record
	stream    int64  // 0: not an SSE event
	event     string // the SSE event id, if hasEvent
	hasEvent  bool
	inReplyTo string // JSON text of the request id an id-null answer replies to
}

// http is the record's HTTP dialect members (tape.HTTPMeta, which writes
// them): a request's own record (status 0) carries its Mcp-Method and
// Mcp-Name headers and its Mcp-Param-* ones, an answer its status and the session it assigned.
func (m recordMeta) http() tape.HTTPMeta {
	ex := m.ex
	h := tape.HTTPMeta{HTTP: true, Method: ex.method, Session: ex.session, Protocol: ex.protocolVersion, Status: m.status,
		Stream: m.stream, Event: m.event, HasEvent: m.hasEvent, InReplyTo: m.inReplyTo, Exchange: ex.no}
	if m.status == 0 {
		h.MCPMethod, h.MCPName, h.MCPParams = ex.mcpMethod, ex.mcpName, tape.ParamsObject(ex.mcpParams)
	} else {
		h.NewSession = ex.newSession
	}
	return h
}

// appendJSON appends the members as `,"key":value` in key order.
func (m recordMeta) appendJSON(b []byte) []byte { return m.http().AppendJSON(b) }

// fields returns the members as a map, for tape.Meta.Extra.
func (m recordMeta) fields() map[string]any { return m.http().Fields() }

// readBody reads a request body whole; size, the declared length, sizes
// the buffer so that a body is read without growing it.
func readBody(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 || size > 16<<20 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // the spare byte takes the read that returns EOF
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

// copyBuffers lends the reverse proxy its copy buffers, which it would
// otherwise allocate (32 KiB) for every answer.
type copyBuffers struct{ pool sync.Pool }

func (c *copyBuffers) Get() []byte {
	if b, ok := c.pool.Get().(*[]byte); ok {
		return *b
	}
	return make([]byte, 32<<10)
}

func (c *copyBuffers) Put(b []byte) { c.pool.Put(&b) }
