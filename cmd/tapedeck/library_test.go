package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// libraryTape is a session of the client "claude-code" with a tool that
// failed (isError) and a JSON-RPC error; day names its date.
func libraryTape(day, word string) string {
	return strings.ReplaceAll(strings.ReplaceAll(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"claude-code","version":"2.1.0"}},"_meta":{"dir":"send","server":"billing","ts":"DAYT10:00:00.000Z"}}
{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{}},"_meta":{"dir":"recv","server":"billing","ts":"DAYT10:00:00.100Z"}}
{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"create_invoice","arguments":{"customer":"WORD"}},"_meta":{"dir":"send","server":"billing","ts":"DAYT10:00:01.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"card declined for WORD"}],"isError":true},"_meta":{"dir":"recv","server":"billing","ts":"DAYT10:00:02.000Z"}}
{"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///ledger"},"_meta":{"dir":"send","server":"billing","ts":"DAYT10:00:03.000Z"}}
{"jsonrpc":"2.0","id":2,"error":{"code":-32002,"message":"ledger locked"},"_meta":{"dir":"recv","server":"billing","ts":"DAYT10:00:03.500Z"}}
`, "DAY", day), "WORD", word)
}

// libraryState points XDG_STATE_HOME at a fresh directory and returns the
// directory tapedeck record writes to.
func libraryState(t *testing.T) string {
	t.Helper()
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	tapes := filepath.Join(state, "tapedeck", "tapes")
	if err := os.MkdirAll(tapes, 0o700); err != nil {
		t.Fatal(err)
	}
	return tapes
}

func putTape(t *testing.T, dir, name, content string, mtime time.Time) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestLsSearchPrune(t *testing.T) {
	tapes := libraryState(t)
	recent := time.Now().Add(-2 * time.Hour)
	today := recent.UTC().Format("2006-01-02")
	old := putTape(t, tapes, "old.jsonl", libraryTape("2025-01-10", "acme"), time.Date(2025, 1, 10, 11, 0, 0, 0, time.UTC))
	fresh := putTape(t, tapes, "fresh.jsonl", libraryTape(today, "globex"), recent)
	putTape(t, tapes, "junk.jsonl", "\x00\x01 not a tape", recent)
	other := t.TempDir()
	elsewhere := putTape(t, other, "elsewhere.ndjson", libraryTape("2025-06-01", "initech"), time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC))

	out, errOut, code := runCLI(t, "ls")
	if code != 0 || !strings.Contains(errOut, "building it") {
		t.Fatalf("ls: exit %d, stderr %q", code, errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "START") || !strings.HasSuffix(lines[1], fresh) || !strings.HasSuffix(lines[2], old) {
		t.Fatalf("ls, newest first, junk left out:\n%s", out)
	}
	for _, want := range []string{"3.5s", "billing", "claude-code 2.1.0", "2 (1 tool)"} {
		if !strings.Contains(lines[1], want) {
			t.Errorf("ls row lacks %q: %s", want, lines[1])
		}
	}

	// ls DIR adds it for good and lists it alone.
	out, _, code = runCLI(t, "ls", other)
	if code != 0 || !strings.Contains(out, elsewhere) || strings.Contains(out, fresh) {
		t.Errorf("ls DIR: exit %d\n%s", code, out)
	}
	out, errOut, code = runCLI(t, "ls", "--json")
	var listed []struct {
		Path       string `json:"path"`
		Client     string `json:"client"`
		Protocol   string `json:"protocol_version"`
		Calls      int    `json:"calls"`
		Errors     int    `json:"errors"`
		ToolErrors int    `json:"tool_errors"`
	}
	if err := json.Unmarshal([]byte(out), &listed); err != nil || code != 0 || errOut != "" {
		t.Fatalf("ls --json: %v, exit %d, stderr %q\n%s", err, code, errOut, out)
	}
	if len(listed) != 3 || listed[1].Path != elsewhere || listed[0].Protocol != "2025-06-18" || listed[0].Calls != 3 || listed[0].Errors != 1 || listed[0].ToolErrors != 1 {
		t.Errorf("ls --json: %+v", listed)
	}

	// search: hits as TAPE:SEQ with a snippet.
	out, _, code = runCLI(t, "search", "declined", "--tool", "create_invoice")
	if code != 0 || strings.Count(out, "\n") != 3 || !strings.Contains(out, fresh+":3") || !strings.Contains(out, "card »declined« for globex") || !strings.Contains(out, "tool-error") {
		t.Errorf("search: exit %d\n%s", code, out)
	}
	out, _, _ = runCLI(t, "search", "ledger", "--status", "rpc-error", "--since", "1d", "--json")
	var hits []struct {
		Path    string `json:"path"`
		Seq     int    `json:"seq"`
		Method  string `json:"method"`
		Snippet string `json:"snippet"`
	}
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) != 2 || hits[0].Path != fresh || hits[0].Seq != 5 || hits[1].Seq != 4 || hits[0].Snippet != "»ledger« locked" || hits[0].Method != "resources/read" {
		t.Errorf("search --json: %v %+v", err, hits)
	}
	if out, errOut, code = runCLI(t, "search", "nowhere-to-be-found"); code != 0 || out != "" || !strings.Contains(errOut, "no message matches") {
		t.Errorf("no hits: exit %d %q %q", code, out, errOut)
	}
	if _, errOut, code = runCLI(t, "search", "x", "--since", "last tuesday"); code == 0 || !strings.Contains(errOut, "expected an age") {
		t.Errorf("bad --since: exit %d %q", code, errOut)
	}
	if _, errOut, code = runCLI(t, "search", ""); code == 0 || !strings.Contains(errOut, "expected words") {
		t.Errorf("empty search: exit %d %q", code, errOut)
	}

	// prune: --dry-run says, then the tapes go; junk and fresh tapes stay.
	out, _, code = runCLI(t, "prune", "--older-than", "30d", "--dry-run")
	if code != 0 || !strings.Contains(out, "would remove "+old) || !strings.Contains(out, "would remove "+elsewhere) || !strings.Contains(out, "would remove 2 tapes") {
		t.Errorf("prune --dry-run: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(old); err != nil {
		t.Fatal("--dry-run removed a tape")
	}
	out, _, code = runCLI(t, "prune", "--older-than", "2025-07-01", other)
	if code != 0 || strings.Contains(out, old) || !strings.Contains(out, "removed "+elsewhere) {
		t.Errorf("prune DIR: exit %d\n%s", code, out)
	}
	out, _, code = runCLI(t, "prune", "--older-than", "30d")
	if code != 0 || !strings.Contains(out, "removed "+old) || !strings.Contains(out, "removed 1 tape,") {
		t.Errorf("prune: exit %d\n%s", code, out)
	}
	for p, want := range map[string]bool{old: false, elsewhere: false, fresh: true, filepath.Join(tapes, "junk.jsonl"): true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s exists: %v, want %v", p, err == nil, want)
		}
	}
	out, _, _ = runCLI(t, "ls")
	if strings.Count(out, "\n") != 2 || !strings.Contains(out, fresh) {
		t.Errorf("ls after prune:\n%s", out)
	}
	if _, errOut, code = runCLI(t, "prune"); code == 0 || !strings.Contains(errOut, "--older-than") {
		t.Errorf("prune without --older-than: exit %d %q", code, errOut)
	}
}

// A damaged index is rebuilt with a note; a state directory that cannot
// be written gives an index in memory with a note. Neither fails.
func TestLibraryIndexTrouble(t *testing.T) {
	tapes := libraryState(t)
	putTape(t, tapes, "a.jsonl", libraryTape("2025-01-10", "acme"), time.Now().Add(-time.Hour))
	db := filepath.Join(filepath.Dir(tapes), "index.db")
	if err := os.WriteFile(db, []byte(strings.Repeat("garbage ", 1000)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runCLI(t, "ls")
	if code != 0 || !strings.Contains(errOut, "rebuilding it") || !strings.Contains(out, "a.jsonl") {
		t.Errorf("corrupt index: exit %d, stderr %q\n%s", code, errOut, out)
	}

	blocked := filepath.Join(t.TempDir(), "state")
	if err := os.WriteFile(blocked, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XDG_STATE_HOME", blocked) // no directory can be made under a file
	other := t.TempDir()
	putTape(t, other, "b.jsonl", libraryTape("2025-01-10", "acme"), time.Now().Add(-time.Hour))
	out, errOut, code = runCLI(t, "search", "acme", "--json")
	if code != 0 || !strings.Contains(errOut, "index in memory") || out != "[]\n" {
		t.Errorf("unwritable state: exit %d, stderr %q\n%s", code, errOut, out)
	}
	out, errOut, code = runCLI(t, "ls", other)
	if code != 0 || !strings.Contains(errOut, "index in memory") || !strings.Contains(out, "b.jsonl") {
		t.Errorf("unwritable state, ls DIR: exit %d, stderr %q\n%s", code, errOut, out)
	}
}

func TestLibraryHelp(t *testing.T) {
	for _, c := range []string{"ls", "search", "prune"} {
		out, _, code := runCLI(t, c, "--help")
		if code != 0 || !strings.Contains(out, "Examples:\n  tapedeck "+c) {
			t.Errorf("%s --help: exit %d\n%s", c, code, out)
		}
	}
	out, _, _ := runCLI(t, "open", "--help")
	if !strings.Contains(out, "session.jsonl:120") {
		t.Errorf("open --help does not teach TAPE:SEQ:\n%s", out)
	}
}

// open TAPE:SEQ, as search prints hits: the tape at message SEQ, unless a
// file is named so.
func TestSplitSeq(t *testing.T) {
	dir := t.TempDir()
	tp := filepath.Join(dir, "s.jsonl")
	odd := filepath.Join(dir, "odd.jsonl:7")
	os.WriteFile(tp, []byte(session), 0o600)
	os.WriteFile(odd, []byte(session), 0o600)
	for _, tc := range []struct {
		in   string
		path string
		seq  int
		ok   bool
	}{
		{tp + ":12", tp, 12, true},
		{tp + ":0", tp, 0, true},
		{tp, tp, 0, false},
		{odd, odd, 0, false},
		{tp + ":-1", tp + ":-1", 0, false},
		{tp + ":x", tp + ":x", 0, false},
		{filepath.Join(dir, "missing.jsonl:3"), filepath.Join(dir, "missing.jsonl:3"), 0, false},
	} {
		path, seq, ok := splitSeq(tc.in)
		if path != tc.path || seq != tc.seq || ok != tc.ok {
			t.Errorf("splitSeq(%q) = %q, %d, %v; want %q, %d, %v", tc.in, path, seq, ok, tc.path, tc.seq, tc.ok)
		}
	}
}
