package export

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tapedeck/tapedeck/tape"
)

// Task spans: a task (2025-11-25) is one span, "task {creating call}",
// from its creation to its terminal status, a child of the call that
// created it, in that call's trace; its polls and result stay spans of
// their own. A task that ended failed or cancelled has an error status.

// taskSpans indexes the tasks of src's tape (of src.Server, if set) by
// their creating request, for the tracer to find as it makes that call's
// span.
func taskSpans(src Source) map[int]tape.Task {
	tasks := map[int]tape.Task{}
	for _, t := range tape.Tasks(src.Index) {
		if (src.Server == "" || t.Server == src.Server) && t.Create >= 0 {
			tasks[t.Create] = t
		}
	}
	return tasks
}

// taskSpec builds the span of task tk, created by call c whose span is
// parent.
func (t *Tracer) taskSpec(tk tape.Task, c tape.Call, parent spec) spec {
	sp := spec{name: "task " + parent.name, kind: trace.SpanKindServer, start: tk.Start, end: tk.End, trace: parent.trace, parent: parent.span}
	if tk.Runner == tape.DirSend {
		sp.kind = trace.SpanKindClient // the client ran it for the server
	}
	if sp.end.IsZero() || sp.end.Before(sp.start) {
		sp.end = sp.start
	}
	sp.span = taskSpanFor(t.name, tk.Create)
	status := tk.Status
	if !tape.TerminalStatus(status) {
		status = "unfinished"
	}
	sp.attrs = append(sp.attrs,
		attribute.String("mcp.task.id", tk.ID),
		attribute.String("mcp.task.status", status),
		attribute.Int("mcp.task.polls", len(tk.Polls)),
		attribute.String("tapedeck.server", tk.Server),
		attribute.Int("tapedeck.line", c.Line),
	)
	if tk.Failed() {
		sp.attrs = append(sp.attrs, attribute.String("error.type", "task_"+tk.Status))
		sp.failed, sp.message = true, fmt.Sprintf("the task ended %s", tk.Status)
	}
	return sp
}

// taskSpanFor is the span id of the task created by request seq, apart
// from the request's own (spanFor).
func taskSpanFor(tapeName string, seq int) trace.SpanID {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(seq))
	h := sha256.Sum256(append([]byte("tapedeck-task\x00"+tapeName+"\x00"), b[:]...))
	var id trace.SpanID
	copy(id[:], h[:8])
	return id
}
