package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// export --format otlp --endpoint pushes a real recording to a real Jaeger
// (v2, built from its module), and Jaeger's query API gives the spans back
// with their names and attributes, the failed tool call marked.
func TestExportOTLPToJaeger(t *testing.T) {
	otlp, query := mcptest.StartJaeger(t)
	service := "tapedeck-test-" + time.Now().Format("150405.000000")
	_, errOut, code := runCLI(t, "export", fixture(t, "sdk-everything-2025-06-18.tape.jsonl"), "--format", "otlp", "--endpoint", otlp, "--service", service)
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
	deadline := time.Now().Add(20 * time.Second)
	for len(spans) < 14 && time.Now().Before(deadline) {
		resp, err := http.Get(query + "/api/traces?service=" + service)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var r struct {
				Data []struct{ Spans []span }
			}
			if json.Unmarshal(body, &r) == nil {
				spans = spans[:0]
				for _, tr := range r.Data {
					spans = append(spans, tr.Spans...)
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
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
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	rec := filepath.Join(t.TempDir(), "live.jsonl")
	out, err := exec.Command(client, "--steps=init,tools,echo,answer", "--", bin, "record", "--otlp-endpoint", otlp, "-o", rec, "--", server).CombinedOutput()
	if err != nil {
		t.Fatalf("recording: %v\n%s", err, out)
	}
	var names []string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(query + "/api/traces?service=tapedeck")
		if err != nil {
			continue
		}
		var r struct {
			Data []struct {
				Spans []struct{ OperationName string }
			}
		}
		json.NewDecoder(resp.Body).Decode(&r)
		resp.Body.Close()
		names = names[:0]
		for _, tr := range r.Data {
			for _, s := range tr.Spans {
				names = append(names, s.OperationName)
			}
		}
		if len(names) >= 4 {
			break
		}
	}
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
