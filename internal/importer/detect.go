package importer

import (
	"bytes"
	"encoding/json"
)

// Detect tells which format Import reads a file in from its first bytes
// (a few kilobytes are enough; a head cut anywhere is fine): the top-level
// members of the first JSON object in it. It reports false for anything
// else, a tape included (a tape's lines are JSON-RPC messages, which none
// of the formats is).
//
//	mcpsnoop      a line {"session_id", "direction", ...}
//	gh-aw         a line {"timestamp", "type", "server_id", "payload", ...}
//	har           {"log": ...}
//	agent-vcr     {"format_version", "metadata", "session"}
//	mcp-recorder  {"version", "metadata", "interactions"}
//	inspector     [{"id", "timestamp", "direction", "origin", "message", ...}, ...]
func Detect(head []byte) (format string, ok bool) {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	keys := topKeys(head)
	switch {
	case len(keys) == 0 && inspectorHead(head):
		return formatInspector, true
	case keys["jsonrpc"] || keys["_meta"]:
		return "", false
	case keys["session_id"] && keys["direction"]:
		return formatMCPSnoop, true
	case keys["server_id"] && (keys["payload"] || keys["type"]):
		return formatGHAW, true
	case keys["log"]:
		return formatHAR, true
	case keys["format_version"]:
		return formatAgentVCR, true
	case keys["interactions"], keys["version"] && keys["metadata"]:
		return formatMCPRecorder, true
	}
	return "", false
}

// Describe names what a file in format is, for a sentence: "an mcpsnoop
// log".
func Describe(format string) string {
	switch format {
	case formatMCPSnoop:
		return "an mcpsnoop log"
	case formatHAR:
		return "a HAR file"
	case "otlp":
		return "an OTLP JSON trace export"
	case formatGHAW:
		return "a GitHub Agentic Workflows gateway log (rpc-messages.jsonl)"
	case formatAgentVCR:
		return "an agent-vcr recording"
	case formatMCPRecorder:
		return "an mcp-recorder cassette"
	case formatInspector:
		return "an MCP Inspector history export"
	}
	return "a " + format + " file"
}

// topKeys returns the member names of the JSON object head starts with, as
// far as head goes; none when head does not start with an object.
func topKeys(head []byte) map[string]bool {
	keys := map[string]bool{}
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return keys
	}
	for {
		t, err := dec.Token()
		if err != nil {
			return keys
		}
		k, ok := t.(string)
		if !ok {
			return keys // the closing brace
		}
		keys[k] = true
		if skipValue(dec) != nil {
			return keys
		}
	}
}

// skipValue reads one value, nested ones whole.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		t, err := dec.Token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}
