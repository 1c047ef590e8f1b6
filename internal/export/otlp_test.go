package export

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
)

const otlpTape = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"c","version":"1"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:00.000Z"}}
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25","capabilities":{},"serverInfo":{"name":"s","version":"1"}},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:00.010Z"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search","arguments":{"q":"secret"},"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:01.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"isError":true,"content":[{"type":"text","text":"no index"}]},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:01.250Z"}}
{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x"},"_meta":{"dir":"send","server":"s","ts":"2026-01-01T00:00:02.000Z"}}
{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"Resource not found"},"_meta":{"dir":"recv","server":"s","ts":"2026-01-01T00:00:02.005Z"}}
`

type otlpSpan struct {
	TraceID, SpanID, ParentSpanID, Name string
	StartTimeUnixNano, EndTimeUnixNano  string
	Kind                                int
	Attributes                          []struct {
		Key   string
		Value map[string]any
	}
	Status *struct {
		Code    int
		Message string
	}
}

func (s otlpSpan) attr(k string) string {
	for _, a := range s.Attributes {
		if a.Key == k {
			for _, v := range a.Value {
				return strings.Trim(strings.TrimSpace(toString(v)), `"`)
			}
		}
	}
	return ""
}

func toString(v any) string { b, _ := json.Marshal(v); return string(b) }

func spansOf(t *testing.T, out string) []otlpSpan {
	t.Helper()
	var spans []otlpSpan
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var req struct {
			ResourceSpans []struct {
				ScopeSpans []struct{ Spans []otlpSpan }
			}
		}
		if err := json.Unmarshal([]byte(line), &req); err != nil {
			t.Fatalf("not OTLP JSON: %v\n%s", err, line)
		}
		for _, rs := range req.ResourceSpans {
			for _, ss := range rs.ScopeSpans {
				spans = append(spans, ss.Spans...)
			}
		}
	}
	return spans
}

// A span a call after the MCP semantic conventions, with the recorded
// times; a traceparent parents its call; error.type says how a call
// failed; params and results only when asked.
func TestOTLPSpans(t *testing.T) {
	var b bytes.Buffer
	n, err := OTLP(context.Background(), &b, source(t, "t.jsonl", otlpTape), OTLPOptions{})
	if err != nil || n != 3 {
		t.Fatalf("OTLP: %d spans, %v", n, err)
	}
	spans := spansOf(t, b.String())
	byName := map[string]otlpSpan{}
	for _, s := range spans {
		byName[s.Name] = s
	}
	call, ok := byName["tools/call search"]
	if !ok {
		t.Fatalf("no span named \"tools/call search\": %+v", spans)
	}
	for k, want := range map[string]string{
		"mcp.method.name": "tools/call", "gen_ai.tool.name": "search", "gen_ai.operation.name": "execute_tool",
		"error.type": "tool_error", "jsonrpc.request.id": "1", "mcp.protocol.version": "2025-11-25", "network.transport": "pipe",
	} {
		if got := call.attr(k); got != want {
			t.Errorf("tools/call %s = %q, want %q", k, got, want)
		}
	}
	if call.TraceID != "4bf92f3577b34da6a3ce929d0e0e4736" || call.ParentSpanID != "00f067aa0ba902b7" {
		t.Errorf("the call with a traceparent: trace %s parent %s", call.TraceID, call.ParentSpanID)
	}
	if call.StartTimeUnixNano != "1767225601000000000" || call.EndTimeUnixNano != "1767225601250000000" || call.Status == nil || call.Status.Code != 2 {
		t.Errorf("times %s-%s, status %+v", call.StartTimeUnixNano, call.EndTimeUnixNano, call.Status)
	}
	read := byName["resources/read file:///x"]
	if read.attr("error.type") != "-32002" || read.attr("rpc.response.status_code") != "-32002" || read.TraceID != byName["initialize"].TraceID || read.ParentSpanID != "" {
		t.Errorf("resources/read: %+v", read)
	}
	if strings.Contains(b.String(), "secret") {
		t.Error("params went out without --with-bodies")
	}
	b.Reset()
	if _, err := OTLP(context.Background(), &b, source(t, "t.jsonl", otlpTape), OTLPOptions{WithBodies: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "secret") || !strings.Contains(b.String(), "no index") {
		t.Error("--with-bodies left the params or the result out")
	}
}
