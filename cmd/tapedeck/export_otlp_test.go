package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// export --format otlp --endpoint pushes a real recording to a real Jaeger
// (v2, built from its module), and Jaeger's query API gives the spans back
// with their names and attributes, the failed tool call marked. The fixture
// is exported as recorded and as a copy a year older, and Jaeger is asked
// for the time range the tape covers: the test holds on any date (Jaeger's
// default lookback is two days).
func TestExportOTLPToJaeger(t *testing.T) {
	otlp, query := mcptest.StartJaeger(t)
	src := fixture(t, "sdk-everything-2025-06-18.tape.jsonl")
	for _, age := range []time.Duration{0, 365 * 24 * time.Hour} {
		t.Run(fmt.Sprintf("aged %s", age), func(t *testing.T) {
			exportToJaeger(t, otlp, query, shiftTape(t, src, -age))
		})
	}
}

// shiftTape writes a copy of the tape at path with every _meta.ts moved by d.
func shiftTape(t *testing.T, path string, d time.Duration) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ts := regexp.MustCompile(`"ts":"([^"]+)"`)
	out := ts.ReplaceAllFunc(data, func(m []byte) []byte {
		at, err := time.Parse(time.RFC3339Nano, string(ts.FindSubmatch(m)[1]))
		if err != nil {
			t.Fatalf("%s: %q: %v", path, m, err)
		}
		return []byte(`"ts":"` + at.Add(d).UTC().Format("2006-01-02T15:04:05.000Z") + `"`)
	})
	// A name of its own: span and trace ids derive from the tape's name, and
	// Jaeger returns whole traces, so a copy named as the original would
	// share its traces with the original's export.
	copyPath := filepath.Join(t.TempDir(), fmt.Sprintf("shifted%d-%s", d/time.Hour, filepath.Base(path)))
	if err := os.WriteFile(copyPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return copyPath
}

// tapeTimeRange is the first and last _meta.ts of a tape.
func tapeTimeRange(t *testing.T, path string) (first, last time.Time) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`"ts":"([^"]+)"`).FindAllSubmatch(data, -1) {
		at, err := time.Parse(time.RFC3339Nano, string(m[1]))
		if err != nil {
			t.Fatal(err)
		}
		if first.IsZero() || at.Before(first) {
			first = at
		}
		if at.After(last) {
			last = at
		}
	}
	return first, last
}

// jaegerTraces asks Jaeger's query API for a service's traces within
// [from, to], never relying on its default lookback.
func jaegerTraces(query, service string, from, to time.Time) string {
	return fmt.Sprintf("%s/api/traces?service=%s&start=%d&end=%d&limit=100", query, service, from.UnixMicro(), to.UnixMicro())
}

func exportToJaeger(t *testing.T, otlp, query, tapePath string) {
	first, last := tapeTimeRange(t, tapePath)
	service := "tapedeck-test-" + time.Now().Format("150405.000000")
	_, errOut, code := runCLI(t, "export", tapePath, "--format", "otlp", "--endpoint", otlp, "--service", service)
	if code != 0 || !strings.Contains(errOut, "14 spans sent to "+otlp) {
		t.Fatalf("export: exit %d: %s", code, errOut)
	}
	type span struct {
		OperationName string
		Tags          []struct {
			Key   string
			Value any
		}
	}
	var spans []span
	waitFor(t, 20*time.Second, func() error {
		resp, err := http.Get(jaegerTraces(query, service, first.Add(-time.Minute), last.Add(time.Minute)))
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var r struct {
			Data []struct{ Spans []span }
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return fmt.Errorf("the query's answer is not JSON: %v", err)
		}
		spans = spans[:0]
		for _, tr := range r.Data {
			spans = append(spans, tr.Spans...)
		}
		if len(spans) < 14 {
			return fmt.Errorf("Jaeger holds %d spans", len(spans))
		}
		return nil
	}, "Jaeger to hold the tape's 14 calls as spans of service "+service)
	if len(spans) != 14 {
		t.Fatalf("Jaeger holds %d spans of service %s, want the tape's 14 calls", len(spans), service)
	}
	tag := func(s span, k string) string {
		for _, tg := range s.Tags {
			if tg.Key == k {
				b, _ := json.Marshal(tg.Value)
				return strings.Trim(string(b), `"`)
			}
		}
		return ""
	}
	var failedTool, rpcError bool
	for _, s := range spans {
		if tag(s, "mcp.method.name") == "" || tag(s, "network.transport") != "pipe" {
			t.Errorf("span %s lacks its MCP attributes: %+v", s.OperationName, s.Tags)
		}
		if s.OperationName == "tools/call no-such-tool" {
			failedTool = tag(s, "error.type") == "tool_error" && tag(s, "gen_ai.tool.name") == "no-such-tool" && tag(s, "error") == "true"
		}
		if strings.HasPrefix(s.OperationName, "resources/read") && tag(s, "error.type") == "-32602" {
			rpcError = true
		}
	}
	if !failedTool || !rpcError {
		t.Errorf("the failed calls are not marked (tool error %v, JSON-RPC error %v)", failedTool, rpcError)
	}
}

// record --otlp-endpoint streams each call to a real Jaeger as soon as it
// is answered, beside the tape.
func TestRecordOTLPLive(t *testing.T) {
	otlp, query := mcptest.StartJaeger(t)
	from := time.Now().Add(-time.Minute)
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	rec := filepath.Join(t.TempDir(), "live.jsonl")
	out, err := exec.Command(client, "--steps=init,tools,echo,answer", "--", bin, "record", "--otlp-endpoint", otlp, "-o", rec, "--", server).CombinedOutput()
	if err != nil {
		t.Fatalf("recording: %v\n%s", err, out)
	}
	var names []string
	waitFor(t, 20*time.Second, func() error {
		resp, err := http.Get(jaegerTraces(query, "tapedeck", from, time.Now().Add(time.Minute)))
		if err != nil {
			return err
		}
		var r struct {
			Data []struct {
				Spans []struct{ OperationName string }
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("the query's answer is not JSON: %v", err)
		}
		names = names[:0]
		for _, tr := range r.Data {
			for _, s := range tr.Spans {
				names = append(names, s.OperationName)
			}
		}
		if len(names) < 4 {
			return fmt.Errorf("Jaeger holds the spans %v", names)
		}
		return nil
	}, "Jaeger to hold the recording's 4 calls as spans of service tapedeck")
	got := strings.Join(names, ",")
	for _, want := range []string{"server/discover", "tools/list", "tools/call echo", "tools/call answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("Jaeger lacks the span %q: %v", want, names)
		}
	}
	if data, err := os.ReadFile(rec); err != nil || !strings.Contains(string(data), `"name":"answer"`) {
		t.Errorf("the tape: %v", err)
	}
}

// record --otlp-endpoint sends a task's span as the task ends: the
// TypeScript SDK's task client runs server-everything's research task (3
// polls) through the recorder, and Jaeger holds one "task tools/call ..."
// span with the task's terminal status, beside the calls' spans.
func TestRecordOTLPLiveTask(t *testing.T) {
	otlp, query := mcptest.StartJaeger(t)
	from := time.Now().Add(-time.Minute)
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	rec := filepath.Join(t.TempDir(), "task.jsonl")
	live := taskClient(t, append([]string{"--polls", "3", "--interval", "300", "--stdio", bin, "record", "--otlp-endpoint", otlp, "-o", rec, "--"}, mcptest.Peers(t).EverythingStdio()...)...)
	if !strings.Contains(live, "result: # Research Report") {
		t.Fatalf("the live run did not finish its task:\n%s", live)
	}
	type span struct {
		OperationName string
		Tags          []struct {
			Key   string
			Value any
		}
	}
	var task *span
	waitFor(t, 20*time.Second, func() error {
		resp, err := http.Get(jaegerTraces(query, "tapedeck", from, time.Now().Add(time.Minute)))
		if err != nil {
			return err
		}
		var r struct{ Data []struct{ Spans []span } }
		err = json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("the query's answer is not JSON: %v", err)
		}
		var names []string
		for _, tr := range r.Data {
			for i, s := range tr.Spans {
				names = append(names, s.OperationName)
				if strings.HasPrefix(s.OperationName, "task ") {
					task = &tr.Spans[i]
				}
			}
		}
		if task == nil {
			return fmt.Errorf("Jaeger holds the spans %v and no task span", names)
		}
		return nil
	}, "Jaeger to hold the recorded task's span")
	tags := map[string]string{}
	for _, tg := range task.Tags {
		tags[tg.Key] = fmt.Sprint(tg.Value)
	}
	if task.OperationName != "task tools/call simulate-research-query" || tags["mcp.task.status"] != "completed" || tags["mcp.task.id"] == "" {
		t.Errorf("the task span %q with tags %v: expected task tools/call simulate-research-query, completed, with its task id", task.OperationName, tags)
	}
}
