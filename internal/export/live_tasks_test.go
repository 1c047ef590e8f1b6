package export

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// record --otlp-endpoint sends a task's span as export does (the same
// name, ids, parent, times and attributes), once the task reaches its
// terminal status, before the recording ends; only the polls asked after
// that are not counted (export counts 4, the live span the 3 before the
// completed notification). A task the recording ended before is sent on
// Flush as unfinished, and a failed one fails.
func TestLiveCallsTaskSpan(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "ts-everything-task.tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const name = "task.jsonl"
	const taskSpan = "task tools/call simulate-research-query"
	// live tees the lines through LiveCalls, flushing at the end or not.
	live := func(lines []string, flush bool) map[string]otlpSpan {
		var spans, out bytes.Buffer
		tr, err := NewTracer(context.Background(), &spans, name, OTLPOptions{})
		if err != nil {
			t.Fatal(err)
		}
		l := NewLiveCalls(&out, tr)
		for _, line := range lines {
			if _, err := l.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
		}
		if flush {
			l.Flush()
		}
		if _, err := tr.Close(context.Background()); err != nil {
			t.Fatal(err)
		}
		if out.String() != strings.Join(lines, "") {
			t.Error("the tape changed on its way through")
		}
		byName := map[string]otlpSpan{}
		if spans.Len() > 0 {
			for _, s := range spansOf(t, spans.String()) {
				byName[s.Name] = s
			}
		}
		return byName
	}
	var exported bytes.Buffer
	if _, err := OTLP(context.Background(), &exported, source(t, name, string(data)), OTLPOptions{}); err != nil {
		t.Fatal(err)
	}
	var want otlpSpan
	for _, s := range spansOf(t, exported.String()) {
		if s.Name == taskSpan {
			want = s
		}
	}
	lines := strings.SplitAfter(string(data), "\n")
	got, ok := live(lines, false)[taskSpan]
	if !ok {
		t.Fatalf("no task span sent before Flush: the task's terminal status did not send it")
	}
	if got.SpanID != want.SpanID || got.TraceID != want.TraceID || got.ParentSpanID != want.ParentSpanID || got.Kind != want.Kind ||
		got.StartTimeUnixNano != want.StartTimeUnixNano || got.EndTimeUnixNano != want.EndTimeUnixNano {
		t.Errorf("live task span %+v, want export's %+v", got, want)
	}
	for _, k := range []string{"mcp.task.id", "mcp.task.status", "tapedeck.server", "tapedeck.line"} {
		if got.attr(k) != want.attr(k) || got.attr(k) == "" {
			t.Errorf("live %s = %q, export's %q", k, got.attr(k), want.attr(k))
		}
	}
	if got.attr("mcp.task.polls") != "3" || want.attr("mcp.task.polls") != "4" {
		t.Errorf("mcp.task.polls live %q, export %q; want 3 (the polls before the terminal status) and 4", got.attr("mcp.task.polls"), want.attr("mcp.task.polls"))
	}

	// Cut before the completed notification: nothing until Flush, then
	// unfinished, ending at the last message about the task.
	cut := lines[:21] // up to the third "working" notification
	if _, sent := live(cut, false)[taskSpan]; sent {
		t.Error("a task still working was sent before the recording ended")
	}
	u := live(cut, true)[taskSpan]
	if u.attr("mcp.task.status") != "unfinished" || u.SpanID != want.SpanID || dur(t, u) != 3024 {
		t.Errorf("the unfinished task's span: status %q, span %s (want %s), %d ms (want 3024, to the last notification)", u.attr("mcp.task.status"), u.SpanID, want.SpanID, dur(t, u))
	}

	failed := strings.SplitAfter(strings.ReplaceAll(string(data), `"status":"completed"`, `"status":"failed"`), "\n")
	if f := live(failed, false)[taskSpan]; f.Status == nil || f.Status.Code != 2 || f.attr("error.type") != "task_failed" {
		t.Errorf("a failed task's live span: status %+v, error.type %q; want an error status and task_failed", f.Status, f.attr("error.type"))
	}
}
