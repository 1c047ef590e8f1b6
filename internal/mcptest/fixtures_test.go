package mcptest_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

// update regenerates the fixture tapes in testdata/ at the repository root
// and the transcripts beside them, by running the real peers:
//
//	go test ./internal/mcptest -run TestFixtures -update
var update = flag.Bool("update", false, "regenerate testdata/ fixtures from the real peers")

// fixture is a tape made by running real peers. Tapes made by sdkclient also
// have a transcript (NAME.transcript.txt) that a replay must reproduce.
type fixture struct {
	name string
	// make records the tape to path and returns sdkclient's transcript, or
	// nil for tapes made by mcporter.
	make func(t *testing.T, path string) []byte
}

func fixtures() []fixture {
	return []fixture{
		{"mcporter-echo", mcporterFixture("echo", "message:hi")},
		{"mcporter-sum", mcporterFixture("get-sum", "a:2", "b:3")},
		{"mcporter-unknown-tool", mcporterFixture("no-such-tool")},
		{"sdk-everything-discover", sdkFixture(func(t *testing.T) []string {
			return append([]string{"--name", "everything", "--"}, mcptest.Peers(t).EverythingStdio()...)
		})},
		{"sdk-everything-2025-06-18", sdkFixture(func(t *testing.T) []string {
			return append([]string{"--name", "everything", "--protocol", "2025-06-18", "--"}, mcptest.Peers(t).EverythingStdio()...)
		})},
		{"sdk-everything-http", sdkFixture(func(t *testing.T) []string {
			return []string{"--name", "everything", "--roots", "--url", mcptest.StartEverythingHTTP(t)}
		})},
		{"sdk-sdkserver", sdkFixture(func(t *testing.T) []string {
			return []string{"--name", "sdk", "--roots", "--", mcptest.BuildBinary(t, mcptest.SDKServerPackage)}
		})},
		{"sdk-sdkserver-http-stateless", sdkFixture(func(t *testing.T) []string {
			return []string{"--name", "sdk", "--roots", "--url", mcptest.StartSDKServerHTTP(t, "--stateless")}
		})},
		{"ts-everything-task", taskFixture("--scenario", "research", "--polls", "3", "--interval", "300")},
		{"ts-everything-task-sampling", taskFixture("--scenario", "sampling", "--interval", "500")},
		{"ts-everything-coverage", tsFixture("coverageclient.mjs")},
		{"ts-v2-http", v2HTTPFixture},
		{"ts-sdk-url-elicitation", tsServerFixture("urlelicitclient.mjs", "sdk", mcptest.PeerSet.URLElicitServer)},
		{"sdk-multi-server", sdkFixture(func(t *testing.T) []string {
			return []string{"--roots",
				"--server", "everything=" + strings.Join(mcptest.Peers(t).EverythingStdio(), " "),
				"--server", "sdk=" + mcptest.BuildBinary(t, mcptest.SDKServerPackage),
			}
		})},
	}
}

func fixturePath(t *testing.T, name string) string {
	return filepath.Join(mcptest.RepoRoot(t), "testdata", name+".tape.jsonl")
}

func transcriptPath(t *testing.T, name string) string {
	return filepath.Join(mcptest.RepoRoot(t), "testdata", name+".transcript.txt")
}

// mcporterFixture records `mcporter call --stdio <server-everything> TOOL ARGS`
// with `mcporter record`, in a temporary HOME, and copies the recording.
func mcporterFixture(tool string, args ...string) func(t *testing.T, path string) []byte {
	return func(t *testing.T, path string) []byte {
		peers := mcptest.Peers(t)
		home := t.TempDir()
		argv := []string{"record", "fixture", "--", peers.Mcporter, "call",
			"--stdio", strings.Join(peers.EverythingStdio(), " "), "--name", "everything", tool}
		cmd := exec.Command(peers.Mcporter, append(argv, args...)...)
		cmd.Env = append(os.Environ(), "HOME="+home)
		cmd.Dir = home
		out, err := cmd.CombinedOutput()
		t.Logf("mcporter %s: %v\n%s", strings.Join(argv, " "), err, out) // an unknown tool exits 1
		data, err := os.ReadFile(filepath.Join(home, ".mcporter", "recordings", "fixture.ndjson"))
		if err != nil {
			t.Fatalf("mcporter wrote no recording: %v", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
}

func sdkFixture(args func(t *testing.T) []string) func(t *testing.T, path string) []byte {
	return func(t *testing.T, path string) []byte {
		bin := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
		return runClient(t, bin, append([]string{"--tape", path}, args(t)...)...)
	}
}

// taskFixture records internal/mcptest/ts/taskclient.mjs (the TypeScript
// SDK's task APIs) against server-everything over stdio through
// "tapedeck record", and returns the client's transcript.
func taskFixture(args ...string) func(t *testing.T, path string) []byte {
	return tsFixture("taskclient.mjs", args...)
}

// tsFixture records the TypeScript client script (in
// internal/mcptest/ts/) with args against server-everything over stdio
// through "tapedeck record", and returns the client's transcript.
func tsFixture(script string, args ...string) func(t *testing.T, path string) []byte {
	return tsServerFixture(script, "everything", mcptest.PeerSet.EverythingStdio, args...)
}

// tsServerFixture records the TypeScript client script with args against
// the stdio server server(peers) gives, named name on the tape, through
// "tapedeck record", and returns the client's transcript.
func tsServerFixture(script, name string, server func(mcptest.PeerSet) []string, args ...string) func(t *testing.T, path string) []byte {
	return func(t *testing.T, path string) []byte {
		peers := mcptest.Peers(t)
		root := mcptest.RepoRoot(t)
		tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
		if err := os.Remove(path); err != nil && !os.IsNotExist(err) { // record refuses to overwrite a tape
			t.Fatal(err)
		}
		dir, serverArgv := repoRelative(t, root, server(peers))
		argv := append([]string{filepath.Join(root, "internal", "mcptest", "ts", script)}, args...)
		argv = append(argv, "--stdio", tapedeck, "record", "--server", name, "-o", path, "--")
		argv = append(argv, serverArgv...)
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(peers.Node, argv...)
		cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(root, ".peers"))
		cmd.Dir = dir // the recorder's, and so the server's, working directory
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\nstdout:\n%s\nstderr:\n%s", script, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
		}
		return stdout.Bytes()
	}
}

// repoRelative returns a working directory for a recorded stdio server
// that holds the repository's .peers and internal (as links), and the
// server's command line with its arguments under the repository made
// relative to it: the tape's $transport/start then names .peers/… and
// internal/…, not the checkout that recorded it (/work/wt/NAME/…). The
// command (node, from PATH) stays as it is.
func repoRelative(t *testing.T, root string, argv []string) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range []string{".peers", "internal"} {
		if err := os.Symlink(filepath.Join(root, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	out := append([]string{}, argv...)
	for i, a := range out[1:] {
		if rel, err := filepath.Rel(root, a); err == nil && filepath.IsAbs(a) && rel != ".." && !strings.HasPrefix(rel, "../") {
			out[i+1] = rel
		}
	}
	return dir, out
}

// startArgsRelative checks that no argument of a $transport/start record
// is an absolute path: the fixture recipes write them relative to the
// repository (repoRelative), so a tape does not carry the path of the
// checkout that recorded it.
func startArgsRelative(t *testing.T, data []byte) {
	t.Helper()
	for _, line := range bytes.Split(data, []byte("\n")) {
		var rec struct {
			Method string
			Params struct{ Args []string }
		}
		if json.Unmarshal(line, &rec) != nil || rec.Method != "$transport/start" {
			continue
		}
		for _, a := range rec.Params.Args {
			if filepath.IsAbs(a) {
				t.Errorf("$transport/start holds the absolute path %s in its args, want it relative to the repository (as repoRelative writes it)", a)
			}
		}
	}
}

// v2HTTPFixture records internal/mcptest/ts/v2httpclient.mjs (the v2
// TypeScript SDK's client, 2026-07-28) against v2httpserver.mjs over
// Streamable HTTP through "tapedeck record --upstream", and returns the
// client's transcript.
func v2HTTPFixture(t *testing.T, path string) []byte {
	peers := mcptest.Peers(t)
	root := mcptest.RepoRoot(t)
	upstream := mcptest.StartV2HTTPServer(t)
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) { // record refuses to overwrite a tape
		t.Fatal(err)
	}
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	rec := mcptest.Start(t, exec.Command(tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "--server", "v2", "-o", path))
	m, err := mcptest.WaitForOutput(rec, regexp.MustCompile(`(http://127\.0\.0\.1:\d+/mcp)\n`), 20*time.Second)
	if err != nil {
		t.Fatalf("tapedeck record --upstream did not start: %v\n%s", err, rec.Output())
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(peers.Node, filepath.Join(root, "internal", "mcptest", "ts", "v2httpclient.mjs"), m[1])
	cmd.Env = append(os.Environ(), "TAPEDECK_PEERS="+filepath.Join(root, ".peers"))
	cmd.Dir = t.TempDir()
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("v2httpclient.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	rec.Stop(5 * time.Second) // SIGTERM: the recorder writes $transport/close
	return stdout.Bytes()
}

func runClient(t *testing.T, bin string, args ...string) []byte {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("sdkclient %s: %v\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes()
}

// TestFixtures checks the committed fixture tapes, or with -update remakes
// them from the real peers.
func TestFixtures(t *testing.T) {
	for _, f := range fixtures() {
		t.Run(f.name, func(t *testing.T) {
			path := fixturePath(t, f.name)
			if *update {
				transcript := f.make(t, path)
				if transcript != nil {
					if err := os.WriteFile(transcriptPath(t, f.name), transcript, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				if err := os.Chmod(path, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("fixture missing (remake with -update): %v", err)
			}
			if len(data) > 100<<10 {
				t.Errorf("fixture is %d bytes, want under 100 KiB", len(data))
			}
			entries := checkTape(t, data)
			if entries[0].Method != "$transport/start" {
				t.Errorf("first line is %q, want $transport/start", entries[0].Method)
			}
			startArgsRelative(t, data)
		})
	}
}

// TestHostileFixtures guards the byte-level oddities of the hand-made bad
// inputs, so that an editor or a formatter does not repair them.
func TestHostileFixtures(t *testing.T) {
	dir := filepath.Join(mcptest.RepoRoot(t), "testdata", "hostile")
	read := func(name string) []byte {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	checks := map[string]func(data []byte) bool{
		"empty.tape.jsonl":     func(d []byte) bool { return len(d) == 0 },
		"bom.tape.jsonl":       func(d []byte) bool { return bytes.HasPrefix(d, []byte("\xef\xbb\xbf{")) },
		"crlf.tape.jsonl":      func(d []byte) bool { return bytes.Count(d, []byte("\r\n")) == 4 && bytes.Count(d, []byte("\n")) == 4 },
		"truncated.tape.jsonl": func(d []byte) bool { return !bytes.HasSuffix(d, []byte("\n")) && !bytes.HasSuffix(d, []byte("}")) },
		"invalid-utf8.tape.jsonl": func(d []byte) bool {
			return bytes.Contains(d, []byte("\xff\xfe\xc3(")) && bytes.Contains(d, []byte("\n\x80\x81\x82\n"))
		},
		"blank-lines.tape.jsonl": func(d []byte) bool {
			return bytes.HasPrefix(d, []byte("\n{")) && bytes.Contains(d, []byte("\n   \n\t\n"))
		},
		"batch.tape.jsonl":    func(d []byte) bool { return bytes.HasPrefix(d, []byte("[{")) && bytes.HasSuffix(d, []byte("\n[]\n")) },
		"id-types.tape.jsonl": func(d []byte) bool { return bytes.Contains(d, []byte(`"id":18446744073709551617,`)) },
	}
	for name, ok := range checks {
		if !ok(read(name)) {
			t.Errorf("testdata/hostile/%s lost its oddity (see testdata/README.md)", name)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	readme := read("../README.md")
	for _, e := range entries {
		if !bytes.Contains(readme, []byte("`"+e.Name()+"`")) {
			t.Errorf("testdata/README.md does not describe hostile/%s", e.Name())
		}
	}
}
