package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// traceFixtures are real recordings of the go-sdk client with
// server-everything (stdio and Streamable HTTP) and the client's flags.
var traceFixtures = []struct {
	name  string
	flags []string
}{
	{"sdk-everything-2025-06-18", []string{"--name", "everything", "--protocol", "2025-06-18"}},
	{"sdk-everything-http", []string{"--name", "everything", "--roots"}},
}

// replayImported serves the imported tape to the go-sdk client with the
// server gone: it must print what it printed live.
func replayImported(t *testing.T, tapedeck, client, imported, transcript string, flags []string) {
	t.Helper()
	want, err := os.ReadFile(fixture(t, transcript+".transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := runPeer(t, nil, append(append([]string{client}, flags...), "--", tapedeck, "replay", imported)...)
	if err != nil || got != string(want) {
		t.Fatalf("replay of the imported tape (%v):\n%s\nlive:\n%s\nstderr:\n%s", err, got, want, stderr)
	}
}

// A session exported as OTLP JSON with --with-bodies and imported back
// replays to the same client with its live transcript.
func TestImportOTLPFileReplays(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	for _, c := range traceFixtures {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			otlp := filepath.Join(dir, "spans.json")
			if _, errOut, code := runCLI(t, "export", fixture(t, c.name+".tape.jsonl"), "--format", "otlp", "--with-bodies", "-o", otlp); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errOut)
			}
			imported := filepath.Join(dir, "imported.jsonl")
			if _, errOut, code := runCLI(t, "import", "--from", "otlp", otlp, "-o", imported); code != 0 {
				t.Fatalf("import: exit %d: %s", code, errOut)
			}
			sameRecords(t, fixture(t, c.name+".tape.jsonl"), imported)
			replayImported(t, tapedeck, client, imported, c.name, c.flags)
		})
	}
}

// sameRecords checks that the imported tape holds the original's records,
// message bytes and _meta members alike, in order.
func sameRecords(t *testing.T, orig, imported string) {
	t.Helper()
	a, _ := os.ReadFile(orig)
	b, _ := os.ReadFile(imported)
	la := strings.Split(strings.TrimSpace(string(a)), "\n")
	lb := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(la) != len(lb) {
		t.Fatalf("the imported tape has %d records, the original %d", len(lb), len(la))
	}
	meta := regexp.MustCompile(`,"_meta":\{[^{}]*(\{[^{}]*\}[^{}]*)*\}\}$`)
	for i := range la {
		if ma, mb := meta.ReplaceAllString(la[i], "}"), meta.ReplaceAllString(lb[i], "}"); ma != mb {
			t.Errorf("record %d:\n got %s\nwant %s", i, mb, ma)
		}
	}
}

// The round trip through a real Jaeger: the session exported with
// --with-bodies to Jaeger's OTLP endpoint, imported back from its query
// API, replays to the same client with the server gone, with the
// transcript of the live run.
func TestImportJaegerReplays(t *testing.T) {
	otlp, query := mcptest.StartJaeger(t)
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	for _, c := range traceFixtures {
		t.Run(c.name, func(t *testing.T) {
			// Moved to an hour ago: import asks Jaeger for --since's window.
			src := fixture(t, c.name+".tape.jsonl")
			first, _ := tapeTimeRange(t, src)
			shifted := shiftTape(t, src, time.Since(first)-time.Hour)
			service := "tapedeck-import-" + c.name + "-" + time.Now().Format("150405.000000")
			_, errOut, code := runCLI(t, "export", shifted, "--format", "otlp", "--with-bodies", "--endpoint", otlp, "--service", service)
			if code != 0 {
				t.Fatalf("export: exit %d: %s", code, errOut)
			}
			imported := filepath.Join(t.TempDir(), "imported.jsonl")
			want, _ := os.ReadFile(shifted)
			wantLines := strings.Count(string(want), "\n")
			waitFor(t, 20*time.Second, func() error {
				os.Remove(imported)
				_, errOut, code = runCLI(t, "import", "--from", "jaeger", query, "--service", service, "--since", "2h", "-o", imported)
				if code != 0 {
					return fmt.Errorf("import --from jaeger: exit %d: %s", code, errOut)
				}
				if got, _ := os.ReadFile(imported); strings.Count(string(got), "\n") != wantLines {
					return fmt.Errorf("imported %d lines, want %d", strings.Count(string(got), "\n"), wantLines)
				}
				return nil
			}, "Jaeger to hold the exported tape")
			sameRecords(t, shifted, imported)
			replayImported(t, tapedeck, client, imported, c.name, c.flags)
		})
	}
}

// Spans without bodies make a skeleton: stats equal to the original's on
// the calls' methods, counts and statuses; replay refuses it and says why.
func TestImportOTLPSkeleton(t *testing.T) {
	for _, c := range traceFixtures {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			otlp := filepath.Join(dir, "spans.json")
			if _, errOut, code := runCLI(t, "export", fixture(t, c.name+".tape.jsonl"), "--format", "otlp", "-o", otlp); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errOut)
			}
			imported := filepath.Join(dir, "skeleton.jsonl")
			if _, errOut, code := runCLI(t, "import", "--from", "otlp", otlp, "-o", imported); code != 0 {
				t.Fatalf("import: exit %d: %s", code, errOut)
			}
			want := callRows(t, fixture(t, c.name+".tape.jsonl"))
			got := callRows(t, imported)
			if len(want) == 0 || strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stats of the skeleton:\n%s\nof the tape:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			_, errOut, code := runCLI(t, "replay", imported)
			if code == 0 || !strings.Contains(errOut, "the tape is a skeleton") || !strings.Contains(errOut, "--with-bodies") {
				t.Errorf("replay of a skeleton: exit %d: %s", code, errOut)
			}
			// check --max-duration finds on the skeleton what it finds on the tape.
			wantCheck, _, wantCode := runCLI(t, "check", fixture(t, c.name+".tape.jsonl"), "--max-duration", "100ms")
			gotCheck, errOut, code := runCLI(t, "check", imported, "--max-duration", "100ms")
			if code != wantCode || findings(gotCheck) != findings(wantCheck) || !strings.Contains(gotCheck, "max-duration") {
				t.Errorf("check --max-duration of the skeleton: exit %d:\n%s%s\nof the tape: exit %d:\n%s", code, gotCheck, errOut, wantCode, wantCheck)
			}
			if _, errOut, code := runCLI(t, "diff", fixture(t, c.name+".tape.jsonl"), imported); code == 2 || strings.Contains(errOut, "error") {
				t.Errorf("diff with the skeleton: exit %d: %s", code, errOut)
			}
		})
	}
}

// callRows are the per-method rows of tapedeck stats for requests: method,
// direction, requests, responses, errors and tool errors.
func callRows(t *testing.T, path string) []string {
	t.Helper()
	out, errOut, code := runCLI(t, "stats", path)
	if code != 0 {
		t.Fatalf("stats %s: exit %d: %s", path, code, errOut)
	}
	var rows []string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == "context" {
			break // the table ends
		}
		if len(f) < 7 || f[1] != "send" && f[1] != "recv" || f[2] == "0" {
			continue
		}
		rows = append(rows, strings.Join([]string{f[0], f[1], f[2], f[4], f[5], f[6]}, " "))
	}
	return rows
}

// findings are check's lines after their tape:line, which differ.
func findings(out string) string {
	var b strings.Builder
	for _, line := range strings.Split(out, "\n") {
		// FAIL PATH:LINE: RULE: WHAT[: DETAIL] (the detail is the
		// answer's text, which a skeleton has not)
		if parts := strings.SplitN(line, ": ", 4); len(parts) >= 3 && strings.HasPrefix(line, "FAIL") {
			b.WriteString(parts[1] + ": " + parts[2] + "\n")
		}
	}
	return b.String()
}

// import --from jaeger writes the tape as every other import does: a
// span's time below the millisecond (Jaeger keeps microseconds) reaches
// _meta.ts, as it does through --from otlp.
func TestImportJaegerKeepsMicroseconds(t *testing.T) {
	answer := `{"data":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spans":[{"traceID":"0af7651916cd43dd8448eb211c80319c","spanID":"b7ad6b7169203331","operationName":"tools/call echo","references":[],"startTime":1767225601000123,"duration":5250,"tags":[{"key":"mcp.method.name","type":"string","value":"tools/call"},{"key":"gen_ai.tool.name","type":"string","value":"echo"},{"key":"jsonrpc.request.id","type":"string","value":"1"}],"logs":[],"processID":"p1"}],"processes":{"p1":{"serviceName":"svc","tags":[]}}}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "imported.jsonl")
	if _, errOut, code := runCLI(t, "import", "--from", "jaeger", srv.URL, "--trace", "0af7651916cd43dd8448eb211c80319c", "-o", out); code != 0 {
		t.Fatalf("import --from jaeger: exit %d: %s", code, errOut)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range []string{`"ts":"2026-01-01T00:00:01.000123Z"`, `"ts":"2026-01-01T00:00:01.005373Z"`} {
		if !strings.Contains(string(got), ts) {
			t.Errorf("the tape has no %s (the span's microseconds):\n%s", ts, got)
		}
	}
}
