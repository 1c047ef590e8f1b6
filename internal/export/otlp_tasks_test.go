package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A task is one span, "task {its call}", a child of the call that created
// it, lasting from the call to the status notification that said
// completed (4.026 s; the call took 17 ms); a failed task's span fails.
func TestOTLPTaskSpan(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	export := func(data string) map[string]otlpSpan {
		var b bytes.Buffer
		if _, err := OTLP(context.Background(), &b, source(t, "task.jsonl", data), OTLPOptions{}); err != nil {
			t.Fatal(err)
		}
		byName := map[string]otlpSpan{}
		for _, s := range spansOf(t, b.String()) {
			if _, dup := byName[s.Name]; !dup || !strings.HasPrefix(s.Name, "tasks/") {
				byName[s.Name] = s
			}
		}
		return byName
	}
	spans := export(string(data))
	call, task := spans["tools/call simulate-research-query"], spans["task tools/call simulate-research-query"]
	if task.SpanID == "" {
		t.Fatalf("no task span: %v", spans)
	}
	if task.ParentSpanID != call.SpanID || task.TraceID != call.TraceID {
		t.Errorf("task span parent %s trace %s, want the call's span %s in its trace %s", task.ParentSpanID, task.TraceID, call.SpanID, call.TraceID)
	}
	if task.StartTimeUnixNano != call.StartTimeUnixNano || dur(t, task) != 4026 || dur(t, call) != 17 {
		t.Errorf("task %d ms from %s, call %d ms from %s; want 4026 ms and 17 ms from the same start", dur(t, task), task.StartTimeUnixNano, dur(t, call), call.StartTimeUnixNano)
	}
	if task.attr("mcp.task.status") != "completed" || task.attr("mcp.task.polls") != "4" || task.attr("mcp.task.id") != "916ed7c84114e1db46d77615081358fa" || (task.Status != nil && task.Status.Code == 2) {
		t.Errorf("task span attributes %+v status %+v", task.Attributes, task.Status)
	}

	failed := strings.ReplaceAll(string(data), `"status":"completed"`, `"status":"failed"`)
	if task := export(failed)["task tools/call simulate-research-query"]; task.Status == nil || task.Status.Code != 2 || task.attr("error.type") != "task_failed" {
		t.Errorf("a failed task's span: status %+v, error.type %q; want an error status and task_failed", task.Status, task.attr("error.type"))
	}
}

// dur is a span's length in milliseconds.
func dur(t *testing.T, s otlpSpan) int64 {
	t.Helper()
	var a, b int64
	for _, p := range []struct {
		s string
		v *int64
	}{{s.StartTimeUnixNano, &a}, {s.EndTimeUnixNano, &b}} {
		for _, c := range p.s {
			*p.v = *p.v*10 + int64(c-'0')
		}
	}
	return (b - a) / 1e6
}
