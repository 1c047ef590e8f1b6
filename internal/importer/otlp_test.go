package importer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// otherEmitter is OTLP JSON from an instrumented MCP client that follows
// the conventions without tapedeck's extras: an initialize span, a
// tools/call span with the opt-in payload attributes, a failed
// resources/read, and the server's span of the same tools/call under the
// client's (one exchange).
const otherEmitter = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"agent"}}]},"scopeSpans":[{"scope":{"name":"mcp"},"spans":[` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"initialize","kind":3,"startTimeUnixNano":"1767225600000000000","endTimeUnixNano":"1767225600010000000","attributes":[{"key":"mcp.method.name","value":{"stringValue":"initialize"}},{"key":"jsonrpc.request.id","value":{"stringValue":"0"}}]},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203332","name":"tools/call get_weather","kind":3,"startTimeUnixNano":"1767225601000000000","endTimeUnixNano":"1767225601500000000","attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},{"key":"jsonrpc.request.id","value":{"stringValue":"1"}},{"key":"gen_ai.tool.name","value":{"stringValue":"get_weather"}},{"key":"gen_ai.tool.call.arguments","value":{"kvlistValue":{"values":[{"key":"location","value":{"stringValue":"Paris"}}]}}},{"key":"gen_ai.tool.call.result","value":{"stringValue":"{\"content\":[{\"type\":\"text\",\"text\":\"rainy\"}]}"}}]},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"c7ad6b7169203332","parentSpanId":"b7ad6b7169203332","name":"tools/call get_weather","kind":2,"startTimeUnixNano":"1767225601100000000","endTimeUnixNano":"1767225601400000000","attributes":[{"key":"mcp.method.name","value":{"stringValue":"tools/call"}},{"key":"jsonrpc.request.id","value":{"stringValue":"1"}}]},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203333","name":"resources/read file:///x","kind":3,"startTimeUnixNano":"1767225602000000000","endTimeUnixNano":"1767225602005000000","status":{"code":2,"message":"Resource not found"},"attributes":[{"key":"mcp.method.name","value":{"stringValue":"resources/read"}},{"key":"jsonrpc.request.id","value":{"stringValue":"2"}},{"key":"mcp.resource.uri","value":{"stringValue":"file:///x"}},{"key":"error.type","value":{"stringValue":"-32002"}}]},` +
	`{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203334","name":"HTTP GET","kind":3,"startTimeUnixNano":"1767225603000000000","endTimeUnixNano":"1767225603005000000"}` +
	`]}]}]}
`

// Spans of another emitter: a skeleton of what they say, the tool call
// with the payload attributes a whole exchange, the server's span of the
// same call and the span of no MCP call skipped.
func TestImportOTLPOtherEmitter(t *testing.T) {
	var b bytes.Buffer
	res, err := Import("otlp", strings.NewReader(otherEmitter), &b, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Messages != 6 || res.Skipped != 2 || strings.Join(res.Servers, ",") != "agent" {
		t.Errorf("result %+v, want 6 messages (3 calls), 2 spans skipped, server agent", res)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 7 {
		t.Fatalf("%d records, want 7:\n%s", len(lines), b.String())
	}
	for i, want := range []struct {
		has      []string
		skeleton bool
	}{
		{[]string{`"$transport/start"`, `"importedFrom":"otlp"`}, true},
		{[]string{`"method":"initialize"`, `"id":0`}, true},
		{[]string{`"id":0`, `"result":{}`}, true},
		{[]string{`"method":"tools/call"`, `"arguments":{"location":"Paris"}`, `"name":"get_weather"`}, false},
		{[]string{`"text":"rainy"`}, false},
		{[]string{`"method":"resources/read"`, `"uri":"file:///x"`}, true},
		{[]string{`"code":-32002`, `"message":"Resource not found"`}, true},
	} {
		for _, h := range want.has {
			if !strings.Contains(lines[i], h) {
				t.Errorf("record %d lacks %s: %s", i, h, lines[i])
			}
		}
		if got := tape.Skeleton([]byte(lines[i])); got != want.skeleton {
			t.Errorf("record %d: skeleton %v, want %v: %s", i, got, want.skeleton, lines[i])
		}
	}
}

// An input that is not OTLP JSON is refused with its line.
func TestImportOTLPErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"", "found none"},
		{`{"resourceSpans":[]}` + "\n" + `{"resourceSpans":` + "\n", "otlp: line 2"},
		{"not json\n", "otlp: line 1"},
	} {
		_, err := Import("otlp", strings.NewReader(c.in), &bytes.Buffer{}, Options{})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want an error with %q", c.in, err, c.want)
		}
	}
}

func FuzzImportOTLP(f *testing.F) {
	f.Add([]byte(otherEmitter))
	f.Add([]byte(`{"resourceSpans":[{"resource":{"attributes":[{"key":"tapedeck.tape","value":{"stringValue":"t"}}]},"scopeSpans":[{"spans":[{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"ping","events":[{"name":"tapedeck.record","attributes":[{"key":"tapedeck.seq","value":{"intValue":"0"}},{"key":"tapedeck.record","value":{"stringValue":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"_meta\":{\"dir\":\"send\",\"server\":\"s\",\"ts\":\"2026-01-01T00:00:00.000Z\"}}"}}]}],"attributes":[{"key":"mcp.method.name","value":{"stringValue":"ping"}}]}]}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkFuzzResult(t, "otlp", data)
	})
}

func FuzzImportJaeger(f *testing.F) {
	f.Add([]byte(`{"data":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spans":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"b7ad6b7169203331","operationName":"tools/call x","references":[],"startTime":1767225601000000,"duration":5000,"tags":[{"key":"mcp.method.name","type":"string","value":"tools/call"},{"key":"jsonrpc.request.id","type":"string","value":"1"},{"key":"span.kind","type":"string","value":"client"},{"key":"gen_ai.tool.call.arguments","type":"string","value":"{\"a\":1}"}],"logs":[{"timestamp":1767225601000000,"fields":[{"key":"event","type":"string","value":"tapedeck.record"},{"key":"tapedeck.seq","type":"int64","value":0},{"key":"tapedeck.record","type":"string","value":"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"_meta\":{\"dir\":\"send\",\"server\":\"s\",\"ts\":\"2026-01-01T00:00:00.000Z\"}}"}]}],"processID":"p1"}],"processes":{"p1":{"serviceName":"svc","tags":[{"key":"tapedeck.tape","type":"string","value":"t"}]}}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		spans, err := jaegerSpans(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if _, err := writeSpans("jaeger", spans, tape.NewWriter(&b), Options{}); err != nil {
			return
		}
		for _, line := range strings.Split(strings.TrimSpace(b.String()), "\n") {
			if line != "" && len(tape.Classify([]byte(line))) == 0 {
				t.Fatalf("a line no reader classifies: %s", line)
			}
		}
	})
}
