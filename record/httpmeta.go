package record

import (
	"bytes"
	"encoding/json"
	"io"
	"strconv"
	"sync"
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

// appendJSON appends the members as `,"key":value` in key order, as
// tape.Writer orders Meta.Extra.
func (m recordMeta) appendJSON(b []byte) []byte {
	ex := m.ex
	if m.hasEvent {
		b = appendMember(b, "event", m.event)
	}
	if ex.no != 0 {
		b = strconv.AppendInt(append(b, `,"exchange":`...), ex.no, 10)
	}
	b = appendMember(b, "http", ex.method)
	if m.inReplyTo != "" {
		b = append(append(b, `,"inReplyTo":`...), m.inReplyTo...)
	}
	if m.status == 0 {
		b = appendMember(b, "mcpMethod", ex.mcpMethod)
		b = appendMember(b, "mcpName", ex.mcpName)
	} else {
		b = appendMember(b, "newSession", ex.newSession)
	}
	b = appendMember(b, "protocolVersion", ex.protocolVersion)
	b = appendMember(b, "session", ex.session)
	if m.status != 0 {
		b = strconv.AppendInt(append(b, `,"status":`...), int64(m.status), 10)
	}
	if m.stream != 0 {
		b = strconv.AppendInt(append(b, `,"stream":`...), m.stream, 10)
	}
	return append(b, `,"transport":"http"`...)
}

// fields returns the members as a map, for tape.Meta.Extra.
func (m recordMeta) fields() map[string]any {
	ex := m.ex
	f := map[string]any{"transport": "http", "http": ex.method}
	set := func(k, v string) {
		if v != "" {
			f[k] = v
		}
	}
	if m.hasEvent {
		f["event"] = m.event
	}
	if ex.no != 0 {
		f["exchange"] = ex.no
	}
	if m.inReplyTo != "" {
		f["inReplyTo"] = json.RawMessage(m.inReplyTo)
	}
	if m.status == 0 {
		set("mcpMethod", ex.mcpMethod)
		set("mcpName", ex.mcpName)
	} else {
		set("newSession", ex.newSession)
		f["status"] = m.status
	}
	set("protocolVersion", ex.protocolVersion)
	set("session", ex.session)
	if m.stream != 0 {
		f["stream"] = m.stream
	}
	return f
}

// appendMember appends `,"key":"value"` unless value is empty (an event id
// may be empty: appendJSON calls it only when the event has one).
func appendMember(b []byte, key, value string) []byte {
	if value == "" && key != "event" {
		return b
	}
	b = append(append(append(b, `,"`...), key...), `":`...)
	return appendJSONString(b, value)
}

// appendJSONString appends s as a JSON string, as tape.Writer encodes it
// (encoding/json without HTML escaping); plain printable ASCII, what header
// values and event ids nearly always are, is copied as it is.
func appendJSONString(b []byte, s string) []byte {
	plain := true
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			plain = false
			break
		}
	}
	if plain {
		return append(append(append(b, '"'), s...), '"')
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return append(b, bytes.TrimSuffix(buf.Bytes(), []byte("\n"))...)
}

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
