package export

// Spans with bodies (OTLPOptions.WithBodies): what a trace store must hold
// for a tape to come back whole.
//
// A tools/call span gets the OpenTelemetry GenAI/MCP conventions' opt-in
// attributes gen_ai.tool.call.arguments (params.arguments) and
// gen_ai.tool.call.result (the result), as structured values (an OTLP
// kvlist; a store that has no structured values, like Jaeger, keeps them
// as JSON text, which the conventions allow).
//
// Every record of the tape, wire message or lifecycle record, rides on one
// span as a span event named RecordEvent whose attributes are
// tapedeck.seq (its place on the tape) and tapedeck.record (the line as it
// is on the tape, its _meta included): nothing is lost, and the importer
// puts the records back in tapedeck.seq order. Which span carries a
// record: a request and its answer, the call's; any other record (a
// notification, a server request's frames are calls of their own) the
// innermost call of its server open at that moment, else the next call of
// its server to start; records after a server's last call ride on a span
// of their own named RecordsSpan.

import (
	"errors"
	"io"
	"sort"
	"strconv"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tapedeck/tapedeck/tape"
)

// The names of what WithBodies adds.
const (
	// RecordEvent is the span event carrying one tape record.
	RecordEvent = "tapedeck.record"
	// RecordSeqAttr and RecordAttr are its attributes: the record's seq
	// on the tape and its line.
	RecordSeqAttr = "tapedeck.seq"
	RecordAttr    = "tapedeck.record"
	// RecordsSpan names the span of the records that follow a server's
	// last call.
	RecordsSpan = "tapedeck records"
)

// carried is one tape record on a span.
type carried struct {
	seq  int
	time time.Time
	line []byte
}

func (c carried) at(def time.Time) time.Time {
	if c.time.IsZero() {
		return def
	}
	return c.time
}

func (c carried) attrs() []attribute.KeyValue {
	return []attribute.KeyValue{attribute.Int(RecordSeqAttr, c.seq), attribute.String(RecordAttr, string(c.line))}
}

// carriedRecords are a tape's records by the request seq of the call whose
// span carries them; rest are those after a server's last call.
type carriedRecords struct {
	by   map[int][]carried
	rest map[string][]carried // by server
}

func (c *carriedRecords) of(req int) []carried {
	if c == nil {
		return nil
	}
	recs := c.by[req]
	delete(c.by, req)
	return recs
}

// carryRecords reads src once and assigns each record a span (see the top
// of this file). It holds the records in memory until their spans are made.
func carryRecords(src Source) (*carriedRecords, error) {
	r, err := src.Open()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	c := &carriedRecords{by: map[int][]carried{}, rest: map[string][]carried{}}
	open := map[string][]int{}        // server → its requests still unanswered, in order
	waiting := map[string][]carried{} // server → records waiting for its next call
	rd := tape.NewReader(r)
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if errors.Is(err, tape.ErrTorn) || errors.Is(err, tape.ErrMalformed) {
				continue // not a record replay or any reader uses
			}
			return nil, err
		}
		if src.Server != "" && e.Server != src.Server {
			continue
		}
		if e.Seq >= src.Index.Len() {
			break
		}
		rec := carried{seq: e.Seq, time: e.Time, line: append([]byte(nil), e.Raw...)}
		switch e.Kind {
		case tape.KindRequest:
			c.by[e.Seq] = append(append(c.by[e.Seq], waiting[e.Server]...), rec)
			delete(waiting, e.Server)
			if src.Index.Pair(e.Seq).Partner > e.Seq {
				open[e.Server] = append(open[e.Server], e.Seq)
			}
			continue
		case tape.KindResponse:
			if p := src.Index.Pair(e.Seq).Partner; p >= 0 {
				c.by[p] = append(c.by[p], rec)
				reqs := open[e.Server]
				for i, s := range reqs {
					if s == p {
						open[e.Server] = append(reqs[:i:i], reqs[i+1:]...)
						break
					}
				}
				continue
			}
		}
		if reqs := open[e.Server]; len(reqs) > 0 {
			last := reqs[len(reqs)-1]
			c.by[last] = append(c.by[last], rec)
			continue
		}
		waiting[e.Server] = append(waiting[e.Server], rec)
	}
	c.rest = waiting
	return c, nil
}

// addRecords makes a RecordsSpan for each server's records in rest.
func (t *Tracer) addRecords(rest map[string][]carried) {
	servers := make([]string, 0, len(rest))
	for s := range rest {
		servers = append(servers, s)
	}
	sort.Strings(servers)
	for _, server := range servers {
		recs := rest[server]
		if len(recs) == 0 {
			continue
		}
		t.mu.Lock()
		c := tape.Call{Server: server, Request: -1 - recs[0].seq, Start: recs[0].time, End: recs[len(recs)-1].time}
		sp := spec{name: RecordsSpan, kind: trace.SpanKindInternal, start: c.Start, end: c.End, events: recs}
		if sp.end.IsZero() {
			sp.end = sp.start
		}
		sp.trace = traceFor(t.name, c)
		sp.span = spanFor(t.name, c.Request)
		sp.attrs = []attribute.KeyValue{attribute.String("tapedeck.server", server)}
		t.emit(sp)
		t.mu.Unlock()
	}
}

// toolPayload is a tools/call's gen_ai.tool.call.arguments and result.
func toolPayload(c tape.Call) []attribute.KeyValue {
	if c.Method != "tools/call" {
		return nil
	}
	var kv []attribute.KeyValue
	if a := gjson.GetBytes(c.RequestRaw, "params.arguments"); a.Exists() {
		kv = append(kv, attribute.KeyValue{Key: "gen_ai.tool.call.arguments", Value: jsonValue(a)})
	}
	if r := gjson.GetBytes(c.ResponseRaw, "result"); r.Exists() {
		kv = append(kv, attribute.KeyValue{Key: "gen_ai.tool.call.result", Value: jsonValue(r)})
	}
	return kv
}

// jsonValueDepth is how deep jsonValue nests attribute values: below it
// a value is its JSON text. Each level's ForEach reads all the bytes under
// it, so without a bound a line of n nested brackets took n²/2 steps.
const jsonValueDepth = 64

// jsonValue is a JSON value as an attribute value: objects as maps,
// arrays as slices, integers as int64 where they fit; an object or array
// nested jsonValueDepth deep as its JSON text.
func jsonValue(r gjson.Result) attribute.Value { return jsonValueAt(r, 0) }

func jsonValueAt(r gjson.Result, depth int) attribute.Value {
	switch {
	case (r.IsObject() || r.IsArray()) && depth >= jsonValueDepth:
		return attribute.StringValue(r.Raw)
	case r.IsObject():
		var kv []attribute.KeyValue
		r.ForEach(func(k, v gjson.Result) bool {
			kv = append(kv, attribute.KeyValue{Key: attribute.Key(k.String()), Value: jsonValueAt(v, depth+1)})
			return true
		})
		return attribute.MapValue(kv...)
	case r.IsArray():
		var vs []attribute.Value
		r.ForEach(func(_, v gjson.Result) bool {
			vs = append(vs, jsonValueAt(v, depth+1))
			return true
		})
		return attribute.SliceValue(vs...)
	}
	switch r.Type {
	case gjson.String:
		return attribute.StringValue(r.String())
	case gjson.True, gjson.False:
		return attribute.BoolValue(r.Bool())
	case gjson.Number:
		if n, err := strconv.ParseInt(r.Raw, 10, 64); err == nil {
			return attribute.Int64Value(n)
		}
		return attribute.Float64Value(r.Float())
	}
	return attribute.Value{} // null
}

// bodyLimits are the SDK's span limits with bodies: no attribute cut
// short, no event dropped.
func bodyLimits() sdktrace.SpanLimits {
	return sdktrace.SpanLimits{
		AttributeValueLengthLimit:   -1,
		AttributeValueDepthLimit:    -1,
		AttributeCountLimit:         64,
		EventCountLimit:             -1,
		AttributePerEventCountLimit: 8,
		LinkCountLimit:              8,
		AttributePerLinkCountLimit:  8,
	}
}
