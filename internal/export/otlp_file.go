package export

import (
	"bufio"
	"encoding/hex"
	"io"
	"math"
	"strconv"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
)

// spanFile is where a Tracer without an endpoint writes its spans.
type spanFile interface {
	add(sp spec)
	// flush writes the spans added since the last flush; the last one
	// also flushes the writer and returns the first write error.
	flush(last bool) error
}

// otlpFile writes spans as OTLP JSON, a line (an ExportTraceServiceRequest
// of one resource and one scope) a batch of otlpBatch spans, byte for byte
// as the collector's ptrace.JSONMarshaler writes them (protobuf JSON
// names, ids in hex, 64-bit integers as strings, enums as integers, empty
// fields left out) without building its data model: the spans' bytes are
// appended as they are made. TestOTLPFileAgrees holds it to the
// collector's marshaler.
type otlpFile struct {
	w     *bufio.Writer
	head  []byte // the line up to its first span
	line  []byte // the batch being written
	count int
	err   error
}

const otlpBatch = 4096

func newOTLPFile(w io.Writer, service, tapeName string) *otlpFile {
	h := append([]byte(nil), `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":`...)
	h = appendOTLPString(h, service)
	h = append(h, `}},{"key":"tapedeck.tape","value":{"stringValue":`...)
	h = appendOTLPString(h, tapeName)
	h = append(h, `}}]},"scopeSpans":[{"scope":{"name":"github.com/tapedeck/tapedeck"},"spans":[`...)
	return &otlpFile{w: bufio.NewWriterSize(w, 1<<16), head: h}
}

func (f *otlpFile) add(sp spec) {
	b := f.line
	if f.count == 0 {
		b = append(b[:0], f.head...)
	} else {
		b = append(b, ',')
	}
	b = append(b, '{')
	n := len(b)
	if sp.trace.IsValid() {
		b = append(b, `"traceId":"`...)
		b = hex.AppendEncode(b, sp.trace[:])
		b = append(b, '"')
	}
	if sp.span.IsValid() {
		b = field(b, n, "spanId")
		b = append(b, '"')
		b = hex.AppendEncode(b, sp.span[:])
		b = append(b, '"')
	}
	if sp.parent.IsValid() {
		b = field(b, n, "parentSpanId")
		b = append(b, '"')
		b = hex.AppendEncode(b, sp.parent[:])
		b = append(b, '"')
	}
	if sp.name != "" {
		b = field(b, n, "name")
		b = appendOTLPString(b, sp.name)
	}
	kind := "3" // SPAN_KIND_CLIENT
	switch sp.kind {
	case trace.SpanKindServer:
		kind = "2"
	case trace.SpanKindInternal:
		kind = "1"
	}
	b = field(b, n, "kind")
	b = append(b, kind...)
	if ts := uint64(sp.start.UnixNano()); ts != 0 {
		b = field(b, n, "startTimeUnixNano")
		b = appendQuotedUint(b, ts)
	}
	if ts := uint64(sp.end.UnixNano()); ts != 0 {
		b = field(b, n, "endTimeUnixNano")
		b = appendQuotedUint(b, ts)
	}
	if sp.rawAttrs != nil {
		b = field(b, n, "attributes")
		b = append(b, sp.rawAttrs...)
	} else if len(sp.attrs) > 0 {
		b = field(b, n, "attributes")
		b = appendOTLPAttrs(b, sp.attrs)
	}
	if len(sp.events) > 0 {
		b = field(b, n, "events")
		b = append(b, '[')
		for i, ev := range sp.events {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, '{')
			if ts := uint64(ev.at(sp.start).UnixNano()); ts != 0 {
				b = append(b, `"timeUnixNano":`...)
				b = appendQuotedUint(b, ts)
				b = append(b, ',')
			}
			b = append(b, `"name":"`+RecordEvent+`","attributes":[{"key":"`+RecordSeqAttr+`","value":{"intValue":"`...)
			b = strconv.AppendInt(b, int64(ev.seq), 10)
			b = append(b, `"}},{"key":"`+RecordAttr+`","value":{"stringValue":`...)
			b = appendOTLPString(b, ev.line)
			b = append(b, "}}]}"...)
		}
		b = append(b, ']')
	}
	b = field(b, n, "status")
	b = append(b, '{')
	if sp.failed {
		if sp.message != "" {
			b = append(b, `"message":`...)
			b = appendOTLPString(b, sp.message)
			b = append(b, ',')
		}
		b = append(b, `"code":2`...) // STATUS_CODE_ERROR
	}
	b = append(b, "}}"...)
	f.line = b
	if f.count++; f.count == otlpBatch {
		f.flush(false)
	}
}

// field appends the name of an object's member, after a comma unless it
// is the object's first (the object's members start at b[start]).
func field(b []byte, start int, name string) []byte {
	if len(b) > start {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

func (f *otlpFile) flush(last bool) error {
	if f.count > 0 && f.err == nil {
		f.line = append(f.line, "]}]}]}\n"...)
		_, f.err = f.w.Write(f.line)
	}
	f.line, f.count = f.line[:0], 0
	if last && f.err == nil {
		f.err = f.w.Flush()
	}
	return f.err
}

// appendOTLPAttrs appends attributes as a pcommon.Map holds them: a key
// given twice keeps its first place and its last value (Map.PutEmpty).
func appendOTLPAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	var first, last map[attribute.Key]int // for long lists (objects' members)
	if len(kvs) > 16 {
		first, last = make(map[attribute.Key]int, len(kvs)), make(map[attribute.Key]int, len(kvs))
		for i := len(kvs) - 1; i >= 0; i-- {
			first[kvs[i].Key] = i
		}
		for i, kv := range kvs {
			last[kv.Key] = i
		}
	}
	b = append(b, '[')
	for i, kv := range kvs {
		v := kv.Value
		if first != nil {
			if first[kv.Key] != i {
				continue
			}
			v = kvs[last[kv.Key]].Value
		} else {
			if seenBefore(kvs, i) {
				continue
			}
			for _, later := range kvs[i+1:] {
				if later.Key == kv.Key {
					v = later.Value
				}
			}
		}
		if b[len(b)-1] != '[' {
			b = append(b, ',')
		}
		b = append(b, '{')
		if kv.Key != "" {
			b = append(b, `"key":`...)
			b = appendOTLPString(b, string(kv.Key))
			b = append(b, ',')
		}
		b = append(b, `"value":`...)
		b = appendOTLPValue(b, v)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendCallAttrs appends the attributes of call c's span without bodies
// (Tracer.callAttrs; version is its server's protocol version) as
// appendOTLPAttrs appends them, without building them first: each key is
// there once, in callAttrs' order. TestCallAttrsAgree holds the two
// together.
func appendCallAttrs(b []byte, c tape.Call, version string) []byte {
	str := func(b []byte, key, v string) []byte {
		b = append(b, key...) // `{"key":"K","value":{"stringValue":`
		b = appendOTLPString(b, v)
		return append(b, "}},"...)
	}
	b = append(b, '[')
	b = str(b, `{"key":"mcp.method.name","value":{"stringValue":`, c.Method)
	if c.HTTP {
		b = append(b, `{"key":"network.transport","value":{"stringValue":"tcp"}},`...)
	} else {
		b = append(b, `{"key":"network.transport","value":{"stringValue":"pipe"}},`...)
	}
	b = str(b, `{"key":"tapedeck.server","value":{"stringValue":`, c.Server)
	b = append(b, `{"key":"tapedeck.line","value":{"intValue":"`...)
	b = strconv.AppendInt(b, int64(c.Line), 10)
	b = append(b, `"}},`...)
	b = str(b, `{"key":"tapedeck.status","value":{"stringValue":`, c.Status)
	if c.ID != "" {
		b = str(b, `{"key":"jsonrpc.request.id","value":{"stringValue":`, string(c.ID))
	}
	if version != "" {
		b = str(b, `{"key":"mcp.protocol.version","value":{"stringValue":`, version)
	}
	if c.Session != "" {
		b = str(b, `{"key":"mcp.session.id","value":{"stringValue":`, c.Session)
	}
	switch tape.TargetKind(c.Method) {
	case tape.TargetTool:
		b = str(b, `{"key":"gen_ai.tool.name","value":{"stringValue":`, c.Target)
		b = append(b, `{"key":"gen_ai.operation.name","value":{"stringValue":"execute_tool"}},`...)
	case tape.TargetPrompt:
		b = str(b, `{"key":"gen_ai.prompt.name","value":{"stringValue":`, c.Target)
	case tape.TargetResource:
		b = str(b, `{"key":"mcp.resource.uri","value":{"stringValue":`, c.Target)
	}
	switch c.Status {
	case "error":
		b = append(b, `{"key":"error.type","value":{"stringValue":"`...)
		b = strconv.AppendInt(b, c.ErrorCode, 10)
		b = append(b, `"}},{"key":"rpc.response.status_code","value":{"intValue":"`...)
		b = strconv.AppendInt(b, c.ErrorCode, 10)
		b = append(b, `"}},`...)
	case "tool-error":
		b = append(b, `{"key":"error.type","value":{"stringValue":"tool_error"}},`...)
	case "pending", "cancelled":
		b = str(b, `{"key":"error.type","value":{"stringValue":`, c.Status)
	}
	b[len(b)-1] = ']' // the last comma
	return b
}

// appendOTLPValue appends an AnyValue as putValue (the attribute value
// converted to pdata) and the marshaler write it.
func appendOTLPValue(b []byte, v attribute.Value) []byte {
	switch v.Type() {
	case attribute.BOOL:
		b = append(b, `{"boolValue":`...)
		b = strconv.AppendBool(b, v.AsBool())
	case attribute.INT64:
		b = append(b, `{"intValue":"`...)
		b = strconv.AppendInt(b, v.AsInt64(), 10)
		b = append(b, '"')
	case attribute.FLOAT64:
		b = append(b, `{"doubleValue":`...)
		b = appendOTLPFloat(b, v.AsFloat64())
	case attribute.STRING:
		b = append(b, `{"stringValue":`...)
		b = appendOTLPString(b, v.AsString())
	case attribute.MAP:
		b = append(b, `{"kvlistValue":{`...)
		if m := v.AsMap(); len(m) > 0 {
			b = append(b, `"values":`...)
			b = appendOTLPAttrs(b, m)
		}
		b = append(b, '}')
	case attribute.SLICE:
		b = append(b, `{"arrayValue":{`...)
		if s := v.AsSlice(); len(s) > 0 {
			b = append(b, `"values":[`...)
			for i, e := range s {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendOTLPValue(b, e)
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	case attribute.EMPTY:
		b = append(b, '{')
	default:
		b = append(b, `{"stringValue":`...)
		b = appendOTLPString(b, v.Emit())
	}
	return append(b, '}')
}

// appendOTLPFloat appends a double as the marshaler does: NaN and the
// infinities as strings, other values in the shortest form, in exponent
// form below 1e-6 and from 1e21.
func appendOTLPFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(b, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(b, `"-Infinity"`...)
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	return strconv.AppendFloat(b, f, format, -1, 64)
}

func appendQuotedUint(b []byte, n uint64) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, n, 10)
	return append(b, '"')
}

// appendOTLPString appends s quoted as the marshaler (json-iterator's
// fastest configuration) quotes it: '"', '\\' and control bytes escaped
// (\n, \r, \t by name, the others as \u00XX), every other byte as it is,
// invalid UTF-8 included; the bytes that need nothing crossed eight at a
// time.
func appendOTLPString[S ~string | ~[]byte](b []byte, s S) []byte {
	b = append(b, '"')
	start := 0
	for i := jsonscan.Plain(s, 0); i < len(s); i = jsonscan.Plain(s, start) {
		b = append(b, s[start:i]...)
		switch c := s[i]; c {
		case '\b', '\f': // not by name, unlike encoding/json
			b = append(b, '\\', 'u', '0', '0', '0', "0123456789abcdef"[c])
		default:
			b = jsonscan.AppendEscape(b, c)
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// seenBefore says whether kvs[i]'s key is among the keys before it.
func seenBefore(kvs []attribute.KeyValue, i int) bool {
	for _, kv := range kvs[:i] {
		if kv.Key == kvs[i].Key {
			return true
		}
	}
	return false
}
