package main

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/tape"
)

// Whatever "tapedeck record --upstream" writes, "tapedeck replay --listen"
// serves so that the client sees what it saw live: the go-sdk client with
// sessions, the standalone GET stream (server-everything's roots/list and
// the go-sdk server's), SSE and JSON answers. The HTTP replay used to read
// another dialect than the recorder writes (it looked for _meta.session on
// the initialize request, _meta.sse and $http/get records), so a recorded
// session replayed without Mcp-Session-Id, as JSON, with the GET stream
// refused.
func TestHTTPRoundTripThroughRecorder(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	client := mcptest.BuildBinary(t, mcptest.SDKClientPackage)
	for _, tt := range []struct {
		name     string
		upstream func(t *testing.T) string
		flags    []string
	}{
		{"everything", func(t *testing.T) string { return mcptest.StartEverythingHTTP(t) }, []string{"--name", "everything", "--roots"}},
		{"sdkserver", func(t *testing.T) string { return mcptest.StartSDKServerHTTP(t) }, []string{"--name", "sdk", "--roots"}},
		{"sdkserver-stateless", func(t *testing.T) string { return mcptest.StartSDKServerHTTP(t, "--stateless") }, []string{"--name", "sdk", "--roots"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			upstream := tt.upstream(t)
			live, stderr, err := runPeer(t, nil, append(append([]string{client}, tt.flags...), "--url", upstream)...)
			if err != nil {
				t.Fatalf("live: %v\n%s", err, stderr)
			}
			tapePath := filepath.Join(t.TempDir(), "rec.jsonl")
			proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
			through, stderr, err := runPeer(t, nil, append(append([]string{client}, tt.flags...), "--url", proxied)...)
			if err != nil || through != live {
				t.Fatalf("through the recorder (%v):\n%s\nlive:\n%s\n%s", err, through, live, stderr)
			}
			stopRecord()

			// The HTTP shape first, on a replay of its own: each recorded
			// session is served once.
			probed, stopProbe := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", "--match", "loose", tapePath)
			checkHTTPShape(t, tapePath, probed)
			stopProbe()

			replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
			got, stderr, err := runPeer(t, nil, append(append([]string{client}, tt.flags...), "--url", replayed)...)
			out := stopReplay()
			if err != nil || got != live {
				t.Fatalf("against the replay (%v):\n%s\nlive:\n%s\nclient stderr:\n%s\nreplay:\n%s", err, got, live, stderr, out)
			}
			for _, bad := range []string{"mismatch", "never reached the client", "never sent by the client"} {
				if strings.Contains(out, bad) {
					t.Errorf("replay reported %q:\n%s", bad, out)
				}
			}
		})
	}
}

// checkHTTPShape sends the tape's recorded initialize to the replay at url
// and checks the answer's HTTP shape against what the tape recorded: an
// Mcp-Session-Id when the server assigned one, SSE when it answered on a
// stream, and, with a session, the standalone GET stream when the tape had
// one. A client less tolerant than the go-sdk's (the TypeScript SDK, the
// conformance suite) depends on each.
func checkHTTPShape(t *testing.T, tapePath, url string) {
	t.Helper()
	x, err := tape.OpenIndex(tapePath)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	var init, answer tape.Entry
	hasGet := false
	for i := range x.Len() {
		en := x.Entry(i)
		if en.Kind == tape.KindRequest && en.Method == "initialize" && init.Raw == nil {
			init, _ = x.Message(i)
			if p := x.Pair(i).Partner; p >= 0 {
				answer, _ = x.Message(p)
			}
		}
		if m, err := x.Message(i); err == nil && en.Dir == tape.DirRecv && tape.ParseHTTPMeta(m.Raw).Method == http.MethodGet {
			hasGet = true
		}
	}
	if init.Raw == nil || answer.Raw == nil {
		return // a 2026-07-28 tape: no initialize
	}
	want := tape.ParseHTTPMeta(answer.Raw)
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(string(tape.StripMeta(init.Raw))))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	sid := resp.Header.Get("Mcp-Session-Id")
	if (sid != "") != (want.NewSession != "") {
		t.Errorf("replayed initialize: Mcp-Session-Id %q; the tape recorded %q", sid, want.NewSession)
	}
	if sse := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream"); sse != want.SSE {
		t.Errorf("replayed initialize: Content-Type %q; the tape recorded SSE %v", resp.Header.Get("Content-Type"), want.SSE)
	}
	if sid == "" || !hasGet {
		return
	}
	get, _ := http.NewRequest(http.MethodGet, url, nil)
	get.Header.Set("Mcp-Session-Id", sid)
	get.Header.Set("Accept", "text/event-stream")
	gresp, err := http.DefaultClient.Do(get)
	if err != nil {
		t.Fatal(err)
	}
	gresp.Body.Close()
	if gresp.StatusCode != http.StatusOK {
		t.Errorf("replayed GET stream: %s; the tape recorded one", gresp.Status)
	}
	del, _ := http.NewRequest(http.MethodDelete, url, nil)
	del.Header.Set("Mcp-Session-Id", sid)
	if dresp, err := http.DefaultClient.Do(del); err == nil {
		dresp.Body.Close()
	}
}

// tsClient runs the TypeScript SDK's client script (internal/mcptest/ts)
// with argv and returns its transcript.
func tsClient(t *testing.T, argv ...string) string {
	t.Helper()
	peers := mcptest.Peers(t)
	script := filepath.Join(mcptest.RepoRoot(t), "internal", "mcptest", "ts", "client.mjs")
	out, stderr, err := runPeer(t, []string{"TAPEDECK_PEERS=" + filepath.Join(mcptest.RepoRoot(t), ".peers")}, append([]string{peers.Node, script}, argv...)...)
	if err != nil {
		t.Fatalf("TypeScript client %v: %v\n%s%s", argv, err, out, stderr)
	}
	return out
}

// sameExceptProgress compares two transcripts line by line; the progress
// line of the replay may hold more: a notification the live client lost
// to a race (the TS SDK handles notifications in a microtask and a
// response at once) is on the tape, and replay lets it land first.
func sameExceptProgress(live, replayed string) bool {
	return sameTranscripts(live, replayed, false)
}

// sameUpToLostProgress is sameExceptProgress for two live runs: either
// one may have lost the last progress notifications to that race.
func sameUpToLostProgress(a, b string) bool {
	return sameTranscripts(a, b, true)
}

func sameTranscripts(a, b string, either bool) bool {
	l, r := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(l) != len(r) {
		return false
	}
	for i := range l {
		if l[i] == r[i] {
			continue
		}
		if !strings.HasPrefix(l[i], "progress:") {
			return false
		}
		if !strings.HasPrefix(r[i], l[i]) && !(either && strings.HasPrefix(l[i], r[i])) {
			return false
		}
	}
	return true
}

// The TypeScript SDK's client, which is stricter than the go-sdk's, sees
// through tapedeck's recorder what it sees live, and against the replay of
// that tape what it saw through the recorder: over stdio (the shim) and
// Streamable HTTP (the proxy, with sessions, SSE and progress).
func TestTSClientRoundTrip(t *testing.T) {
	tapedeck := mcptest.BuildBinary(t, "./cmd/tapedeck")
	peers := mcptest.Peers(t)
	t.Run("stdio", func(t *testing.T) {
		server := append([]string{}, peers.EverythingStdio()...)
		tapePath := filepath.Join(t.TempDir(), "ts.jsonl")
		live := tsClient(t, append([]string{"--stdio"}, server...)...)
		through := tsClient(t, append([]string{"--stdio", tapedeck, "record", "-o", tapePath, "--"}, server...)...)
		if !sameUpToLostProgress(through, live) {
			t.Fatalf("through the shim:\n%s\nlive:\n%s", through, live)
		}
		if data, err := os.ReadFile(tapePath); err != nil {
			t.Fatal(err)
		} else if n := strings.Count(string(data), `"method":"notifications/progress"`); n != 3 {
			t.Errorf("the tape holds %d progress notifications, the server sent 3", n)
		}
		replayed := tsClient(t, "--stdio", tapedeck, "replay", tapePath)
		if !sameExceptProgress(through, replayed) {
			t.Fatalf("against the replay:\n%s\nrecorded:\n%s", replayed, through)
		}
		if !strings.Contains(replayed, "progress: 1/3 2/3 3/3") {
			t.Errorf("the replay's progress notifications did not all reach the client:\n%s", replayed)
		}
	})
	t.Run("http", func(t *testing.T) {
		upstream := mcptest.StartEverythingHTTP(t)
		tapePath := filepath.Join(t.TempDir(), "ts.jsonl")
		live := tsClient(t, "--url", upstream)
		proxied, stopRecord := startTapedeck(t, tapedeck, "record", "--upstream", upstream, "--listen", "127.0.0.1:0", "-o", tapePath)
		through := tsClient(t, "--url", proxied)
		stopRecord()
		if !sameUpToLostProgress(through, live) {
			t.Fatalf("through the proxy:\n%s\nlive:\n%s", through, live)
		}
		replayed, stopReplay := startTapedeck(t, tapedeck, "replay", "--listen", "127.0.0.1:0", tapePath)
		got := tsClient(t, "--url", replayed)
		if out := stopReplay(); !sameExceptProgress(through, got) {
			t.Fatalf("against the replay:\n%s\nrecorded:\n%s\nreplay:\n%s", got, through, out)
		}
	})
}
