package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// export --format json: every request of a real recording once, with its
// answer's status and the JSON-RPC error, the stats and the warnings.
func TestExportJSON(t *testing.T) {
	path := fixture(t, "sdk-everything-2025-06-18.tape.jsonl")
	out, errOut, code := runCLI(t, "export", path, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var doc struct {
		Tape  string `json:"tape"`
		Calls []struct {
			Request, Response int
			Method, Target    string
			Status            string
			ErrorCode         *int64 `json:"errorCode"`
			RequestMessage    json.RawMessage
		} `json:"calls"`
		Stats    tape.Stats        `json:"stats"`
		Warnings []json.RawMessage `json:"warnings"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("not JSON: %v\n%.500s", err, out)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	requests := 0
	for i := range x.Len() {
		if x.Entry(i).Kind == tape.KindRequest {
			requests++
		}
	}
	status := map[string]int{}
	for _, c := range doc.Calls {
		status[c.Status]++
		if c.Status == "error" && (c.ErrorCode == nil || *c.ErrorCode == 0) {
			t.Errorf("call #%d: an error without its code", c.Request)
		}
		if !strings.Contains(string(c.RequestMessage), `"method":"`+c.Method+`"`) {
			t.Errorf("call #%d: request message %s is not its %s", c.Request, c.RequestMessage, c.Method)
		}
	}
	if len(doc.Calls) != requests || status["tool-error"] != 1 || status["error"] != 1 || doc.Stats.Messages != x.Len() || doc.Tape == "" {
		t.Errorf("%d calls for %d requests, statuses %v, stats of %d messages", len(doc.Calls), requests, status, doc.Stats.Messages)
	}
	if _, errOut, code := runCLI(t, "export", path, "--format", "pdf"); code != 1 || !strings.Contains(errOut, "expected one of json") {
		t.Errorf("an unknown format: exit %d, %q", code, errOut)
	}
}
