package importer

// Traces into tapes: OTLP JSON (the collector's file exporter, one
// ExportTraceServiceRequest a line) and Jaeger's query API (jaeger.go)
// read into one model of spans, and the spans into a tape.
//
// Spans tapedeck exported with bodies carry every record of their tape as
// span events (tapedeck.record: the line, tapedeck.seq: its place): those
// tapes come back whole, record by record in tapedeck.seq order, as they
// were recorded (their own $transport/start first), and replay.
//
// Other spans after the OpenTelemetry MCP conventions (mcp.method.name,
// jsonrpc.request.id, gen_ai.tool.name, mcp.resource.uri, error.type, the
// span's times and status) become a skeleton: a request and its answer a
// span, marked _meta.skeleton, with what the span says (method, target,
// id, status, error code, times) and no more. stats, open, check and diff
// read a skeleton; replay refuses it. A tools/call span with the
// conventions' gen_ai.tool.call.arguments and result (or tapedeck's
// mcp.request.params and mcp.response.result) gets its real params and
// result instead. Spans without mcp.method.name are skipped (counted).

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// The names tapedeck's OTLP export uses (internal/export/otlp_bodies.go).
const (
	recordEvent   = "tapedeck.record"
	recordSeqAttr = "tapedeck.seq"
	recordAttr    = "tapedeck.record"
)

// traceSpan is a span as both trace sources give it.
type traceSpan struct {
	traceID, spanID, parentID string
	name                      string
	kind                      string // "client", "server", "internal", ... or ""
	start, end                time.Time
	attrs                     map[string]any // string, int64, float64, bool, map[string]any, []any
	attrsRaw                  []byte         // OTLP JSON attributes not yet in attrs (the fast path's)
	tagsRaw                   []jaegerKVRaw  // Jaeger tags not yet in attrs (the fast path's)
	records                   []carriedRecord
	failed                    bool
	statusMessage             string
	tape, service             string // the resource's tapedeck.tape and service.name
}

type carriedRecord struct {
	seq  int64
	line string
	raw  []byte // instead of line: the bytes of its JSON string, escaped (the fast paths')
	std  bool   // raw is decoded as encoding/json does (Jaeger's), not as pdata
}

// text appends the record's line to buf.
func (r carriedRecord) text(buf []byte) []byte {
	if r.raw != nil && r.std {
		return stdUnescape(buf, r.raw)
	}
	if r.raw != nil {
		return unescapeJSON(buf, r.raw)
	}
	return append(buf, r.line...)
}

// decodeAttrs fills s.attrs from s.attrsRaw with pdata, as a span pdata
// read whole would hold them.
func (s *traceSpan) decodeAttrs() error {
	if s.tagsRaw != nil || s.attrs == nil && s.attrsRaw == nil {
		s.attrs = make(map[string]any, len(s.tagsRaw))
		for _, kv := range s.tagsRaw {
			s.attrs[kv.key] = kvValue(jaegerKV{Key: kv.key, Type: kv.typ, Value: kv.value})
		}
		s.tagsRaw = nil
	}
	if s.attrsRaw == nil {
		return nil
	}
	doc := make([]byte, 0, len(s.attrsRaw)+64)
	doc = append(doc, `{"resourceSpans":[{"scopeSpans":[{"spans":[{"attributes":`...)
	doc = append(doc, s.attrsRaw...)
	doc = append(doc, "}]}]}]}"...)
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(doc)
	if err != nil {
		return err
	}
	s.attrs = td.ResourceSpans().At(0).ScopeSpans().At(0).Spans().At(0).Attributes().AsRaw()
	s.attrsRaw = nil
	return nil
}

// str is attribute k as text ("" when absent).
func (s *traceSpan) str(k string) string {
	switch v := s.attrs[k].(type) {
	case nil:
		return ""
	case string:
		return v
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

// jsonAttr is attribute k as JSON: a structured value as it is, text that
// holds a JSON object or array (a store without structured values keeps
// them as text) parsed; nil when absent.
func (s *traceSpan) jsonAttr(k string) json.RawMessage {
	v, ok := s.attrs[k]
	if !ok {
		return nil
	}
	if str, ok := v.(string); ok {
		t := strings.TrimSpace(str)
		if (strings.HasPrefix(t, "{") || strings.HasPrefix(t, "[")) && json.Valid([]byte(t)) {
			return json.RawMessage(t)
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// OTLP imports OTLP JSON, as the OpenTelemetry collector's file exporter
// writes it (and tapedeck export --format otlp): one
// ExportTraceServiceRequest a line.
func OTLP(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	if data, ctx, release, ok := mappedInput(r); ok {
		defer release()
		res, err := otlpMapped(ctx, data, w, o)
		return res, shrankIn(r, err) // the file cut shorter: named
	}
	var spans []traceSpan
	br := bufio.NewReaderSize(r, 1<<20)
	hint := 4096 // the last line's length: the next one's buffer
	for line := 1; ; line++ {
		// The spans keep slices of the line: read into a buffer of its own.
		b, err := readOwnLine(br, make([]byte, 0, hint))
		if len(b) > hint {
			hint = len(b) + len(b)/8
		}
		var lerr error
		if spans, lerr = addOTLPLine(spans, bytes.TrimSpace(b), line); lerr != nil {
			return Result{}, lerr
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return Result{}, err
		}
	}
	return otlpSpans(spans, w, o)
}

// addOTLPLine appends the spans of own, line's bytes trimmed, to spans:
// read by the fast path, else by pdata.
func addOTLPLine(spans []traceSpan, own []byte, line int) ([]traceSpan, error) {
	if len(own) == 0 {
		return spans, nil
	}
	if s, ok := scanOTLPLine(own, spans); ok {
		return s, nil
	}
	var u ptrace.JSONUnmarshaler
	td, err := u.UnmarshalTraces(own)
	if err != nil {
		return spans, &Error{Format: "otlp", Line: line, Err: fmt.Errorf("expected an OTLP JSON ExportTraceServiceRequest, found %s: %v", quoteStart(own), err)}
	}
	return append(spans, pdataSpans(td)...), nil
}

// otlpSpans writes the tape of the spans read from every line.
func otlpSpans(spans []traceSpan, w *tape.Writer, o Options) (Result, error) {
	if len(spans) == 0 {
		return Result{}, &Error{Format: "otlp", Path: "$.resourceSpans[*].scopeSpans[*].spans", Err: errors.New("expected OTLP JSON spans, found none (an empty input or no spans)")}
	}
	return writeSpans("otlp", spans, w, o)
}

// readOwnLine appends the next line of br (its newline included) to buf.
func readOwnLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return buf, err
		}
	}
}

// pdataSpans reads the spans of a collector batch.
func pdataSpans(td ptrace.Traces) []traceSpan {
	var out []traceSpan
	for i := 0; i < td.ResourceSpans().Len(); i++ {
		rs := td.ResourceSpans().At(i)
		res := rs.Resource().Attributes()
		var tapeName, service string
		if v, ok := res.Get("tapedeck.tape"); ok {
			tapeName = v.AsString()
		}
		if v, ok := res.Get("service.name"); ok {
			service = v.AsString()
		}
		for j := 0; j < rs.ScopeSpans().Len(); j++ {
			ss := rs.ScopeSpans().At(j).Spans()
			for k := 0; k < ss.Len(); k++ {
				s := ss.At(k)
				ts := traceSpan{
					traceID: s.TraceID().String(), spanID: s.SpanID().String(), name: s.Name(),
					start: s.StartTimestamp().AsTime(), end: s.EndTimestamp().AsTime(),
					attrs: s.Attributes().AsRaw(), tape: tapeName, service: service,
					failed: s.Status().Code() == ptrace.StatusCodeError, statusMessage: s.Status().Message(),
				}
				if !s.ParentSpanID().IsEmpty() {
					ts.parentID = s.ParentSpanID().String()
				}
				switch s.Kind() {
				case ptrace.SpanKindClient:
					ts.kind = "client"
				case ptrace.SpanKindServer:
					ts.kind = "server"
				case ptrace.SpanKindInternal:
					ts.kind = "internal"
				}
				for e := 0; e < s.Events().Len(); e++ {
					ev := s.Events().At(e)
					if ev.Name() != recordEvent {
						continue
					}
					seq, ok1 := ev.Attributes().Get(recordSeqAttr)
					rec, ok2 := ev.Attributes().Get(recordAttr)
					if ok1 && ok2 && seq.Type() == pcommon.ValueTypeInt && rec.Type() == pcommon.ValueTypeStr {
						ts.records = append(ts.records, carriedRecord{seq: seq.Int(), line: rec.Str()})
					}
				}
				out = append(out, ts)
			}
		}
	}
	return out
}

// writeSpans writes the tape of spans: the tapes they carry whole, then a
// skeleton of the MCP spans that carry none.
func writeSpans(format string, spans []traceSpan, w *tape.Writer, o Options) (Result, error) {
	out := newOut(w)
	// The carried records are put in order (tape by name, then seq) as
	// small references to them; of a record carried twice (a span
	// exported twice carries the same line) the last one read is kept.
	rank := map[string]int32{}
	for i := range spans {
		if len(spans[i].records) > 0 {
			rank[spans[i].tape] = 0
		}
	}
	names := make([]string, 0, len(rank))
	for n := range rank {
		names = append(names, n)
	}
	sort.Strings(names)
	for i, n := range names {
		rank[n] = int32(i)
	}
	type recRef struct {
		tape      int32
		span, rec int32
		seq       int64
	}
	var refs []recRef
	for i := range spans {
		for j, r := range spans[i].records {
			refs = append(refs, recRef{tape: rank[spans[i].tape], span: int32(i), rec: int32(j), seq: r.seq})
		}
	}
	slices.SortFunc(refs, func(a, b recRef) int {
		if c := cmp.Compare(a.tape, b.tape); c != 0 {
			return c
		}
		if c := cmp.Compare(a.seq, b.seq); c != 0 {
			return c
		}
		if c := cmp.Compare(a.span, b.span); c != 0 {
			return c
		}
		return cmp.Compare(a.rec, b.rec)
	})
	rl := recordLines{out: out, o: o}
	for k, ref := range refs {
		if k+1 < len(refs) && refs[k+1].tape == ref.tape && refs[k+1].seq == ref.seq {
			continue // read again later
		}
		if err := rl.write(spans[ref.span].records[ref.rec]); err != nil {
			_ = rl.flush()
			return Result{}, &Error{Format: format, Path: fmt.Sprintf("tape %q, record %d", names[ref.tape], ref.seq), Err: err}
		}
	}
	if err := rl.flush(); err != nil {
		return Result{}, &Error{Format: format, Err: err}
	}
	var rest []traceSpan
	for _, s := range spans {
		if _, whole := rank[s.tape]; !whole {
			rest = append(rest, s)
		}
	}
	for i := range rest {
		if err := rest[i].decodeAttrs(); err != nil {
			return Result{}, &Error{Format: format, Path: fmt.Sprintf("span %s", rest[i].spanID), Err: fmt.Errorf("expected OTLP JSON attributes: %v", err)}
		}
	}
	if err := writeSkeleton(format, rest, out, o); err != nil {
		return Result{}, &Error{Format: format, Path: "spans", Err: err}
	}
	return out.result(), nil
}

// writeRecord writes one carried tape line: the message's bytes as they
// were, its _meta read back into a tape.Meta.
func writeRecord(out *out, line []byte, o Options) error {
	metaRaw := tape.RecordMeta(line)
	if metaRaw == nil {
		return fmt.Errorf("expected a tape record with _meta, found %s", quoteStart(line))
	}
	if ok, err := plainRecord(out, line, metaRaw, o); ok || err != nil {
		return err
	}
	var meta map[string]json.RawMessage
	if err := json.Unmarshal(metaRaw, &meta); err != nil {
		return fmt.Errorf("expected a _meta object, found %s", quoteStart(metaRaw))
	}
	var m tape.Meta
	var dir, ts string
	_ = json.Unmarshal(meta["dir"], &dir)
	_ = json.Unmarshal(meta["server"], &m.Server)
	_ = json.Unmarshal(meta["ts"], &ts)
	m.Dir = tape.Dir(dir)
	if ts != "" {
		t, err := parseTime(ts)
		if err != nil {
			return fmt.Errorf("_meta.ts: %v", err)
		}
		m.Time = t
	}
	if o.Server != "" {
		m.Server = o.Server
	}
	for k, v := range meta {
		if k == "dir" || k == "server" || k == "ts" {
			continue
		}
		if m.Extra == nil {
			m.Extra = map[string]any{}
		}
		m.Extra[k] = v
	}
	msg := tape.StripMeta(line)
	if err := checkMessage(msg); err != nil {
		return err
	}
	if m.Dir == tape.DirLifecycle {
		if err := out.w.Write(msg, m); err != nil {
			return err
		}
		out.servers[m.Server] = true
		out.res.Lifecycle++
		return nil
	}
	return out.message(msg, m)
}

// plainRecord writes line through the Encoder when it is a wire message
// the Encoder takes as it is (tape.Head.Plain) and its _meta holds only
// dir (send or recv), server and ts, plain strings: the line writeRecord's
// Writer would write. It reports false, writing nothing, for any other.
func plainRecord(out *out, line, metaRaw []byte, o Options) (bool, error) {
	d, srv, t, ok := plainMeta(metaRaw)
	if !ok {
		return false, nil
	}
	msg := tape.StripMeta(line)
	if !jsonscan.Valid(msg) {
		return false, nil
	}
	if h := out.peek.Peek(msg); !h.Plain || h.Kind == tape.KindInvalid {
		return false, nil
	}
	if o.Server != "" {
		srv = o.Server
	}
	return true, out.plain(msg, tape.Meta{Dir: d, Server: srv, Time: t})
}

// plainMeta reads a record's _meta that holds only dir (send or recv),
// server and ts, plain strings; ok false for any other.
func plainMeta(metaRaw []byte) (d tape.Dir, srv string, t time.Time, ok bool) {
	var dir, server, ts []byte
	n := 0
	ok = len(metaRaw) > 0 && metaRaw[0] == '{' && jsonscan.ObjectEnd(metaRaw, 0, 1, func(k, v []byte) {
		n++
		switch string(k) {
		case "dir":
			dir = v
		case "server":
			server = v
		case "ts":
			ts = v
		}
	}) == len(metaRaw)
	if !ok || n != 3 || dir == nil || server == nil || ts == nil {
		return "", "", time.Time{}, false
	}
	ds, ok1 := plainString(dir)
	srv, ok2 := plainString(server)
	when, ok3 := plainString(ts)
	if !ok1 || !ok2 || !ok3 || ds != string(tape.DirSend) && ds != string(tape.DirRecv) {
		return "", "", time.Time{}, false
	}
	t, err := parseTime(when)
	if err != nil {
		return "", "", time.Time{}, false
	}
	return tape.Dir(ds), srv, t, true
}

// serverMethods are the requests a server sends to its client.
var serverMethods = map[string]bool{"roots/list": true, "sampling/createMessage": true, "elicitation/create": true}

// skeletonRec is one record of a skeleton, before the records are sorted
// by time.
type skeletonRec struct {
	at    time.Time
	order int
	msg   []byte
	meta  tape.Meta
}

// writeSkeleton writes the MCP spans without records as requests and
// answers, in time order, each server after a $transport/start.
func writeSkeleton(format string, spans []traceSpan, out *out, o Options) error {
	// A call traced on both sides (a client span and the server span
	// under it) is one exchange: keep the client's.
	byID := map[string]*traceSpan{}
	for i := range spans {
		byID[spans[i].spanID] = &spans[i]
	}
	var recs []skeletonRec
	started := map[string]bool{}
	synthetic := 0
	for i := range spans {
		s := &spans[i]
		method := s.str("mcp.method.name")
		if method == "" {
			out.res.Skipped++
			continue
		}
		if p := byID[s.parentID]; p != nil && p.str("mcp.method.name") == method && p.str("jsonrpc.request.id") == s.str("jsonrpc.request.id") {
			out.res.Skipped++
			continue
		}
		server := s.str("tapedeck.server")
		ours := server != ""
		if server == "" {
			server = s.service
		}
		if o.Server != "" {
			server = o.Server
		}
		dir := tape.DirSend
		if ours && s.kind == "server" || !ours && serverMethods[method] {
			dir = tape.DirRecv
		}
		answerDir := tape.DirRecv
		if dir == tape.DirRecv {
			answerDir = tape.DirSend
		}
		if !started[server] {
			started[server] = true
			recs = append(recs, skeletonRec{at: s.start, order: -1, meta: tape.Meta{Dir: tape.DirLifecycle, Server: server, Time: s.start, Extra: map[string]any{"skeleton": true}},
				msg: mustJSON(map[string]any{"jsonrpc": "2.0", "method": tape.MethodStart, "params": map[string]any{"importedFrom": format, "skeleton": true}})})
		}
		if strings.HasPrefix(method, "notifications/") {
			msg := map[string]any{"jsonrpc": "2.0", "method": method}
			recs = append(recs, skeletonRec{at: s.start, order: i * 2, msg: mustJSON(msg), meta: skeletonMeta(dir, server, s.start, true)})
			continue
		}
		id := json.RawMessage(s.str("jsonrpc.request.id"))
		if len(id) == 0 {
			synthetic++
			id = json.RawMessage(fmt.Sprintf(`"span-%d"`, synthetic))
		} else if !json.Valid(id) || id[0] == '{' || id[0] == '[' {
			id = mustJSON(string(id))
		}
		params, whole := s.params(method)
		req := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
		if params != nil {
			req["params"] = params
		}
		recs = append(recs, skeletonRec{at: s.start, order: i * 2, msg: mustJSON(req), meta: skeletonMeta(dir, server, s.start, !whole)})
		if answer, whole, ok := s.answer(id); ok {
			end := s.end
			if end.Before(s.start) {
				end = s.start
			}
			recs = append(recs, skeletonRec{at: end, order: i*2 + 1, msg: answer, meta: skeletonMeta(answerDir, server, end, !whole)})
		}
	}
	sort.SliceStable(recs, func(i, j int) bool {
		if !recs[i].at.Equal(recs[j].at) {
			return recs[i].at.Before(recs[j].at)
		}
		return recs[i].order < recs[j].order
	})
	for _, r := range recs {
		var err error
		if r.meta.Dir == tape.DirLifecycle {
			err = out.w.Write(r.msg, r.meta)
			out.servers[r.meta.Server] = true
			out.res.Lifecycle++
		} else {
			err = out.message(r.msg, r.meta)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func skeletonMeta(dir tape.Dir, server string, at time.Time, skeleton bool) tape.Meta {
	m := tape.Meta{Dir: dir, Server: server, Time: at}
	if skeleton {
		m.Extra = map[string]any{"skeleton": true}
	}
	return m
}

// params are a span's request params: tapedeck's mcp.request.params, a
// tool call's gen_ai.tool.call.arguments, else only the target the span
// names; whole says they are the real ones.
func (s *traceSpan) params(method string) (p json.RawMessage, whole bool) {
	if p := s.jsonAttr("mcp.request.params"); p != nil {
		return p, true
	}
	target := ""
	for _, k := range []string{"gen_ai.tool.name", "gen_ai.prompt.name", "mcp.resource.uri"} {
		if target = s.str(k); target != "" {
			break
		}
	}
	if target == "" && strings.HasPrefix(s.name, method+" ") {
		target = strings.TrimPrefix(s.name, method+" ")
	}
	switch method {
	case "tools/call":
		if a := s.jsonAttr("gen_ai.tool.call.arguments"); a != nil {
			return mustJSON(map[string]any{"name": target, "arguments": a}), true
		}
		return mustJSON(map[string]any{"name": target}), false
	case "prompts/get":
		return mustJSON(map[string]any{"name": target}), false
	case "resources/read", "resources/subscribe", "resources/unsubscribe":
		return mustJSON(map[string]any{"uri": target}), false
	}
	return nil, false
}

// answer is a span's response: its status (tapedeck.status, error.type,
// the span's status) with the result the span carries, if any; ok is
// false for a call never answered.
func (s *traceSpan) answer(id json.RawMessage) (msg []byte, whole, ok bool) {
	status := s.str("tapedeck.status")
	errType := s.str("error.type")
	if status == "" {
		switch {
		case errType == "tool_error":
			status = "tool-error"
		case errType == "pending" || errType == "cancelled":
			status = errType
		case errType != "" || s.failed:
			status = "error"
		default:
			status = "ok"
		}
	}
	switch status {
	case "pending", "cancelled":
		return nil, false, false
	case "negotiation":
		// A server/discover an earlier server rejected: the span keeps no
		// code; "method not found" is the rejection every reader takes
		// for negotiation, as the span said it was.
		return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": -32601, "message": "server/discover rejected (version negotiation)"}}), false, true
	case "error":
		code, err := strconv.ParseInt(s.str("rpc.response.status_code"), 10, 64)
		if err != nil {
			if code, err = strconv.ParseInt(errType, 10, 64); err != nil {
				code = -32603 // the span says it failed, not how
			}
		}
		return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": s.statusMessage}}), false, true
	}
	result := s.jsonAttr("mcp.response.result")
	if result == nil {
		result = s.jsonAttr("gen_ai.tool.call.result")
	}
	if result != nil {
		return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": result}), true, true
	}
	if status == "tool-error" {
		return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{"content": []any{}, "isError": true}}), false, true
	}
	return mustJSON(map[string]any{"jsonrpc": "2.0", "id": id, "result": map[string]any{}}), false, true
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings and raw JSON checked valid
	}
	return b
}

// hexID checks a trace id given on the command line.
func hexID(id string) error {
	if b, err := hex.DecodeString(id); err != nil || len(b) != 16 && len(b) != 8 {
		return fmt.Errorf("expected a trace id of 32 hex digits, found %q", id)
	}
	return nil
}
