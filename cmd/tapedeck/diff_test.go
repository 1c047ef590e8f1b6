package main

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// diff of two sessions recorded through tapedeck record from the go-sdk
// server before and after a change to one tool's description and its
// result and its input schema (sdkserver variants A and C): exactly those differences, nothing
// else, and --exit-code fails.
func TestDiffBeforeAfter(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	server := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	dir := t.TempDir()
	record := func(variant string) string {
		path := filepath.Join(dir, variant+".jsonl")
		out, err := exec.Command(client, "--steps=init,tools,echo,answer", "--", bin, "record", "-o", path, "--", "env", "SDKSERVER_VARIANT="+variant, server).CombinedOutput()
		if err != nil {
			t.Fatalf("recording variant %s: %v\n%s", variant, err, out)
		}
		return path
	}
	before, after := record("A"), record("C")
	out, errOut, code := runCLI(t, "diff", "--latency-ratio", "1000", before, after)
	if code != 0 {
		t.Fatalf("diff: exit %d: %s", code, errOut)
	}
	want := `A BEFORE
B AFTER

server sdkserver: 4 calls in A, 4 in B, 4 aligned; 3 differences
  ~ tool answer changed
      /description: "Returns the answer (changes with --variant)" → "Returns the answer, revised (variant C)"
      /inputSchema/properties: (absent) → {"detail":{"description":"explain the answer","type":"boolean"}}
  ~ #3 ↔ #3 tools/list: answer changed
      /result/tools/1/description: "Returns the answer (changes with --variant)" → "Returns the answer, revised (variant C)"
      /result/tools/1/inputSchema/properties: (absent) → {"detail":{"description":"explain the answer","type":"boolean"}}
  ~ #7 ↔ #7 tools/call answer: answer changed
      /result/content/0/text: "the answer is 42" → "the answer is 43"

3 differences
`
	got := strings.NewReplacer(before, "BEFORE", after, "AFTER").Replace(out)
	if got != want {
		t.Errorf("diff report:\n%s\nwant:\n%s", got, want)
	}
	if _, _, code := runCLI(t, "diff", "--exit-code", "--latency-ratio", "1000", before, after); code != 1 {
		t.Errorf("--exit-code on differing sessions: exit %d, want 1", code)
	}
	if out, _, code := runCLI(t, "diff", "--exit-code", "--latency-ratio", "1000", before, before); code != 0 || !strings.Contains(out, "the sessions do not differ") {
		t.Errorf("a session against itself: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "diff", "--json", "--latency-ratio", "1000", before, after)
	var r struct {
		Servers []struct {
			Definitions []struct{ Kind, Name, Change string }
			Calls       []struct{ Kind string }
		}
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || len(r.Servers) != 1 || len(r.Servers[0].Definitions) != 1 || r.Servers[0].Definitions[0].Name != "answer" || len(r.Servers[0].Calls) != 2 {
		t.Errorf("--json: %v\n%s", err, out)
	}
}

// Alignment survives a call inserted and one left out: the rest still
// pair, and each is reported once.
func TestDiffAlignment(t *testing.T) {
	line := func(dir, msg string) string {
		return msg[:len(msg)-1] + `,"_meta":{"dir":"` + dir + `","server":"s","ts":"2026-01-01T00:00:00.000Z"}}` + "\n"
	}
	call := func(id, name, arg string) string {
		return line("send", `{"jsonrpc":"2.0","id":`+id+`,"method":"tools/call","params":{"name":"`+name+`","arguments":{"x":"`+arg+`"}}}`) +
			line("recv", `{"jsonrpc":"2.0","id":`+id+`,"result":{"content":[{"type":"text","text":"`+name+arg+`"}]}}`)
	}
	a := call("1", "one", "a") + call("2", "two", "a") + call("3", "three", "a") + call("4", "four", "a")
	b := call("1", "one", "a") + call("2", "new", "a") + call("3", "two", "a") + call("4", "four", "b")
	pa, pb := writeFile(t, "a.jsonl", a), writeFile(t, "b.jsonl", b)
	out, errOut, code := runCLI(t, "diff", pa, pb)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, want := range []string{
		"server s: 4 calls in A, 4 in B, 2 aligned; 3 differences",
		"+ only in B: #2 tools/call new",
		"- only in A: #4 tools/call three",
		"~ #6 ↔ #6 tools/call four: params changed\n      /arguments/x: \"a\" → \"b\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the report lacks %q:\n%s", want, out)
		}
	}
}
