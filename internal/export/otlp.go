package export

// OpenTelemetry traces: a span a call, after the OpenTelemetry semantic
// conventions for MCP (span name "{mcp.method.name} {target}", the
// mcp.*, jsonrpc.*, gen_ai.*, error.type, network.transport attributes),
// with the recorded timestamps. A call whose params._meta carries a W3C
// traceparent is a child of that span; the others of a session share one
// trace (a stdio tape: one trace a server connection; an HTTP tape: one a
// Mcp-Session-Id). The spans go through the OpenTelemetry Go SDK, to an
// OTLP/HTTP endpoint (otlptracehttp) or to a file as OTLP JSON (written
// by hand as the collector's pdata marshaler writes it, otlp_file.go).

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tapedeck/tapedeck/tape"
)

// OTLPOptions say where the spans go.
type OTLPOptions struct {
	// Endpoint is an OTLP/HTTP endpoint URL (http://host:4318 or the full
	// .../v1/traces); empty writes OTLP JSON to the writer instead.
	Endpoint string
	// Headers go with each push (authentication).
	Headers map[string]string
	// WithBodies adds each call's params and result to its span, the
	// tool calls' as gen_ai.tool.call.arguments and result (structured),
	// and carries every record of the tape as a span event (see
	// otlp_bodies.go), so that import --from otlp or jaeger rebuilds it.
	WithBodies bool
	// Service is the resource's service.name; empty is "tapedeck".
	Service string
	// OnError, when set, is told the first push the endpoint did not
	// accept, as it happens (a recording goes on; Close says the rest).
	OnError func(error)
}

// SendError says that spans did not reach the endpoint: how many it
// accepted, how many it did not, and what it answered (or that it could
// not be reached).
type SendError struct {
	Endpoint     string
	Sent, Failed int
	Err          error
}

func (e *SendError) Error() string {
	return fmt.Sprintf("otlp: %d of %d spans not accepted by %s (%d sent): %v", e.Failed, e.Sent+e.Failed, e.Endpoint, e.Sent, e.Err)
}

func (e *SendError) Unwrap() error { return e.Err }

// countingExporter is the exporter the SDK pushes through: it counts the
// spans each push delivered or lost and keeps the first error, which the
// SDK would only hand to its global logger.
type countingExporter struct {
	sdktrace.SpanExporter
	onError func(error)
	mu      sync.Mutex
	sent    int
	err     error
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := c.SpanExporter.ExportSpans(ctx, spans)
	c.mu.Lock()
	first := err != nil && c.err == nil
	if err != nil {
		if c.err == nil {
			c.err = err
		}
	} else {
		c.sent += len(spans)
	}
	c.mu.Unlock()
	if first && c.onError != nil {
		c.onError(err)
	}
	return nil // reported by Tracer.Close (and OnError), not logged by the SDK
}

func (c *countingExporter) result() (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent, c.err
}

// Tracer turns calls into spans and sends them where OTLPOptions say.
type Tracer struct {
	tp       *sdktrace.TracerProvider // pushing
	exp      *countingExporter
	tracer   trace.Tracer
	file     spanFile // writing a file
	name     string
	opts     OTLPOptions
	mu       sync.Mutex
	versions map[string]string // server → the protocol version its initialize answer gave
	n        int
	// tasks are the tape's tasks by creating request: each gets a span
	// of its own beside its call's (otlp_tasks.go).
	tasks map[int]tape.Task
	// traces are the traces of the calls without a traceparent, by
	// server and session (traceOf).
	traces map[traceKeyOf]trace.TraceID
	// attrs are the attributes of the span written last to a file, for
	// the next one's (add); spanKey is what spanOf hashes.
	attrs   []attribute.KeyValue
	spanKey []byte
	raw     []byte // the last call span's rawAttrs, for the next one's
}

// NewTracer returns a Tracer for the tape named name; without an
// endpoint, it writes OTLP JSON to w.
func NewTracer(ctx context.Context, w io.Writer, name string, o OTLPOptions) (*Tracer, error) {
	if o.Service == "" {
		o.Service = "tapedeck"
	}
	t := &Tracer{name: name, opts: o, versions: map[string]string{}}
	if o.Endpoint == "" {
		// A file: OTLP JSON as the collector's marshaler writes it (hex
		// ids, integer enums), a line a batch (otlp_file.go).
		t.file = newOTLPFile(w, o.Service, name)
		return t, nil
	}
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(traceURL(o.Endpoint))}
	if len(o.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(o.Headers))
	}
	inner, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("otlp: %w", err)
	}
	exp := &countingExporter{SpanExporter: inner, onError: o.OnError}
	t.exp = exp
	res := resource.NewSchemaless(attribute.String("service.name", o.Service), attribute.String("tapedeck.tape", name))
	limits := sdktrace.SpanLimits{AttributeCountLimit: 64, AttributeValueLengthLimit: 64 << 10}
	if o.WithBodies {
		limits = bodyLimits() // nothing cut: the records must come back whole
	}
	t.tp = sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, sdktrace.WithMaxExportBatchSize(2048), sdktrace.WithMaxQueueSize(8192), sdktrace.WithBlocking()),
		sdktrace.WithIDGenerator(idGenerator{}),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(limits),
	)
	t.tracer = t.tp.Tracer("github.com/tapedeck/tapedeck")
	return t, nil
}

// Close sends what is left and returns how many spans were delivered:
// written to the file, or accepted by the endpoint. When any span was not
// accepted (the endpoint answered an error, could not be reached, or ctx
// ended first) the error is a *SendError with the counts.
func (t *Tracer) Close(ctx context.Context) (int, error) {
	if t.tp != nil {
		serr := t.tp.Shutdown(ctx)
		sent, err := t.exp.result()
		t.mu.Lock()
		made := t.n
		t.mu.Unlock()
		if err == nil && serr != nil {
			err = serr
		}
		if err == nil && sent < made {
			err = errors.New("the spans were not all pushed before the deadline")
		}
		if err != nil {
			return sent, &SendError{Endpoint: traceURL(t.opts.Endpoint), Sent: sent, Failed: made - sent, Err: err}
		}
		return sent, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.n, t.file.flush(true)
}

// OTLP exports the tape's calls as spans, and each task as one span from
// its creation to its terminal status. It returns how many.
func OTLP(ctx context.Context, w io.Writer, src Source, o OTLPOptions) (int, error) {
	t, err := NewTracer(ctx, w, src.Name, o)
	if err != nil {
		return 0, err
	}
	return t.export(ctx, src)
}

// export makes the spans of src's calls and tasks, and closes t.
func (t *Tracer) export(ctx context.Context, src Source) (int, error) {
	r, err := src.Open()
	if err != nil {
		t.Close(ctx)
		return 0, err
	}
	defer r.Close()
	t.tasks = taskSpans(src)
	var carried *carriedRecords
	if t.opts.WithBodies {
		if carried, err = carryRecords(src); err != nil {
			t.Close(ctx)
			return 0, err
		}
	}
	// Without bodies a span reads no answer but an initialize's or an
	// error's, and no message's bytes but through tape's fields.
	lean := tape.CallOptions{Lean: !t.opts.WithBodies}
	err = readCalls(r, src.Index, src.Server, lean, func(c tape.Call) error {
		t.add(c, carried.of(c.Request))
		return nil
	}, nil)
	if err == nil && carried != nil {
		t.addRecords(carried.rest)
	}
	n, cerr := t.Close(ctx)
	if err == nil {
		err = cerr
	}
	return n, err
}

var prop = propagation.TraceContext{}

// spec is a span as Add builds it, before it goes to the SDK or a file.
type spec struct {
	name  string
	kind  trace.SpanKind
	attrs []attribute.KeyValue
	// rawAttrs, when not nil, are the attributes as the file writes them
	// (a JSON array), instead of attrs.
	rawAttrs []byte
	start    time.Time
	end      time.Time
	trace    trace.TraceID
	span     trace.SpanID
	parent   trace.SpanID // zero: a root span
	failed   bool
	message  string
	events   []carried // the tape's records this span carries (WithBodies)
}

// Add makes the span of call c.
func (t *Tracer) Add(c tape.Call) { t.add(c, nil) }

// add makes the span of call c, carrying the records recs.
func (t *Tracer) add(c tape.Call, recs []carried) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if c.Method == "initialize" && c.ResponseRaw != nil {
		t.versions[c.Server] = gjson.GetBytes(c.ResponseBytes(), "result.protocolVersion").String()
	}
	sp := t.spec(c, t.versions[c.Server])
	sp.events = recs
	t.emit(sp)
	if tk, ok := t.tasks[c.Request]; ok {
		t.emit(t.taskSpec(tk, c, sp))
	}
	if t.file != nil {
		clear(sp.attrs)
		t.attrs = sp.attrs[:0] // written out: the next call's span reuses them
	}
}

// emit sends or writes the span sp.
func (t *Tracer) emit(sp spec) {
	t.n++
	if t.file != nil {
		t.file.add(sp)
		return
	}
	cctx := context.Background()
	if sp.parent.IsValid() {
		cctx = trace.ContextWithRemoteSpanContext(cctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: sp.trace, SpanID: sp.parent, TraceFlags: trace.FlagsSampled, Remote: true}))
	} else {
		cctx = withTrace(cctx, sp.trace)
	}
	cctx = context.WithValue(cctx, seedKey{}, sp.span)
	opts := []trace.SpanStartOption{trace.WithSpanKind(sp.kind), trace.WithAttributes(sp.attrs...)}
	if !sp.start.IsZero() {
		opts = append(opts, trace.WithTimestamp(sp.start))
	}
	_, span := t.tracer.Start(cctx, sp.name, opts...)
	for _, ev := range sp.events {
		span.AddEvent(RecordEvent, trace.WithTimestamp(ev.at(sp.start)), trace.WithAttributes(ev.attrs()...))
	}
	if sp.failed {
		span.SetStatus(codes.Error, sp.message)
	}
	if sp.end.IsZero() {
		span.End()
	} else {
		span.End(trace.WithTimestamp(sp.end))
	}
}

// spec builds call c's span; version is its server's protocol version.
func (t *Tracer) spec(c tape.Call, version string) spec {
	o := t.opts
	sp := spec{name: c.Method, kind: trace.SpanKindClient, start: c.Start, end: c.End}
	if c.Target != "" {
		sp.name += " " + c.Target
	}
	if c.Dir == tape.DirRecv {
		sp.kind = trace.SpanKindServer // the server's own request, to the client
	}
	if sp.end.IsZero() {
		sp.end = sp.start
	}
	if c.TraceParent != "" {
		if sc := trace.SpanContextFromContext(prop.Extract(context.Background(), propagation.MapCarrier{"traceparent": c.TraceParent})); sc.IsValid() {
			sp.trace, sp.parent = sc.TraceID(), sc.SpanID()
		}
	}
	if !sp.trace.IsValid() {
		sp.trace = t.traceOf(c)
	}
	sp.span = t.spanOf(c.Request)
	if _, ok := t.file.(*otlpFile); ok && !o.WithBodies {
		// Written as OTLP JSON: the attributes as their JSON at once
		// (appendCallAttrs), not a list of attribute values.
		t.raw = appendCallAttrs(t.raw[:0], c, version)
		sp.rawAttrs = t.raw
	} else {
		sp.attrs = t.callAttrs(c, version)
	}
	switch c.Status {
	case "error":
		sp.failed, sp.message = true, c.ErrorMessage
	case "tool-error":
		sp.failed, sp.message = true, "the tool failed (isError)"
	}
	return sp
}

// callAttrs are call c's span's attributes; version is its server's
// protocol version.
func (t *Tracer) callAttrs(c tape.Call, version string) []attribute.KeyValue {
	transport := "pipe"
	if c.HTTP {
		transport = "tcp"
	}
	attrs := t.attrs
	if t.attrs = nil; attrs == nil {
		attrs = make([]attribute.KeyValue, 0, 12) // what a call without bodies has at most
	}
	attrs = append(attrs,
		attribute.String("mcp.method.name", c.Method),
		attribute.String("network.transport", transport),
		attribute.String("tapedeck.server", c.Server),
		attribute.Int("tapedeck.line", c.Line),
		attribute.String("tapedeck.status", c.Status),
	)
	if c.ID != "" {
		attrs = append(attrs, attribute.String("jsonrpc.request.id", string(c.ID)))
	}
	if version != "" {
		attrs = append(attrs, attribute.String("mcp.protocol.version", version))
	}
	if c.Session != "" {
		attrs = append(attrs, attribute.String("mcp.session.id", c.Session))
	}
	switch tape.TargetKind(c.Method) {
	case tape.TargetTool:
		attrs = append(attrs, attribute.String("gen_ai.tool.name", c.Target), attribute.String("gen_ai.operation.name", "execute_tool"))
	case tape.TargetPrompt:
		attrs = append(attrs, attribute.String("gen_ai.prompt.name", c.Target))
	case tape.TargetResource:
		attrs = append(attrs, attribute.String("mcp.resource.uri", c.Target))
	}
	if t.opts.WithBodies {
		if p := gjson.GetBytes(c.RequestRaw, "params"); p.Exists() {
			attrs = append(attrs, attribute.String("mcp.request.params", p.Raw))
		}
		if res := gjson.GetBytes(c.ResponseRaw, "result"); res.Exists() {
			attrs = append(attrs, attribute.String("mcp.response.result", res.Raw))
		}
		attrs = append(attrs, toolPayload(c)...)
	}
	switch c.Status {
	case "error":
		attrs = append(attrs, attribute.String("error.type", strconv.FormatInt(c.ErrorCode, 10)), attribute.Int64("rpc.response.status_code", c.ErrorCode))
	case "tool-error":
		attrs = append(attrs, attribute.String("error.type", "tool_error"))
	case "pending", "cancelled":
		attrs = append(attrs, attribute.String("error.type", c.Status))
	}
	return attrs
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

// traceOf is traceFor(t.name, c), hashed once a server and session.
func (t *Tracer) traceOf(c tape.Call) trace.TraceID {
	k := traceKeyOf{c.Server, c.Session}
	id, ok := t.traces[k]
	if !ok {
		id = traceFor(t.name, c)
		if t.traces == nil {
			t.traces = map[traceKeyOf]trace.TraceID{}
		}
		t.traces[k] = id
	}
	return id
}

type traceKeyOf struct{ server, session string }

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

// spanOf is spanFor(t.name, seq), its bytes hashed in one buffer.
func (t *Tracer) spanOf(seq int) trace.SpanID {
	if t.spanKey == nil {
		t.spanKey = []byte("tapedeck-span\x00" + t.name + "\x00")
	}
	n := len(t.spanKey)
	t.spanKey = binary.BigEndian.AppendUint64(t.spanKey, uint64(seq))
	h := sha256.Sum256(t.spanKey)
	t.spanKey = t.spanKey[:n]
	var id trace.SpanID
	copy(id[:], h[:8])
	return id
}

// spanFor is call seq's span id, derived from the tape's name: exporting a
// tape twice gives the same ids.
func spanFor(tapeName string, seq int) trace.SpanID {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h := sha256.Sum256(append([]byte("tapedeck-span\x00"+tapeName+"\x00"), b[:]...))
	var id trace.SpanID
	copy(id[:], h[:8])
	return id
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
