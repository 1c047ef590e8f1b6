package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// importFixture is a file of testdata/import.
func importFixture(t *testing.T, name string) string {
	return filepath.Join(mcptest.RepoRoot(t), "testdata", "import", name)
}

// An imported tape replays like a recorded one: the logs the real
// mcpsnoop wrote of sdkclient and server-everything (over stdio through
// its shim, over Streamable HTTP through its proxy), imported, served by
// tapedeck replay to the same client with the server absent, make it print
// what it printed live.
func TestImportMCPSnoopReplays(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	for _, name := range []string{"everything-stdio", "everything-http"} {
		t.Run(name, func(t *testing.T) {
			tapePath := filepath.Join(t.TempDir(), "imported.jsonl")
			out, errOut, code := runCLI(t, "import", "--from", "mcpsnoop", importFixture(t, "mcpsnoop/"+name+".jsonl"), "-o", tapePath)
			if code != 0 || out != "" || !strings.Contains(errOut, "imported 41 messages") {
				t.Fatalf("import: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			want, err := os.ReadFile(importFixture(t, "mcpsnoop/"+name+".transcript.txt"))
			if err != nil {
				t.Fatal(err)
			}
			got, stderr, err := runPeer(t, nil, client, "--name", "everything", "--roots", "--", tapedeck, "replay", tapePath)
			if err != nil {
				t.Fatalf("sdkclient over the replay of the imported tape: %v\nstderr:\n%s", err, stderr)
			}
			if got != string(want) {
				t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr)
			}
		})
	}
}

// A GitHub Agentic Workflows gateway log (rpc-messages.jsonl) holds whole
// messages: imported, its tape replays to the go-sdk client, which prints
// what it printed live (the log was written from that live session, see
// testdata/import/README.md).
func TestImportGHAWReplays(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tapePath := filepath.Join(t.TempDir(), "imported.jsonl")
	out, errOut, code := runCLI(t, "import", "--from", "gh-aw", importFixture(t, "gh-aw/everything-rpc-messages.jsonl"), "-o", tapePath)
	if code != 0 || out != "" || !strings.Contains(errOut, "imported 33 messages") {
		t.Fatalf("import: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want, err := os.ReadFile(importFixture(t, "gh-aw/everything-rpc-messages.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := runPeer(t, nil, client, "--name", "everything", "--protocol", "2025-06-18", "--", tapedeck, "replay", tapePath)
	if err != nil {
		t.Fatalf("sdkclient over the replay of the imported tape: %v\nstderr:\n%s", err, stderr)
	}
	if got != string(want) {
		t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr)
	}
}

// The MCP Inspector's history export holds whole messages (each answer
// folded into its request's entry): imported, its tape replays to the
// go-sdk client, which prints what it printed live (the export was
// written from that live session, see testdata/import/README.md).
func TestImportInspectorReplays(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	tapePath := filepath.Join(t.TempDir(), "imported.jsonl")
	out, errOut, code := runCLI(t, "import", "--from", "inspector", importFixture(t, "inspector/everything-protocol.json"), "-o", tapePath)
	if code != 0 || out != "" || !strings.Contains(errOut, "imported 33 messages and 1 lifecycle records (servers mcp-servers/everything)") {
		t.Fatalf("import: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	want, err := os.ReadFile(importFixture(t, "inspector/everything-protocol.transcript.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, stderr, err := runPeer(t, nil, client, "--name", "everything", "--protocol", "2025-06-18", "--", tapedeck, "replay", tapePath)
	if err != nil {
		t.Fatalf("sdkclient over the replay of the imported tape: %v\nstderr:\n%s", err, stderr)
	}
	if got != string(want) {
		t.Fatalf("replayed transcript differs from the live one\ngot:\n%s\nwant:\n%s\nstderr:\n%s", got, want, stderr)
	}
}

// import's errors say what was expected and what was found, with the
// line or the JSON path, and leave no tape behind.
func TestImportCommandErrors(t *testing.T) {
	dir := t.TempDir()
	bad := writeFile(t, "bad.jsonl", `{"ts":"2026-01-02T03:04:05Z","direction":"c2s","raw":{"jsonrpc":"2.0","id":1,"method":"ping"}}
{"ts":"2026-01-02T03:04:05Z","direction":"sideways"}
`)
	exists := writeFile(t, "exists.jsonl", "keep me\n")
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"no --from", []string{"import", bad, "-o", filepath.Join(dir, "a.jsonl")}, []string{"expected --from", "agent-vcr, gh-aw, har, inspector, jaeger, mcp-recorder, mcpsnoop, otlp"}},
		{"unknown --from", []string{"import", "--from", "pcap", bad, "-o", filepath.Join(dir, "a.jsonl")}, []string{`--from "pcap"`, "expected one of agent-vcr, gh-aw, har, inspector, jaeger, mcp-recorder, mcpsnoop, otlp"}},
		{"no -o", []string{"import", "--from", "mcpsnoop", bad}, []string{"expected -o TAPE"}},
		{"missing file", []string{"import", "--from", "mcpsnoop", filepath.Join(dir, "nope"), "-o", filepath.Join(dir, "a.jsonl")}, []string{"no such file"}},
		{"tape exists", []string{"import", "--from", "mcpsnoop", bad, "-o", exists}, []string{"exists"}},
		{"jaeger tape exists", []string{"import", "--from", "jaeger", "http://127.0.0.1:1", "--service", "s", "-o", exists}, []string{"import -o " + exists + ": the file exists"}},
		{"malformed", []string{"import", "--from", "mcpsnoop", bad, "-o", filepath.Join(dir, "a.jsonl")}, []string{"mcpsnoop: line 2: $.direction", `found "sideways"`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, code := runCLI(t, c.args...)
			if code == 0 {
				t.Fatalf("exit 0, want a failure")
			}
			for _, w := range c.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr %q lacks %q", errOut, w)
				}
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "a.jsonl")); !os.IsNotExist(err) {
		t.Errorf("a failed import left a tape behind: %v", err)
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me\n" {
		t.Errorf("an existing file was overwritten: %q", b)
	}
}

// HAR round trip: a session recorded through tapedeck's HTTP proxy
// (sdkclient and server-everything over Streamable HTTP, with SSE answers,
// the GET stream and the server's roots/list), exported as HAR, imported
// back, replays to the same client, over stdio and over HTTP, with the
// transcript it printed live. So does a stdio recording exported as HAR,
// and the committed HAR of such a session.
func TestImportHARReplays(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	flags := []string{"--name", "everything", "--roots"}
	replayBoth := func(t *testing.T, imported, want string, flags []string, http bool) {
		t.Helper()
		got, stderr, err := runPeer(t, nil, append(append([]string{client}, flags...), "--", tapedeck, "replay", imported)...)
		if err != nil || got != want {
			t.Fatalf("stdio replay of the imported tape (%v):\n%s\nlive:\n%s\nstderr:\n%s", err, got, want, stderr)
		}
		if !http {
			return
		}
		url, stop := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", imported)
		got, stderr, err = runPeer(t, nil, append(append([]string{client}, flags...), "--url", url)...)
		out := stop()
		if err != nil || got != want {
			t.Fatalf("HTTP replay of the imported tape (%v):\n%s\nlive:\n%s\nclient stderr:\n%s\nreplay:\n%s", err, got, want, stderr, out)
		}
	}
	importHAR := func(t *testing.T, har string) string {
		t.Helper()
		imported := filepath.Join(t.TempDir(), "imported.jsonl")
		if _, errOut, code := runCLI(t, "import", "--from", "har", har, "-o", imported); code != 0 {
			t.Fatalf("import: exit %d: %s", code, errOut)
		}
		return imported
	}
	t.Run("recorded-http", func(t *testing.T) {
		upstream := mcptest.StartEverythingHTTP(t)
		rec := filepath.Join(t.TempDir(), "rec.jsonl")
		proxied, stop := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", rec)
		live, stderr, err := runPeer(t, nil, append(append([]string{client}, flags...), "--url", proxied)...)
		stop()
		if err != nil {
			t.Fatalf("live through the recorder: %v\n%s", err, stderr)
		}
		har := filepath.Join(t.TempDir(), "rec.har")
		if _, errOut, code := runCLI(t, "export", rec, "--format", "har", "-o", har); code != 0 {
			t.Fatalf("export: exit %d: %s", code, errOut)
		}
		replayBoth(t, importHAR(t, har), live, flags, true)
	})
	t.Run("committed-http", func(t *testing.T) {
		want, err := os.ReadFile(importFixture(t, "har/everything-http.transcript.txt"))
		if err != nil {
			t.Fatal(err)
		}
		replayBoth(t, importHAR(t, importFixture(t, "har/everything-http.har")), string(want), flags, true)
	})
	t.Run("stdio", func(t *testing.T) {
		for _, c := range []struct {
			name  string
			flags []string
		}{
			{"sdk-everything-2025-06-18", []string{"--name", "everything", "--protocol", "2025-06-18"}},
			{"sdk-sdkserver", []string{"--name", "sdk", "--roots"}},
		} {
			want, err := os.ReadFile(fixture(t, c.name+".transcript.txt"))
			if err != nil {
				t.Fatal(err)
			}
			har := filepath.Join(t.TempDir(), c.name+".har")
			if _, errOut, code := runCLI(t, "export", fixture(t, c.name+".tape.jsonl"), "--format", "har", "-o", har); code != 0 {
				t.Fatalf("export: exit %d: %s", code, errOut)
			}
			replayBoth(t, importHAR(t, har), string(want), c.flags, false)
		}
	})
}

// The imported mcp-recorder cassette and agent-vcr recordings replay: a
// client sending the recorded client messages to tapedeck replay gets the
// recorded server messages back, in order (their servers and clients are
// Python and Node programs of those projects, not here to run).
func TestImportCassettesReplay(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	for _, c := range []struct{ format, file string }{
		{"mcp-recorder", "mcp-recorder/mock_session.json"},
		{"agent-vcr", "agent-vcr/calculator-v1.vcr"},
		{"agent-vcr", "agent-vcr/calculator-errors.vcr"},
	} {
		t.Run(c.file, func(t *testing.T) {
			imported := filepath.Join(t.TempDir(), "imported.jsonl")
			if _, errOut, code := runCLI(t, "import", "--from", c.format, importFixture(t, c.file), "-o", imported); code != 0 {
				t.Fatalf("import: exit %d: %s", code, errOut)
			}
			data, err := os.ReadFile(imported)
			if err != nil {
				t.Fatal(err)
			}
			var sends, want []string
			for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
				var m map[string]json.RawMessage
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatal(err)
				}
				var meta struct{ Dir string }
				_ = json.Unmarshal(m["_meta"], &meta)
				delete(m, "_meta")
				b, _ := json.Marshal(m)
				switch meta.Dir {
				case "send":
					sends = append(sends, string(b))
				case "recv":
					want = append(want, string(b))
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, tapedeck, "replay", imported)
			cmd.Stdin = strings.NewReader(strings.Join(sends, "\n") + "\n")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("replay: %v\n%s", err, stderr.String())
			}
			var got []string
			for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
				var v any
				if err := json.Unmarshal([]byte(line), &v); err != nil {
					t.Fatalf("replay wrote %q: %v", line, err)
				}
				b, _ := json.Marshal(v)
				got = append(got, string(b))
			}
			for i := range want {
				var v any
				_ = json.Unmarshal([]byte(want[i]), &v)
				b, _ := json.Marshal(v)
				want[i] = string(b)
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("replay answered\n%s\nwant the recorded\n%s\nstderr:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), stderr.String())
			}
		})
	}
}

// import refuses a device as its input at once, with what it is (it read
// /dev/zero until the kernel ended it).
func TestImportRefusesDevice(t *testing.T) {
	for _, format := range []string{"mcpsnoop", "har", "mcp-recorder", "agent-vcr"} {
		var stdout, stderr bytes.Buffer
		out := filepath.Join(t.TempDir(), "t.jsonl")
		err := run(context.Background(), []string{"import", "--from", format, "-o", out, "/dev/zero"}, strings.NewReader(""), &stdout, &stderr)
		if err == nil || !strings.Contains(err.Error(), "is a device") {
			t.Errorf("import --from %s /dev/zero: got %v, want it refused as a device", format, err)
		}
	}
}

// import of a named pipe whose writer holds it open and writes nothing
// stops when the command's context ends (SIGTERM): the pipe's copy used to
// wait for ever, deaf to signals; no tape is left.
func TestImportPipeObeysContext(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "in.har")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := os.OpenFile(fifo, os.O_RDWR, 0) // a writer that writes nothing
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	out := filepath.Join(dir, "out.jsonl")
	done := make(chan string, 1)
	go func() {
		_, errOut, code := runCLIFor(t, 200*time.Millisecond, "import", "--from", "har", fifo, "-o", out)
		done <- fmt.Sprintf("%d %s", code, errOut)
	}()
	select {
	case got := <-done:
		if strings.HasPrefix(got, "0 ") || !strings.Contains(got, "context deadline exceeded") {
			t.Errorf("import of a silent pipe under an ending context: %s; want a failure naming the context", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("import of a silent pipe still running 10s after its context ended")
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a tape was left at %s (%v)", out, err)
	}
}
