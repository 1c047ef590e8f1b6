package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// mcp-go (mark3labs/mcp-go) as a real peer: its client (cmd/mcpgoclient, a
// script on mcp-go's client) and its unmodified example client and server
// see through tapedeck's recorder what they see live, and against the
// replay of that tape, with the server gone, what they saw through the
// recorder. Each protocol era: the SDK's default (it probes server/discover
// and speaks 2026-07-28, stateless) and 2025-11-25 (initialize; over HTTP a
// session with Mcp-Session-Id).
func TestMCPGoRoundTrip(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.MCPGoClientPackage)
	everything := mcptest.BuildBinary(t, mcptest.MCPGoEverythingPackage)
	for _, protocol := range []string{"", "2025-11-25"} {
		flags := []string{client}
		name := "discover"
		if protocol != "" {
			flags, name = append(flags, "--protocol", protocol), protocol
		}
		flags = slices.Clip(flags) // each append below copies
		t.Run("stdio-"+name, func(t *testing.T) {
			tapePath := filepath.Join(t.TempDir(), "mcpgo.jsonl")
			live := runClient(t, append(flags, "--", everything)...)
			checkMCPGoTranscript(t, live, "example-servers/everything", protocol)
			through := runClient(t, append(flags, "--", tapedeck, "record", "-o", tapePath, "--", everything)...)
			if through != live {
				t.Fatalf("through the shim:\n%s\nlive:\n%s", through, live)
			}
			if n := countInTape(t, tapePath, `"method":"notifications/progress"`); n != 3 {
				t.Errorf("the tape holds %d progress notifications, the server sent 3", n)
			}
			report := filepath.Join(t.TempDir(), "report.json")
			replayed := runClient(t, append(flags, "--", tapedeck, "replay", "--report", report, tapePath)...)
			if replayed != through {
				t.Fatalf("against the replay:\n%s\nrecorded:\n%s", replayed, through)
			}
			if rep := readReport(t, report); rep.Err() != nil || rep.Matched != rep.Requests || rep.Matched < 10 {
				t.Errorf("replay report: %d of %d requests matched, %+v", rep.Matched, rep.Requests, rep)
			}
		})
		t.Run("http-"+name, func(t *testing.T) {
			upstream := mcptest.StartMCPGoServerHTTP(t)
			tapePath := filepath.Join(t.TempDir(), "mcpgo.jsonl")
			live := runClient(t, append(flags, "--url", upstream)...)
			checkMCPGoTranscript(t, live, "mcpgoserver", protocol)
			proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
			through := runClient(t, append(flags, "--url", proxied)...)
			stopRecord()
			// mcp-go's Streamable HTTP server drops a notification its
			// forwarder took off the queue as the response was written
			// (server/streamable_http.go, v1.2.1): either run may lack the
			// last progress notifications, live and recorded alike.
			if !sameUpToLostProgress(through, live) {
				t.Fatalf("through the proxy:\n%s\nlive:\n%s", through, live)
			}
			if got, want := recordedSession(t, tapePath), protocol != ""; got != want {
				t.Errorf("the tape recorded an Mcp-Session-Id: %v, want %v (2025-11-25 has sessions, 2026-07-28 none)", got, want)
			}
			probed, stopProbe := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", "--match", "loose", tapePath)
			checkHTTPShape(t, tapePath, probed)
			stopProbe()

			// The replay serves what the tape holds, which is what the
			// client saw through the proxy: equal, progress and all.
			replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
			got := runClient(t, append(flags, "--url", replayed)...)
			if out := stopReplay(); got != through {
				t.Fatalf("against the replay:\n%s\nrecorded:\n%s\nreplay:\n%s", got, through, out)
			}
		})
	}

	// mcp-go's examples/simple_client, as users run it (it prints pointer
	// addresses, masked here).
	simple := mcptest.BuildBinary(t, mcptest.MCPGoSimpleClientPackage)
	t.Run("simple_client-stdio", func(t *testing.T) {
		tapePath := filepath.Join(t.TempDir(), "simple.jsonl")
		live := simpleClient(t, simple, "--stdio", everything)
		if !strings.Contains(live, "Connected to server: example-servers/everything") || !strings.Contains(live, "Server has 101 resources available") {
			t.Fatalf("live run of simple_client:\n%s", live)
		}
		through := simpleClient(t, simple, "--stdio", tapedeck+" record -o "+tapePath+" -- "+everything)
		if through != live {
			t.Fatalf("through the shim:\n%s\nlive:\n%s", through, live)
		}
		if replayed := simpleClient(t, simple, "--stdio", tapedeck+" replay "+tapePath); replayed != live {
			t.Fatalf("against the replay:\n%s\nlive:\n%s", replayed, live)
		}
	})
	t.Run("simple_client-http", func(t *testing.T) {
		upstream := mcptest.StartMCPGoServerHTTP(t)
		tapePath := filepath.Join(t.TempDir(), "simple.jsonl")
		live := simpleClient(t, simple, "--http", upstream)
		proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
		through := simpleClient(t, simple, "--http", proxied)
		stopRecord()
		if through != live {
			t.Fatalf("through the proxy:\n%s\nlive:\n%s", through, live)
		}
		replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
		got := simpleClient(t, simple, "--http", replayed)
		if out := stopReplay(); got != live {
			t.Fatalf("against the replay:\n%s\nlive:\n%s\nreplay:\n%s", got, live, out)
		}
	})
}

// A tape recorded with one SDK's client replays to another SDK's client
// with only the real differences as divergences. mcp-go's client and the
// go-sdk's (sdkclient) run the same steps against mcp-go's everything
// server over stdio, but encode them differently: mcp-go leaves out a tool
// call's empty "arguments" where the go-sdk sends {}, sends a list
// request's "params":{} where the go-sdk sends none, and each names itself
// in initialize or in every request's _meta (2026-07-28). None of that may
// diverge. The replaying client is given another echo message: that one
// call, and only it, must diverge, with a diff naming only the message, and
// everything else must read as it did live.
func TestMCPGoCrossSDKReplay(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	mcpgo := mcptest.BuildBinary(t, mcptest.MCPGoClientPackage)
	sdk := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	everything := mcptest.BuildBinary(t, mcptest.MCPGoEverythingPackage)
	// The steps both clients have, sending the same requests.
	const steps = "init,tools,echo,sum,error,resources"
	for _, protocol := range []string{"", "2025-11-25"} {
		name := "discover"
		var pflags []string
		if protocol != "" {
			name, pflags = protocol, []string{"--protocol", protocol}
		}
		clients := map[string][]string{
			"mcpgo": slices.Clip(slices.Concat([]string{mcpgo}, pflags, []string{"--steps", steps})),
			"sdk":   slices.Clip(slices.Concat([]string{sdk, "--name", "everything"}, pflags, []string{"--steps", steps})),
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			tapes := map[string]string{}
			for c, argv := range clients {
				tapes[c] = filepath.Join(dir, c+".jsonl")
				runClient(t, append(argv, "--", tapedeck, "record", "-o", tapes[c], "--", everything)...)
			}
			// The tapes do differ where the SDKs do (else this test proves
			// nothing about tolerating it).
			if a, b := noSuchToolArguments(t, tapes["mcpgo"]), noSuchToolArguments(t, tapes["sdk"]); a || !b {
				t.Fatalf("tools/call no-such-tool: mcp-go sent arguments %v, the go-sdk %v; want false and true", a, b)
			}
			for recorder, player := range map[string]string{"mcpgo": "sdk", "sdk": "mcpgo"} {
				t.Run(recorder+"-tape-to-"+player, func(t *testing.T) {
					argv := slices.Clip(slices.Concat(clients[player], []string{"--message", "bye"}))
					live := runClient(t, append(argv, "--", everything)...)
					report := filepath.Join(t.TempDir(), "report.json")
					got := runClient(t, append(argv, "--", tapedeck, "replay", "--report", report, tapes[recorder])...)
					checkCrossReplay(t, live, got)
					rep := readReport(t, report)
					if len(rep.Divergences) != 1 {
						var msgs []string
						for _, d := range rep.Divergences {
							msgs = append(msgs, d.Message)
						}
						t.Fatalf("%d divergences, want the echo only:\n%s", len(rep.Divergences), strings.Join(msgs, "\n"))
					}
					d := rep.Divergences[0]
					diff, _ := json.Marshal(d.Diff)
					if d.Method != "tools/call" || d.Reason != replay.ReasonMismatch || string(diff) != `[{"op":"replace","path":"/params/arguments/message","expected":"hi","actual":"bye"}]` {
						t.Errorf("divergence %s %s, diff %s; want the echo's message only", d.Method, d.Reason, diff)
					}
					if len(rep.Unused) != 1 || rep.Unused[0].Line != d.ExpectedLine || len(rep.Resyncs) != 0 || rep.Matched != rep.Requests-1 {
						t.Errorf("unused %+v, resyncs %+v, %d of %d matched; want the recorded echo only, none, all but one", rep.Unused, rep.Resyncs, rep.Matched, rep.Requests)
					}
				})
			}
		})
	}
}

// checkCrossReplay compares a client's transcript against the replay of
// another SDK's tape with its live one: the same but for the echo line,
// which holds the replay's divergence error, and the go-sdk's note that the
// replay exited 1.
func checkCrossReplay(t *testing.T, live, got string) {
	t.Helper()
	l, g := strings.Split(strings.TrimSuffix(live, "\n"), "\n"), strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(g) == len(l)+1 && strings.HasSuffix(g[len(g)-1], "close: exit status 1") {
		g = g[:len(l)]
	}
	echoes := 0
	for i := range l {
		switch {
		case i >= len(g):
			t.Fatalf("against the replay, line %d missing:\n%s\nlive:\n%s", i+1, got, live)
		case strings.Contains(l[i], `echo: echo: "Echo: bye"`):
			echoes++
			if !strings.Contains(g[i], "rpc error") || !strings.Contains(g[i], `/params/arguments/message: expected "hi", got "bye"`) {
				t.Errorf("the echo against the replay: %s; want the divergence error", g[i])
			}
		case g[i] != l[i]:
			t.Errorf("against the replay, line %d:\n%s\nlive:\n%s", i+1, g[i], l[i])
		}
	}
	if echoes != 1 || len(g) != len(l) {
		t.Errorf("against the replay:\n%s\nlive:\n%s", got, live)
	}
}

// runClient runs a client to completion (argv[0] is its path) and returns
// its stdout; a failed run fails the test.
func runClient(t *testing.T, argv ...string) string {
	t.Helper()
	out, stderr, err := runPeer(t, nil, argv...)
	if err != nil {
		t.Fatalf("%s: %v\n%s%s", filepath.Base(argv[0]), err, out, stderr)
	}
	return out
}

var pointer = regexp.MustCompile(`0x[0-9a-f]+`)

// simpleClient runs mcp-go's examples/simple_client with argv and returns
// its stdout, pointer addresses masked.
func simpleClient(t *testing.T, bin string, argv ...string) string {
	t.Helper()
	return pointer.ReplaceAllString(runClient(t, append([]string{bin}, argv...)...), "0x…")
}

// checkMCPGoTranscript checks a live transcript of cmd/mcpgoclient's full
// script: what the round trips compare must hold each kind of exchange.
func checkMCPGoTranscript(t *testing.T, live, server, protocol string) {
	t.Helper()
	if protocol == "" {
		protocol = "2026-07-28"
	}
	for _, want := range []string{
		"init: protocol " + protocol + ", server " + server + " 1.0.0",
		`echo: echo: "Echo: hi"`,
		"sum: add: \"The sum of 2.000000 and 3.000000 is 5.000000.\"",
		"progress: longRunningOperation: 1/3",
		"error: no-such-tool: rpc error:",
		"error: resources/read demo://no-such-resource: error:",
		`toolerror: echo: tool error: "invalid message argument: expected string"`,
		`prompt: simple_prompt: user "This is a simple prompt without arguments."`,
		`resource: test://static/resource: text/plain "This is a sample resource"`,
	} {
		if !strings.Contains(live, want) {
			t.Fatalf("live transcript lacks %q:\n%s", want, live)
		}
	}
}

func countInTape(t *testing.T, path, s string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), s)
}

func readReport(t *testing.T, path string) replay.Report {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep replay.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatalf("report %s: %v", path, err)
	}
	return rep
}

// recordedSession reports whether the server answered the tape's
// initialize with an Mcp-Session-Id.
func recordedSession(t *testing.T, path string) bool {
	t.Helper()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := range x.Len() {
		if en := x.Entry(i); en.Kind == tape.KindRequest && en.Method == "initialize" {
			if p := x.Pair(i).Partner; p >= 0 {
				answer, err := x.Message(p)
				return err == nil && tape.ParseHTTPMeta(answer.Raw).NewSession != ""
			}
		}
	}
	return false
}

// noSuchToolArguments reports whether the tape's tools/call of no-such-tool
// carries "arguments".
func noSuchToolArguments(t *testing.T, path string) bool {
	t.Helper()
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	for i := range x.Len() {
		if en := x.Entry(i); en.Kind == tape.KindRequest && en.Method == "tools/call" {
			m, err := x.Message(i)
			if err != nil {
				t.Fatal(err)
			}
			var call struct {
				Params struct {
					Name      string          `json:"name"`
					Arguments json.RawMessage `json:"arguments"`
				} `json:"params"`
			}
			if json.Unmarshal(m.Raw, &call) == nil && call.Params.Name == "no-such-tool" {
				return call.Params.Arguments != nil
			}
		}
	}
	t.Fatalf("%s: no tools/call of no-such-tool", path)
	return false
}
