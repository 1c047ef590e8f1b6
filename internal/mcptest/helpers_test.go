package mcptest_test

import (
	"bytes"
	"encoding/json"
	"regexp"
	"testing"
)

// entry is what the tests read back from a tape line.
type entry struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  string          `json:"method"`
	Result  json.RawMessage `json:"result"`
	Error   json.RawMessage `json:"error"`
	Meta    struct {
		Dir    string `json:"dir"`
		Server string `json:"server"`
		TS     string `json:"ts"`
	} `json:"_meta"`
	raw map[string]json.RawMessage
}

var tsPattern = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

// checkTape checks that every line of a recorded tape is a JSON-RPC message
// with a well-formed _meta, and returns the entries.
func checkTape(t *testing.T, data []byte) []entry {
	t.Helper()
	if !bytes.HasSuffix(data, []byte("\n")) {
		t.Errorf("tape does not end with a newline")
	}
	var entries []entry
	for i, line := range bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n")) {
		var e entry
		if err := json.Unmarshal(line, &e); err != nil {
			t.Fatalf("line %d: %v: %s", i+1, err, line)
		}
		if err := json.Unmarshal(line, &e.raw); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.JSONRPC != "2.0" {
			t.Errorf("line %d: jsonrpc %q, want 2.0", i+1, e.JSONRPC)
		}
		switch e.Meta.Dir {
		case "send", "recv":
			if e.Method == "" && e.Result == nil && e.Error == nil {
				t.Errorf("line %d: neither a request, a notification nor a response: %s", i+1, line)
			}
		case "lifecycle":
			if len(e.Method) == 0 || e.Method[0] != '$' {
				t.Errorf("line %d: lifecycle method %q does not start with $", i+1, e.Method)
			}
		default:
			t.Errorf("line %d: _meta.dir %q", i+1, e.Meta.Dir)
		}
		if e.Meta.Server == "" {
			t.Errorf("line %d: no _meta.server", i+1)
		}
		if !tsPattern.MatchString(e.Meta.TS) {
			t.Errorf("line %d: _meta.ts %q is not like 2026-05-16T12:00:00.000Z", i+1, e.Meta.TS)
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		t.Fatalf("empty tape")
	}
	return entries
}

// methods lists the methods of the entries in dir, in order.
func methods(entries []entry, dir string) []string {
	var out []string
	for _, e := range entries {
		if e.Meta.Dir == dir && e.Method != "" {
			out = append(out, e.Method)
		}
	}
	return out
}
