package export

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
)

const bodiesTape = `{"jsonrpc":"2.0","method":"$transport/start","params":{"command":["srv"]},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
` + otlpTape + `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"slow","arguments":{"n":2},"_meta":{"progressToken":7}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:03.000Z"}}
{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:03.100Z"}}
{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"done"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:03.200Z"}}
{"jsonrpc":"2.0","method":"$transport/close","params":{"code":0},"_meta":{"dir":"lifecycle","server":"s","ts":"2026-01-01T00:00:04.000Z"}}
`

type bodySpan struct {
	Name       string
	Attributes []struct {
		Key   string
		Value json.RawMessage
	}
	Events []struct {
		Name       string
		Attributes []struct {
			Key   string
			Value struct {
				StringValue string
				IntValue    string
			}
		}
	}
}

// With bodies every record of the tape rides on a span as an event with
// its line, a progress notification on its call's span, the records after
// the last call on a span of their own; a tool call's arguments and result
// are structured (kvlist) attributes.
func TestOTLPWithBodiesCarriesEveryRecord(t *testing.T) {
	var b bytes.Buffer
	n, err := OTLP(context.Background(), &b, source(t, "t.jsonl", bodiesTape), OTLPOptions{WithBodies: true})
	if err != nil || n != 5 {
		t.Fatalf("OTLP: %d spans (want 4 calls and the records span), %v", n, err)
	}
	var spans []bodySpan
	for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct{ Spans []bodySpan }
			}
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatal(err)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	lines := strings.Split(strings.TrimSpace(bodiesTape), "\n")
	got := map[string]string{}
	var seqs []string
	carriedBy := map[string]string{}
	for _, s := range spans {
		for _, e := range s.Events {
			if e.Name != RecordEvent {
				t.Errorf("event %q on %s", e.Name, s.Name)
			}
			var seq, rec string
			for _, a := range e.Attributes {
				switch a.Key {
				case RecordSeqAttr:
					seq = a.Value.IntValue
				case RecordAttr:
					rec = a.Value.StringValue
				}
			}
			got[seq] = rec
			seqs = append(seqs, seq)
			carriedBy[rec] = s.Name
		}
	}
	if len(got) != len(lines) || len(seqs) != len(lines) {
		t.Fatalf("%d records carried (%d distinct), want the tape's %d", len(seqs), len(got), len(lines))
	}
	sort.Strings(seqs)
	for i, l := range lines {
		if rec := got[itoa(i)]; rec != l {
			t.Errorf("record %d carried as %q, want %q", i, rec, l)
		}
	}
	if by := carriedBy[lines[8]]; by != "tools/call slow" {
		t.Errorf("the progress notification rides on %q, want its call's span", by)
	}
	if by := carriedBy[lines[0]]; by != "initialize" {
		t.Errorf("$transport/start rides on %q, want the first call's span", by)
	}
	if by := carriedBy[lines[10]]; by != RecordsSpan {
		t.Errorf("$transport/close rides on %q, want %q", by, RecordsSpan)
	}
	for _, s := range spans {
		if s.Name != "tools/call slow" {
			continue
		}
		attrs := map[string]string{}
		for _, a := range s.Attributes {
			attrs[a.Key] = string(a.Value)
		}
		if a := attrs["gen_ai.tool.call.arguments"]; !strings.Contains(a, `"kvlistValue"`) || !strings.Contains(a, `"n"`) {
			t.Errorf("gen_ai.tool.call.arguments = %s, want a kvlist with n", a)
		}
		if r := attrs["gen_ai.tool.call.result"]; !strings.Contains(r, `"kvlistValue"`) || !strings.Contains(r, `"done"`) {
			t.Errorf("gen_ai.tool.call.result = %s, want a kvlist with the content", r)
		}
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// record --otlp-with-bodies carries every record too, as the tape is
// written: the records after the last call go out on Flush.
func TestLiveCallsWithBodiesCarryEveryRecord(t *testing.T) {
	var spansOut, tapeOut bytes.Buffer
	tr, err := NewTracer(context.Background(), &spansOut, "live", OTLPOptions{WithBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	l := NewLiveCalls(&tapeOut, tr)
	for _, line := range strings.SplitAfter(bodiesTape, "\n") {
		if _, err := l.Write([]byte(line)); err != nil {
			t.Fatal(err)
		}
	}
	l.Flush()
	if _, err := tr.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if tapeOut.String() != bodiesTape {
		t.Errorf("the tape changed on its way through")
	}
	for i, line := range strings.Split(strings.TrimSpace(bodiesTape), "\n") {
		q, _ := json.Marshal(line)
		if !bytes.Contains(spansOut.Bytes(), q) {
			t.Errorf("record %d is on no span: %s", i, line)
		}
	}
}

// TestJSONValueDepth: a tool's arguments nested deeper than
// jsonValueDepth become nested attribute values down to that depth and
// their JSON text below it: each level's ForEach reads all that lies
// under it, so a hostile line of a million brackets took hours.
func TestJSONValueDepth(t *testing.T) {
	const depth = 3 * jsonValueDepth
	raw := strings.Repeat(`[`, depth) + `{"k":"v"}` + strings.Repeat(`]`, depth)
	v := jsonValue(gjson.Parse(raw))
	levels := 0
	for v.Type() == attribute.SLICE {
		s := v.AsSlice()
		if len(s) != 1 {
			t.Fatalf("level %d holds %d values, expected 1", levels, len(s))
		}
		v, levels = s[0], levels+1
	}
	want := strings.Repeat(`[`, depth-jsonValueDepth) + `{"k":"v"}` + strings.Repeat(`]`, depth-jsonValueDepth)
	if levels != jsonValueDepth || v.Type() != attribute.STRING || v.AsString() != want {
		t.Errorf("%d levels of slices, then %v %.80q; expected %d, then the rest as its JSON text %.80q", levels, v.Type(), v.Emit(), jsonValueDepth, want)
	}
	shallow := jsonValue(gjson.Parse(`{"a":[1,{"b":true}]}`))
	if m := shallow.AsMap(); shallow.Type() != attribute.MAP || len(m) != 1 || m[0].Value.Type() != attribute.SLICE || m[0].Value.AsSlice()[1].Type() != attribute.MAP {
		t.Errorf("a shallow object is %v %s, expected maps and slices", shallow.Type(), shallow.Emit())
	}
}
