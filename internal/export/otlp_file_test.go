package export

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tapedeck/tapedeck/tape"
)

// The OTLP file writer as it was, through the collector's data model and
// its JSON marshaler: what otlpFile is held to.

func newPdataFile(w io.Writer, service, tapeName string) *pdataFile {
	f := &pdataFile{w: bufio.NewWriterSize(w, 1<<16), service: service, tape: tapeName}
	f.reset()
	return f
}

// pdataFile writes spans as OTLP JSON with the collector's data model. A
// full batch is marshalled and written by a goroutine of its own while the
// next is built (one a core).
type pdataFile struct {
	w       *bufio.Writer
	service string
	tape    string
	td      ptrace.Traces
	spans   ptrace.SpanSlice
	count   int
	err     error

	batches chan ptrace.Traces
	done    chan error
}

// write marshals and writes the batches it is given, a line each.
func (f *pdataFile) write() {
	var m ptrace.JSONMarshaler
	var err error
	for td := range f.batches {
		if err != nil {
			continue
		}
		var b []byte
		if b, err = m.MarshalTraces(td); err == nil {
			f.w.Write(b)
			err = f.w.WriteByte('\n')
		}
	}
	if err == nil {
		err = f.w.Flush()
	}
	f.done <- err
}

func (f *pdataFile) reset() {
	f.td = ptrace.NewTraces()
	rs := f.td.ResourceSpans().AppendEmpty()
	rs.Resource().Attributes().PutStr("service.name", f.service)
	rs.Resource().Attributes().PutStr("tapedeck.tape", f.tape)
	ss := rs.ScopeSpans().AppendEmpty()
	ss.Scope().SetName("github.com/tapedeck/tapedeck")
	f.spans = ss.Spans()
	f.count = 0
}

func (f *pdataFile) add(sp spec) {
	s := f.spans.AppendEmpty()
	s.SetTraceID(pcommon.TraceID(sp.trace))
	s.SetSpanID(pcommon.SpanID(sp.span))
	if sp.parent.IsValid() {
		s.SetParentSpanID(pcommon.SpanID(sp.parent))
	}
	s.SetName(sp.name)
	if sp.kind == trace.SpanKindServer {
		s.SetKind(ptrace.SpanKindServer)
	} else if sp.kind == trace.SpanKindInternal {
		s.SetKind(ptrace.SpanKindInternal)
	} else {
		s.SetKind(ptrace.SpanKindClient)
	}
	s.SetStartTimestamp(pcommon.NewTimestampFromTime(sp.start))
	s.SetEndTimestamp(pcommon.NewTimestampFromTime(sp.end))
	attrs := s.Attributes()
	attrs.EnsureCapacity(len(sp.attrs))
	for _, a := range sp.attrs {
		putValue(attrs.PutEmpty(string(a.Key)), a.Value)
	}
	for _, ev := range sp.events {
		e := s.Events().AppendEmpty()
		e.SetName(RecordEvent)
		e.SetTimestamp(pcommon.NewTimestampFromTime(ev.at(sp.start)))
		for _, a := range ev.attrs() {
			putValue(e.Attributes().PutEmpty(string(a.Key)), a.Value)
		}
	}
	if sp.failed {
		s.Status().SetCode(ptrace.StatusCodeError)
		s.Status().SetMessage(sp.message)
	}
	if f.count++; f.count == 4096 {
		f.flush(false)
	}
}

// flush hands the batch to the writer (an ExportTraceServiceRequest a
// line); the last flush waits for it.
func (f *pdataFile) flush(last bool) error {
	if f.batches == nil {
		f.batches, f.done = make(chan ptrace.Traces, 2), make(chan error, 1)
		go f.write()
	}
	if f.count > 0 {
		f.batches <- f.td
		f.reset()
	}
	if last {
		close(f.batches)
		f.err = <-f.done
		return f.err
	}
	return nil
}

// putValue sets a pdata value from an attribute value.
func putValue(p pcommon.Value, v attribute.Value) {
	switch v.Type() {
	case attribute.BOOL:
		p.SetBool(v.AsBool())
	case attribute.INT64:
		p.SetInt(v.AsInt64())
	case attribute.FLOAT64:
		p.SetDouble(v.AsFloat64())
	case attribute.STRING:
		p.SetStr(v.AsString())
	case attribute.MAP:
		m := p.SetEmptyMap()
		for _, kv := range v.AsMap() {
			putValue(m.PutEmpty(string(kv.Key)), kv.Value)
		}
	case attribute.SLICE:
		s := p.SetEmptySlice()
		for _, e := range v.AsSlice() {
			putValue(s.AppendEmpty(), e)
		}
	case attribute.EMPTY:
	default:
		p.SetStr(v.Emit())
	}
}

// otlpBoth exports src to OTLP JSON with the hand writer and with the
// collector's marshaler.
func otlpBoth(t *testing.T, src Source, o OTLPOptions) (got, want []byte) {
	t.Helper()
	var g, w bytes.Buffer
	ng, err := OTLP(context.Background(), &g, src, o)
	if err != nil {
		t.Fatalf("%s: %v", src.Name, err)
	}
	tr, err := NewTracer(context.Background(), &w, src.Name, o)
	if err != nil {
		t.Fatal(err)
	}
	tr.file = newPdataFile(&w, "tapedeck", src.Name)
	if o.Service != "" {
		tr.file = newPdataFile(&w, o.Service, src.Name)
	}
	nw, err := tr.export(context.Background(), src)
	if err != nil {
		t.Fatalf("%s: %v", src.Name, err)
	}
	if ng != nw {
		t.Fatalf("%s: %d spans, the collector's writer %d", src.Name, ng, nw)
	}
	return g.Bytes(), w.Bytes()
}

func firstDifference(t *testing.T, name string, got, want []byte) {
	t.Helper()
	if bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(want) && i < len(got) && want[i] == got[i] {
		i++
	}
	t.Fatalf("%s: the OTLP JSON differs from the collector marshaler's at byte %d of %d:\nexpected …%s\nfound    …%s", name, i, len(want), want[max(0, i-120):min(len(want), i+80)], got[max(0, i-120):min(len(got), i+80)])
}

// otlpFile writes what the collector's ptrace.JSONMarshaler writes, on every
// fixture tape with and without bodies, and over several batches.
func TestOTLPFileAgrees(t *testing.T) {
	for _, src := range fixtureSources(t) {
		for _, o := range []OTLPOptions{{}, {WithBodies: true, Service: "svc \"q\""}} {
			got, want := otlpBoth(t, src, o)
			firstDifference(t, src.Name, got, want)
			if len(want) == 0 && src.Index.Len() > 3 {
				t.Fatalf("%s: no spans written", src.Name)
			}
		}
	}
}

// The values the tapes lack: each attribute type, duplicate keys (the
// first place, the last value), an empty key, floats NaN, infinite and in
// exponent form, control bytes, invalid UTF-8, U+2028, HTML characters,
// zero ids and times, events with and without times.
func TestOTLPFileValues(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	attrs := []attribute.KeyValue{
		attribute.String("s", "a\"b\\c\x00\x1f\x7f\b\f\n\r\t<>&\u2028\xff é"),
		attribute.Bool("t", true), attribute.Bool("f", false),
		attribute.Int64("i", -42), attribute.Float64("x", 1.5), attribute.Float64("nan", math.NaN()),
		attribute.Float64("inf", math.Inf(1)), attribute.Float64("-inf", math.Inf(-1)), attribute.Float64("tiny", 1e-9), attribute.Float64("huge", 2e21), attribute.Float64("zero", 0),
		{Key: "empty", Value: attribute.Value{}}, {Key: "", Value: attribute.StringValue("no key")},
		attribute.String("s", "again"),
		{Key: "map", Value: attribute.MapValue(attribute.String("b", "1"), attribute.Int("a", 2), attribute.String("b", "3"))},
		{Key: "emptymap", Value: attribute.MapValue()}, {Key: "emptyslice", Value: attribute.SliceValue()},
		{Key: "slice", Value: attribute.SliceValue(attribute.IntValue(1), attribute.MapValue(attribute.Bool("k", true)), attribute.SliceValue(attribute.StringValue("x")))},
		attribute.StringSlice("strings", []string{"a", "b"}),
	}
	var long []attribute.KeyValue
	for i := range 40 {
		long = append(long, attribute.Int(string(rune('a'+i%20)), i))
	}
	attrs = append(attrs, attribute.KeyValue{Key: "longmap", Value: attribute.MapValue(long...)})
	specs := []spec{
		{name: "all", kind: trace.SpanKindClient, attrs: attrs, start: t0, end: t0.Add(time.Second), trace: trace.TraceID{1}, span: trace.SpanID{2}, parent: trace.SpanID{3}, failed: true, message: "m\n"},
		{name: "", kind: trace.SpanKindServer, start: time.Unix(0, 0), failed: true},
		{name: "ev", kind: trace.SpanKindInternal, start: t0, end: t0, span: trace.SpanID{9}, attrs: long, events: []carried{{seq: 1, line: []byte(`{"a":"\u2028"}`)}, {seq: 2, time: t0.Add(time.Millisecond), line: []byte("x\x01")}}},
		{name: "zero", events: []carried{{seq: 0}}},
	}
	for _, sp := range specs {
		var g, w bytes.Buffer
		hf, pf := newOTLPFile(&g, "s<", "t\u2028"), newPdataFile(&w, "s<", "t\u2028")
		for range 3 {
			hf.add(sp)
			pf.add(sp)
		}
		if err := hf.flush(true); err != nil {
			t.Fatal(err)
		}
		if err := pf.flush(true); err != nil {
			t.Fatal(err)
		}
		firstDifference(t, sp.name, g.Bytes(), w.Bytes())
	}
	// Batches: a line each otlpBatch spans, none for an empty file.
	var g, w bytes.Buffer
	hf, pf := newOTLPFile(&g, "s", "t"), newPdataFile(&w, "s", "t")
	for i := range 2*otlpBatch + 3 {
		sp := spec{name: "n", start: t0.Add(time.Duration(i)), span: trace.SpanID{byte(i)}}
		hf.add(sp)
		pf.add(sp)
	}
	hf.flush(true)
	pf.flush(true)
	firstDifference(t, "batches", g.Bytes(), w.Bytes())
	if n := strings.Count(g.String(), "\n"); n != 3 {
		t.Fatalf("expected 3 lines for %d spans, found %d", 2*otlpBatch+3, n)
	}
	g.Reset()
	if err := newOTLPFile(&g, "s", "t").flush(true); err != nil || g.Len() != 0 {
		t.Fatalf("expected nothing written without spans, found %q (%v)", g.String(), err)
	}
}

// appendCallAttrs writes what appendOTLPAttrs writes of callAttrs' list,
// for every call of the recorded tapes and of a synthetic one, and for
// calls of every kind, status and transport with strings to escape.
func TestCallAttrsAgree(t *testing.T) {
	var calls []tape.Call
	paths, _ := filepath.Glob("../../testdata/*.jsonl")
	synth := filepath.Join(t.TempDir(), "synth.jsonl")
	if _, err := tape.WriteSynth(synth, tape.SynthOptions{Messages: 3000, Seed: 9, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	for _, p := range append(paths, synth) {
		x, err := tape.OpenIndex(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		err = readCalls(f, x, "", tape.CallOptions{Lean: true}, func(c tape.Call) error { calls = append(calls, c); return nil }, nil)
		f.Close()
		x.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(calls) < 1000 {
		t.Fatalf("read %d calls from %d tapes, expected more", len(calls), len(paths)+1)
	}
	odd := "a\"b\\c\n\x01\x7f\xff é"
	for _, m := range []string{"tools/call", "prompts/get", "resources/read", "ping", odd} {
		for _, st := range []string{"ok", "error", "tool-error", "pending", "cancelled", "late", "challenged", "negotiation", odd} {
			calls = append(calls,
				tape.Call{Method: m, Status: st, Server: odd, Target: odd, ID: tape.ID(`"` + odd + `"`), Session: odd, HTTP: true, Line: 1 << 40, ErrorCode: -32601},
				tape.Call{Method: m, Status: st, ErrorCode: math.MinInt64})
		}
	}
	tr := &Tracer{}
	for i, c := range calls {
		for _, version := range []string{"", "2025-11-25", odd} {
			want := appendOTLPAttrs(nil, tr.callAttrs(c, version))
			if got := appendCallAttrs(nil, c, version); !bytes.Equal(got, want) {
				t.Fatalf("call %d (%s %s, status %s):\n got %s\nwant %s", i, c.Method, c.Target, c.Status, got, want)
			}
		}
	}
}
