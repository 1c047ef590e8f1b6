package export

// OpenTelemetry traces: a span a call, after the OpenTelemetry semantic
// conventions for MCP (span name "{mcp.method.name} {target}", the
// mcp.*, jsonrpc.*, gen_ai.*, error.type, network.transport attributes),
// with the recorded timestamps. A call whose params._meta carries a W3C
// traceparent is a child of that span; the others of a session share one
// trace (a stdio tape: one trace a server connection; an HTTP tape: one a
// Mcp-Session-Id). The spans go through the OpenTelemetry Go SDK, to an
// OTLP/HTTP endpoint (otlptracehttp) or to a file as OTLP JSON (the OTLP
// protobuf types, written with protojson).

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"

	"github.com/tapedeck/tapedeck/tape"
)

// OTLPOptions say where the spans go.
type OTLPOptions struct {
	// Endpoint is an OTLP/HTTP endpoint URL (http://host:4318 or the full
	// .../v1/traces); empty writes OTLP JSON to the writer instead.
	Endpoint string
	// Headers go with each push (authentication).
	Headers map[string]string
	// WithBodies adds each call's params and result to its span.
	WithBodies bool
	// Service is the resource's service.name; empty is "tapedeck".
	Service string
}

// Tracer turns calls into spans and sends them where OTLPOptions say.
type Tracer struct {
	tp       *sdktrace.TracerProvider
	tracer   trace.Tracer
	file     *fileExporter
	name     string
	opts     OTLPOptions
	mu       sync.Mutex
	versions map[string]string // server → the protocol version its initialize answer gave
	n        int
}

// NewTracer returns a Tracer for the tape named name; without an
// endpoint, it writes OTLP JSON to w.
func NewTracer(ctx context.Context, w io.Writer, name string, o OTLPOptions) (*Tracer, error) {
	if o.Service == "" {
		o.Service = "tapedeck"
	}
	var exp sdktrace.SpanExporter
	t := &Tracer{name: name, opts: o, versions: map[string]string{}}
	if o.Endpoint != "" {
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(traceURL(o.Endpoint))}
		if len(o.Headers) > 0 {
			opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
		}
		e, err := otlptracehttp.New(ctx, opts...)
		if err != nil {
			return nil, fmt.Errorf("otlp: %w", err)
		}
		exp = e
	} else {
		t.file = &fileExporter{w: bufio.NewWriter(w)}
		exp = t.file
	}
	res := resource.NewSchemaless(attribute.String("service.name", o.Service), attribute.String("tapedeck.tape", name))
	t.tp = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(2048), sdktrace.WithMaxQueueSize(8192), sdktrace.WithBlocking()),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(sdktrace.SpanLimits{AttributeCountLimit: 64, AttributeValueLengthLimit: 64 << 10}),
	)
	t.tracer = t.tp.Tracer("github.com/tapedeck/tapedeck")
	return t, nil
}

// Close sends what is left and returns how many spans were made.
func (t *Tracer) Close(ctx context.Context) (int, error) {
	err := t.tp.Shutdown(ctx)
	if err != nil {
		err = fmt.Errorf("otlp: %w", err)
	}
	if err == nil && t.file != nil {
		err = t.file.err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n, err
}

// OTLP exports the tape's calls as spans. It returns how many.
func OTLP(ctx context.Context, w io.Writer, src Source, o OTLPOptions) (int, error) {
	t, err := NewTracer(ctx, w, src.Name, o)
	if err != nil {
		return 0, err
	}
	r, err := src.Open()
	if err != nil {
		t.Close(ctx)
		return 0, err
	}
	defer r.Close()
	err = tape.ReadCalls(r, src.Index, src.Server, func(c tape.Call) error {
		t.Add(c)
		return nil
	})
	n, cerr := t.Close(ctx)
	if err == nil {
		err = cerr
	}
	return n, err
}

var prop = propagation.TraceContext{}

// Add makes the span of call c.
func (t *Tracer) Add(c tape.Call) {
	t.mu.Lock()
	if c.Method == "initialize" && c.ResponseRaw != nil {
		t.versions[c.Server] = gjson.GetBytes(c.ResponseRaw, "result.protocolVersion").String()
	}
	version := t.versions[c.Server]
	t.n++
	t.mu.Unlock()
	o := t.opts
	cctx := context.Background()
	if c.TraceParent != "" {
		cctx = prop.Extract(cctx, propagation.MapCarrier{"traceparent": c.TraceParent})
	}
	if !trace.SpanContextFromContext(cctx).IsValid() {
		cctx = withTrace(cctx, traceFor(t.name, c))
	}
	cctx = withSpanSeed(cctx, t.name, c.Request)
	name := c.Method
	if c.Target != "" {
		name += " " + c.Target
	}
	kind := trace.SpanKindClient
	if c.Dir == tape.DirRecv {
		kind = trace.SpanKindServer // the server's own request, to the client
	}
	transport := "pipe"
	if c.HTTP {
		transport = "tcp"
	}
	attrs := []attribute.KeyValue{
		attribute.String("mcp.method.name", c.Method),
		attribute.String("network.transport", transport),
		attribute.String("tapedeck.server", c.Server),
		attribute.Int("tapedeck.line", c.Line),
		attribute.String("tapedeck.status", c.Status),
	}
	if c.ID != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", string(c.ID)))
	}
	if version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", version))
	}
	if c.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", c.Session))
	}
	switch c.Method {
	case "tools/call":
		attrs = append(attrs, attribute.String("gen_ai.tool.name", c.Target), attribute.String("gen_ai.operation.name", "execute_tool"))
	case "prompts/get":
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.Target))
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		attrs = append(attrs, attribute.String("mcp.resource.uri", c.Target))
	}
	if o.WithBodies {
		if p := gjson.GetBytes(c.RequestRaw, "params"); p.Exists() {
			attrs = append(attrs, attribute.String("mcp.request.params", p.Raw))
		}
		if res := gjson.GetBytes(c.ResponseRaw, "result"); res.Exists() {
			attrs = append(attrs, attribute.String("mcp.response.result", res.Raw))
		}
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	if !c.Start.IsZero() {
		opts = append(opts, trace.WithTimestamp(c.Start))
	}
	_, span := t.tracer.Start(cctx, name, opts...)
	switch c.Status {
	case "error":
		span.SetAttributes(attribute.String("error.type", strconv.FormatInt(c.ErrorCode, 10)), attribute.Int64("rpc.response.status_code", c.ErrorCode))
		span.SetStatus(codes.Error, c.ErrorMessage)
	case "tool-error":
		span.SetAttributes(attribute.String("error.type", "tool_error"))
		span.SetStatus(codes.Error, "the tool failed (isError)")
	case "pending", "cancelled":
		span.SetAttributes(attribute.String("error.type", c.Status))
	}
	end := c.End
	if end.IsZero() {
		end = c.Start
	}
	if end.IsZero() {
		span.End()
	} else {
		span.End(trace.WithTimestamp(end))
	}
}

// traceURL completes an OTLP/HTTP endpoint to its traces path.
func traceURL(u string) string {
	if len(u) >= 10 && u[len(u)-10:] == "/v1/traces" {
		return u
	}
	for len(u) > 0 && u[len(u)-1] == '/' {
		u = u[:len(u)-1]
	}
	return u + "/v1/traces"
}

// traceFor is the trace a call without a traceparent belongs to: one a
// session (HTTP) or a server (stdio), derived from the tape's name so that
// exporting a tape twice gives the same ids.
func traceFor(tapeName string, c tape.Call) trace.TraceID {
	h := sha256.Sum256([]byte("tapedeck\x00" + tapeName + "\x00" + c.Server + "\x00" + c.Session))
	var id trace.TraceID
	copy(id[:], h[:16])
	return id
}

type traceKey struct{}
type seedKey struct{}

func withTrace(ctx context.Context, id trace.TraceID) context.Context {
	return context.WithValue(ctx, traceKey{}, id)
}

func withSpanSeed(ctx context.Context, tapeName string, seq int) context.Context {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h := sha256.Sum256(append([]byte("tapedeck-span\x00"+tapeName+"\x00"), b[:]...))
	var id trace.SpanID
	copy(id[:], h[:8])
	return context.WithValue(ctx, seedKey{}, id)
}

// idGenerator gives the SDK the ids chosen for each call.
type idGenerator struct{}

var _ sdktrace.IDGenerator = idGenerator{}

func (idGenerator) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	tid, _ := ctx.Value(traceKey{}).(trace.TraceID)
	return tid, idGenerator{}.NewSpanID(ctx, tid)
}

func (idGenerator) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	sid, _ := ctx.Value(seedKey{}).(trace.SpanID)
	return sid
}

// fileExporter writes the spans as OTLP JSON: one ExportTraceServiceRequest
// a line, a batch each (the OTLP file exporter's format).
type fileExporter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	err error
}

func (f *fileExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	if len(spans) == 0 {
		return nil
	}
	req := &collectortrace.ExportTraceServiceRequest{}
	byRes := map[*resource.Resource]*tracepb.ResourceSpans{}
	for _, s := range spans {
		rs := byRes[s.Resource()]
		if rs == nil {
			rs = &tracepb.ResourceSpans{Resource: &resourcepb.Resource{Attributes: kvs(s.Resource().Attributes())}, ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: s.InstrumentationScope().Name}}}}
			byRes[s.Resource()] = rs
			req.ResourceSpans = append(req.ResourceSpans, rs)
		}
		sc, parent := s.SpanContext(), s.Parent()
		tid, sid := sc.TraceID(), sc.SpanID()
		ps := &tracepb.Span{
			TraceId:           tid[:],
			SpanId:            sid[:],
			Name:              s.Name(),
			Kind:              tracepb.Span_SpanKind(s.SpanKind()),
			StartTimeUnixNano: uint64(s.StartTime().UnixNano()),
			EndTimeUnixNano:   uint64(s.EndTime().UnixNano()),
			Attributes:        kvs(s.Attributes()),
		}
		if parent.IsValid() {
			pid := parent.SpanID()
			ps.ParentSpanId = pid[:]
		}
		if st := s.Status(); st.Code == codes.Error {
			ps.Status = &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: st.Description}
		}
		rs.ScopeSpans[0].Spans = append(rs.ScopeSpans[0].Spans, ps)
	}
	b, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(req)
	if err != nil {
		return err
	}
	// OTLP/JSON differs from protobuf's JSON mapping in one place: ids are
	// hex, not base64.
	b = hexIDs(b)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.w.Write(append(b, '\n')); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

func (f *fileExporter) Shutdown(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.w.Flush(); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

// hexIDs rewrites the base64 values of "traceId", "spanId" and
// "parentSpanId" in protojson's output as hex.
func hexIDs(b []byte) []byte {
	out := make([]byte, 0, len(b)+len(b)/8)
	for {
		i := bytes.Index(b, []byte(`Id":"`))
		if i < 0 {
			return append(out, b...)
		}
		key := b[:i+3] // up to the key's closing quote
		isID := bytes.HasSuffix(key, []byte(`"traceId"`)) || bytes.HasSuffix(key, []byte(`"spanId"`)) || bytes.HasSuffix(key, []byte(`"parentSpanId"`))
		start := i + len(`Id":"`)
		end := bytes.IndexByte(b[start:], '"')
		if !isID || end < 0 {
			out = append(out, b[:start]...)
			b = b[start:]
			continue
		}
		raw, err := base64.StdEncoding.DecodeString(string(b[start : start+end]))
		out = append(out, b[:start]...)
		if err != nil {
			out = append(out, b[start:start+end]...)
		} else {
			out = hex.AppendEncode(out, raw)
		}
		b = b[start+end:]
	}
}

func kvs(attrs []attribute.KeyValue) []*commonpb.KeyValue {
	out := make([]*commonpb.KeyValue, 0, len(attrs))
	for _, a := range attrs {
		v := &commonpb.AnyValue{}
		switch a.Value.Type() {
		case attribute.INT64:
			v.Value = &commonpb.AnyValue_IntValue{IntValue: a.Value.AsInt64()}
		case attribute.BOOL:
			v.Value = &commonpb.AnyValue_BoolValue{BoolValue: a.Value.AsBool()}
		case attribute.FLOAT64:
			v.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: a.Value.AsFloat64()}
		default:
			v.Value = &commonpb.AnyValue_StringValue{StringValue: a.Value.Emit()}
		}
		out = append(out, &commonpb.KeyValue{Key: string(a.Key), Value: v})
	}
	return out
}
