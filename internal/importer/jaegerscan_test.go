package importer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
)

// jaegerAnswer writes Jaeger's query API answer (v1 JSON: a trace a data
// entry, tags typed, structured values as JSON text, span events as logs,
// the kind and status as span.kind and otel.status_* tags) for the spans
// of `export --format otlp` of the tape at src (bodies when asked), to dst.
func jaegerAnswer(tb testing.TB, src, dst string, bodies bool) {
	otlp := dst + ".otlp"
	otlpExportWith(tb, src, otlp, bodies)
	defer os.Remove(otlp)
	b, err := os.ReadFile(otlp)
	if err != nil {
		tb.Fatal(err)
	}
	type kv struct {
		Key   string `json:"key"`
		Type  string `json:"type"`
		Value any    `json:"value"`
	}
	tags := func(m pcommon.Map) []kv {
		var out []kv
		m.Range(func(k string, v pcommon.Value) bool {
			switch v.Type() {
			case pcommon.ValueTypeInt:
				out = append(out, kv{k, "int64", v.Int()})
			case pcommon.ValueTypeDouble:
				out = append(out, kv{k, "float64", v.Double()})
			case pcommon.ValueTypeBool:
				out = append(out, kv{k, "bool", v.Bool()})
			default:
				out = append(out, kv{k, "string", v.AsString()})
			}
			return true
		})
		return out
	}
	type trace struct {
		TraceID   string           `json:"traceID"`
		Spans     []map[string]any `json:"spans"`
		Processes map[string]any   `json:"processes"`
		Warnings  any              `json:"warnings"`
	}
	var order []string
	traces := map[string]*trace{}
	var u ptrace.JSONUnmarshaler
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		td, err := u.UnmarshalTraces(line)
		if err != nil {
			tb.Fatal(err)
		}
		for i := 0; i < td.ResourceSpans().Len(); i++ {
			rs := td.ResourceSpans().At(i)
			svc, _ := rs.Resource().Attributes().Get("service.name")
			for j := 0; j < rs.ScopeSpans().Len(); j++ {
				ss := rs.ScopeSpans().At(j).Spans()
				for k := 0; k < ss.Len(); k++ {
					s := ss.At(k)
					tid := s.TraceID().String()
					tr := traces[tid]
					if tr == nil {
						tr = &trace{TraceID: tid, Processes: map[string]any{"p1": map[string]any{"serviceName": svc.AsString(), "tags": tags(rs.Resource().Attributes())}}}
						traces[tid] = tr
						order = append(order, tid)
					}
					t := tags(s.Attributes())
					switch s.Kind() {
					case ptrace.SpanKindClient:
						t = append(t, kv{"span.kind", "string", "client"})
					case ptrace.SpanKindServer:
						t = append(t, kv{"span.kind", "string", "server"})
					}
					if s.Status().Code() == ptrace.StatusCodeError {
						t = append(t, kv{"otel.status_code", "string", "ERROR"}, kv{"otel.status_description", "string", s.Status().Message()})
					}
					var logs []map[string]any
					for e := 0; e < s.Events().Len(); e++ {
						ev := s.Events().At(e)
						logs = append(logs, map[string]any{"timestamp": ev.Timestamp().AsTime().UnixMicro(), "fields": append([]kv{{"event", "string", ev.Name()}}, tags(ev.Attributes())...)})
					}
					var refs []map[string]any
					if !s.ParentSpanID().IsEmpty() {
						refs = append(refs, map[string]any{"refType": "CHILD_OF", "traceID": tid, "spanID": s.ParentSpanID().String()})
					}
					start := s.StartTimestamp().AsTime().UnixMicro()
					tr.Spans = append(tr.Spans, map[string]any{"traceID": tid, "spanID": s.SpanID().String(), "flags": 1, "operationName": s.Name(),
						"references": refs, "startTime": start, "duration": s.EndTimestamp().AsTime().UnixMicro() - start, "tags": t, "logs": logs, "processID": "p1", "warnings": nil})
				}
			}
		}
	}
	data := make([]*trace, 0, len(order))
	for _, id := range order {
		data = append(data, traces[id])
	}
	f, err := os.Create(dst)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	if err := json.NewEncoder(w).Encode(map[string]any{"data": data, "total": 0, "limit": 0, "offset": 0, "errors": nil}); err != nil {
		tb.Fatal(err)
	}
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	f.Close()
}

// agreeJaeger checks that the fast path, where it takes body, reads the
// spans jaegerDecode reads, and reports whether it took it.
func agreeJaeger(t *testing.T, body []byte) bool {
	t.Helper()
	fast, ok := scanJaeger(body)
	if !ok {
		return false
	}
	slow, err := jaegerDecode(body)
	if err != nil {
		t.Fatalf("the fast path took an answer jaegerDecode refuses (%v): %.300s", err, body)
	}
	norm := func(spans []traceSpan) []traceSpan {
		for i := range spans {
			if err := spans[i].decodeAttrs(); err != nil {
				t.Fatal(err)
			}
			for j, r := range spans[i].records {
				spans[i].records[j] = carriedRecord{seq: r.seq, line: string(r.text(nil))}
			}
		}
		return spans
	}
	if a, b := norm(fast), norm(slow); !reflect.DeepEqual(a, b) {
		t.Fatalf("fast path and jaegerDecode disagree on %.300s:\nfast %+v\nslow %+v", body, a, b)
	}
	return true
}

// The fast path reads what encoding/json reads from Jaeger's answers for
// every tape in testdata (with bodies and without) and takes them all;
// shapes it does not take go to jaegerDecode.
func TestJaegerScanAgrees(t *testing.T) {
	tapes, _ := filepath.Glob("../../testdata/*.tape.jsonl")
	hostile, _ := filepath.Glob("../../testdata/hostile/*.tape.jsonl")
	tapes = append(tapes, hostile...)
	if len(tapes) < 10 {
		t.Fatalf("%d tapes in testdata", len(tapes))
	}
	dst := filepath.Join(t.TempDir(), "answer.json")
	for _, src := range tapes {
		for _, bodies := range []bool{true, false} {
			jaegerAnswer(t, src, dst, bodies)
			b, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			if !agreeJaeger(t, b) {
				t.Errorf("%s (bodies %v): the fast path did not take %.300s", src, bodies, b)
			}
		}
	}
	esc := `{"data":[{"spans":[{"traceID":"a","spanID":"b","startTime":-5,"duration":3,"processID":"p","logs":[null,{"fields":[{"key":"event","type":"string","value":"tapedeck.record"},{"key":"tapedeck.seq","type":"int64","value":7},{"key":"tapedeck.record","type":"string","value":"x\"\\\/\b\f\n\r\t\u0001\ud83d\ude00\ud83dz\ud83d\\\u00e9` + "\xff\xe9" + `"}]}],"tags":[{"key":"k","type":"string","value":null},{"key":"k2","type":"int64","value":"12"},{"key":"span.kind","type":"string","value":"server"},{"key":"k3"}]},null],"processes":{"p":{"serviceName":"s","tags":[{"key":"tapedeck.tape","type":"string","value":"t"},{"key":"tapedeck.tape","type":"string","value":"u"}]}}}],"errors":null}`
	if !agreeJaeger(t, []byte(esc)) {
		t.Error("the fast path did not take escapes, nulls and odd tags")
	}
	for _, s := range []string{
		`{"data":[],"errors":[{"msg":"x"}]}`,
		`{"Data":[]}`,
		`{"data":[{"spans":[{"TraceID":"a"}]}]}`,
		`{"data":[{"spans":[{"startTime":1.5}]}]}`,
		`{"data":[{"spans":[{"logs":[{"fields":[{"key":"event","type":"string","value":"tapedeck.record"}]}]}]}]}`,
		`{"data":[]}{}`,
	} {
		if _, ok := scanJaeger([]byte(s)); ok {
			t.Errorf("the fast path took %s", s)
		}
	}
}

// Whatever answer the fast path takes, encoding/json reads the same spans
// from.
func FuzzJaegerScan(f *testing.F) {
	f.Add([]byte(`{"data":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spans":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"b7ad6b7169203331","operationName":"tools/call x","references":[{"refType":"CHILD_OF","spanID":"c"}],"startTime":1767225601000000,"duration":5000,"tags":[{"key":"mcp.method.name","type":"string","value":"tools/call"},{"key":"otel.status_code","type":"string","value":"ERROR"}],"logs":[{"timestamp":1,"fields":[{"key":"event","type":"string","value":"tapedeck.record"},{"key":"tapedeck.seq","type":"int64","value":0},{"key":"tapedeck.record","type":"string","value":"{\"a\":\"\u00e9\"}"}]}],"processID":"p1"}],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"tapedeck.tape","type":"string","value":"t"}]}}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		agreeJaeger(t, body)
	})
}
