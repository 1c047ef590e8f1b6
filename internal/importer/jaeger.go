package importer

// Jaeger's query API (v1 JSON, which Jaeger v2 serves too):
// GET /api/traces/{id}, and GET /api/traces?service=S&start=&end=&limit=
// with start and end always given (microseconds since the epoch), never
// Jaeger's default lookback. A span's tags are its attributes (a
// structured value comes back as JSON text), its logs its events (the
// event's name under "event"), span.kind and otel.status_code its kind and
// status.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// JaegerQuery says which traces to read.
type JaegerQuery struct {
	Service string    // the service.name the spans were sent under
	Trace   string    // one trace id; empty: the service's traces between Start and End
	Start   time.Time // the window of the service's traces
	End     time.Time
	Limit   int // traces at most; 0 is 1000
}

// JaegerContext is Jaeger writing the tape to w as ImportContext writes
// every other format's (microseconds kept, buffered), so that a span's
// microsecond times reach the tape.
func JaegerContext(ctx context.Context, client *http.Client, base string, q JaegerQuery, w io.Writer, o Options) (Result, error) {
	return writeTape(ctx, "jaeger", w, 0, func(tw *tape.Writer, _ *tapeSink) (Result, error) { return Jaeger(ctx, client, base, q, tw, o) })
}

// Jaeger imports the traces q names from the Jaeger query API at base
// (http://host:16686).
func Jaeger(ctx context.Context, client *http.Client, base string, q JaegerQuery, w *tape.Writer, o Options) (Result, error) {
	if q.Trace != "" {
		if err := hexID(q.Trace); err != nil {
			return Result{}, &Error{Format: "jaeger", Err: err}
		}
	} else {
		if q.Service == "" {
			return Result{}, &Error{Format: "jaeger", Err: errors.New("expected a service (--service) or a trace id (--trace)")}
		}
		if q.Start.IsZero() || q.End.Before(q.Start) {
			return Result{}, &Error{Format: "jaeger", Err: fmt.Errorf("expected a time window with its start before its end, found %s to %s", q.Start, q.End)}
		}
	}
	base = strings.TrimRight(base, "/")
	var u string
	if q.Trace != "" {
		u = base + "/api/traces/" + url.PathEscape(q.Trace)
	} else {
		limit := q.Limit
		if limit <= 0 {
			limit = 1000
		}
		v := url.Values{}
		v.Set("service", q.Service)
		v.Set("start", strconv.FormatInt(q.Start.UnixMicro(), 10))
		v.Set("end", strconv.FormatInt(q.End.UnixMicro(), 10))
		v.Set("limit", strconv.Itoa(limit))
		u = base + "/api/traces?" + v.Encode()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Result{}, &Error{Format: "jaeger", Err: err}
	}
	resp, err := client.Do(req)
	if err != nil {
		return Result{}, &Error{Format: "jaeger", Err: err}
	}
	defer resp.Body.Close()
	body, err := readBody(resp, 1<<30)
	if err != nil {
		return Result{}, &Error{Format: "jaeger", Err: fmt.Errorf("reading %s: %w", u, err)}
	}
	if resp.StatusCode != http.StatusOK {
		return Result{}, &Error{Format: "jaeger", Err: fmt.Errorf("GET %s: expected 200 OK, found %s: %s", u, resp.Status, quoteStart(body))}
	}
	spans, err := jaegerSpansWith(body, o)
	if err != nil {
		return Result{}, err
	}
	if len(spans) == 0 {
		what := "trace " + q.Trace
		if q.Trace == "" {
			what = fmt.Sprintf("service %q between %s and %s", q.Service, q.Start.UTC().Format(time.RFC3339), q.End.UTC().Format(time.RFC3339))
		}
		return Result{}, &Error{Format: "jaeger", Err: fmt.Errorf("expected spans of %s, found none", what)}
	}
	return writeSpans("jaeger", spans, w, o)
}

type jaegerKV struct {
	Key   string          `json:"key"`
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// jaegerSpans reads the query API's answer: in one pass (jaegerscan.go),
// or, when it is not in the shape that reads, with jaegerDecode.
func jaegerSpans(body []byte) ([]traceSpan, error) {
	return jaegerSpansWith(body, Options{})
}

// jaegerSpansWith is jaegerSpans with the fast path's spans on
// o.lineWorkers() cores.
func jaegerSpansWith(body []byte, o Options) ([]traceSpan, error) {
	if spans, ok := scanJaegerWith(body, o); ok {
		return spans, nil
	}
	return jaegerDecode(body)
}

// jaegerDecode reads the query API's answer with encoding/json.
func jaegerDecode(body []byte) ([]traceSpan, error) {
	var doc struct {
		Data []struct {
			Spans []struct {
				TraceID       string `json:"traceID"`
				SpanID        string `json:"spanID"`
				OperationName string `json:"operationName"`
				References    []struct {
					RefType string `json:"refType"`
					SpanID  string `json:"spanID"`
				} `json:"references"`
				StartTime int64      `json:"startTime"`
				Duration  int64      `json:"duration"`
				Tags      []jaegerKV `json:"tags"`
				Logs      []struct {
					Fields []jaegerKV `json:"fields"`
				} `json:"logs"`
				ProcessID string `json:"processID"`
			} `json:"spans"`
			Processes map[string]struct {
				ServiceName string     `json:"serviceName"`
				Tags        []jaegerKV `json:"tags"`
			} `json:"processes"`
		} `json:"data"`
		Errors []struct {
			Msg string `json:"msg"`
		} `json:"errors"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		return nil, syntaxError("jaeger", body, err)
	}
	if len(doc.Errors) > 0 && len(doc.Data) == 0 {
		return nil, &Error{Format: "jaeger", Err: fmt.Errorf("the query API answered an error: %s", doc.Errors[0].Msg)}
	}
	var out []traceSpan
	for ti, tr := range doc.Data {
		for si, s := range tr.Spans {
			path := fmt.Sprintf("$.data[%d].spans[%d]", ti, si)
			ts := traceSpan{
				traceID: s.TraceID, spanID: s.SpanID, name: s.OperationName,
				start: time.UnixMicro(s.StartTime).UTC(), end: time.UnixMicro(s.StartTime + s.Duration).UTC(),
				attrs: map[string]any{},
			}
			for _, r := range s.References {
				if r.RefType == "CHILD_OF" {
					ts.parentID = r.SpanID
				}
			}
			p := tr.Processes[s.ProcessID]
			ts.service = p.ServiceName
			for _, kv := range p.Tags {
				if kv.Key == "tapedeck.tape" {
					ts.tape, _ = kvValue(kv).(string)
				}
			}
			for _, kv := range s.Tags {
				v := kvValue(kv)
				switch kv.Key {
				case "span.kind":
					ts.kind, _ = v.(string)
				case "otel.status_code":
					ts.failed = v == "ERROR"
				case "otel.status_description":
					ts.statusMessage, _ = v.(string)
				default:
					ts.attrs[kv.Key] = v
				}
			}
			for li, l := range s.Logs {
				var name, line string
				var seq int64 = -1
				for _, f := range l.Fields {
					switch f.Key {
					case "event":
						name, _ = kvValue(f).(string)
					case recordAttr:
						line, _ = kvValue(f).(string)
					case recordSeqAttr:
						if n, ok := kvValue(f).(int64); ok {
							seq = n
						}
					}
				}
				if name != recordEvent {
					continue
				}
				if seq < 0 || line == "" {
					return nil, &Error{Format: "jaeger", Path: fmt.Sprintf("%s.logs[%d]", path, li), Err: fmt.Errorf("expected a %s event with %s and %s, found one without", recordEvent, recordSeqAttr, recordAttr)}
				}
				ts.records = append(ts.records, carriedRecord{seq: seq, line: line})
			}
			out = append(out, ts)
		}
	}
	return out, nil
}

// kvValue is a tag's value: int64 for int64 tags, float64, bool, string.
func kvValue(kv jaegerKV) any {
	switch kv.Type {
	case "int64":
		var n json.Number
		if json.Unmarshal(kv.Value, &n) == nil {
			if i, err := n.Int64(); err == nil {
				return i
			}
		}
		var s string
		if json.Unmarshal(kv.Value, &s) == nil {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i
			}
		}
	case "float64":
		var f float64
		if json.Unmarshal(kv.Value, &f) == nil {
			return f
		}
	case "bool":
		var b bool
		if json.Unmarshal(kv.Value, &b) == nil {
			return b
		}
	}
	var s string
	if json.Unmarshal(kv.Value, &s) == nil {
		return s
	}
	return string(kv.Value)
}
