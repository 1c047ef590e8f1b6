package record_test

import (
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/compare"
	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// shadowDiff is diff --shadow on the tape at path: each difference as
// "kind method target".
func shadowDiff(t *testing.T, path string) (compare.Report, []string) {
	t.Helper()
	side, err := compare.OpenSide(path)
	if err != nil {
		t.Fatal(err)
	}
	defer side.Index.Close()
	r, err := compare.Shadow(side, compare.Options{})
	if err != nil {
		t.Fatalf("compare.Shadow: %v", err)
	}
	var got []string
	for _, s := range r.Servers {
		for _, c := range s.Calls {
			if c.Kind == "latency" {
				continue // the machine is shared: latencies move
			}
			got = append(got, strings.TrimSpace(c.Kind+" "+c.Method+" "+c.Target))
		}
		if s.ServerInfo != nil || s.Protocol != nil || len(s.Caps)+len(s.Definitions) > 0 {
			got = append(got, "handshake or definitions")
		}
	}
	return r, got
}

// laneRecords returns the records of the tape at path whose server is
// the shadow lane, as raw lines.
func laneRecords(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if strings.HasSuffix(gjson.Get(l, "_meta.server").String(), tape.ShadowSuffix) {
			if !gjson.Get(l, "_meta.shadow").Bool() {
				t.Errorf("a lane record without _meta.shadow: %s", l)
			}
			out = append(out, l)
		}
	}
	return out
}

// TestShadowStdio records the go-sdk client with a stdio server A through
// the shim with --shadow-cmd running the go-sdk server's variant B: the
// client's transcript equals the direct run against A, and diff --shadow
// finds exactly the call B answers otherwise (answer: 43, not 42). With
// server-everything as A the client still sees A only. A B that dies at
// once is noted and changes nothing for the client.
func TestShadowStdio(t *testing.T) {
	shim := mcptest.BuildBinary(t, tapedeckPackage)
	sdk := mcptest.BuildBinary(t, mcptest.SDKServerPackage)
	args := []string{"--protocol", "2025-06-18", "--steps", "init,tools,echo,sum,progress,concurrent,error,answer,logs"}
	run := func(t *testing.T, shadowCmd string, server ...string) string {
		path := filepath.Join(t.TempDir(), "shadow.jsonl")
		direct := runClient(t, append(args, append([]string{"--"}, server...)...)...)
		shimmed := runClient(t, append(args, append([]string{"--", shim, "record", "-o", path, "--server", "a", "--shadow-cmd", shadowCmd, "--"}, server...)...)...)
		if direct != shimmed {
			t.Errorf("transcript through the shadowing shim differs.\nthrough the shim:\n%s\ndirect:\n%s", shimmed, direct)
		}
		return path
	}
	t.Run("sdkserver", func(t *testing.T) {
		path := run(t, sdk+" --variant B", sdk)
		r, got := shadowDiff(t, path)
		if strings.Join(got, "|") != "result tools/call answer" {
			t.Errorf("diff --shadow found %q, want exactly the answer call's result", got)
		}
		if s := r.Servers[0]; s.CallsA != s.CallsB || s.CallsA < 8 {
			t.Errorf("calls: A %d, lane %d; want the same, at least 8", s.CallsA, s.CallsB)
		}
		lane := laneRecords(t, path)
		if !strings.Contains(strings.Join(lane, "\n"), `"the answer is 43"`) {
			t.Errorf("the lane lacks B's answer 43:\n%s", strings.Join(lane, "\n"))
		}
		if c := lane[len(lane)-1]; gjson.Get(c, "method").String() != tape.MethodClose || gjson.Get(c, "params.unanswered").Int() != 0 {
			t.Errorf("the lane's last record is %s, want its close with nothing unanswered", c)
		}
	})
	t.Run("everything", func(t *testing.T) {
		peers := mcptest.Peers(t)
		path := run(t, sdk+" --variant B", peers.EverythingStdio()...)
		_, got := shadowDiff(t, path)
		// B is another server: its tools differ, so do their answers.
		if !strings.Contains(strings.Join(got, "|"), "handshake or definitions") {
			t.Errorf("diff --shadow of server-everything against sdkserver found %q, want the handshake to differ", got)
		}
	})
	t.Run("crashing", func(t *testing.T) {
		path := run(t, "sh -c exit", sdk)
		lane := strings.Join(laneRecords(t, path), "\n")
		if !strings.Contains(lane, tape.MethodShadowDropped) || !strings.Contains(lane, "B exited") {
			t.Errorf("the lane does not say B died:\n%s", lane)
		}
	})
}

// TestShadowHTTP records the go-sdk client through the proxy in front of
// a Streamable HTTP server A, with --shadow at the go-sdk server's variant
// B over HTTP: the transcript equals the direct run, B's session is its
// own, and diff --shadow finds exactly the answer call.
func TestShadowHTTP(t *testing.T) {
	a := mcptest.StartSDKServerHTTP(t)
	b := mcptest.StartSDKServerHTTP(t, "--variant", "B")
	for _, tc := range []struct {
		name, upstream string
		want           string
	}{
		{"sdkserver", a, "result tools/call answer"},
		{"everything", mcptest.StartEverythingHTTP(t), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up, _ := url.Parse(tc.upstream)
			bu, _ := url.Parse(b)
			path := filepath.Join(t.TempDir(), "shadow.jsonl")
			f, err := os.Create(path)
			if err != nil {
				t.Fatal(err)
			}
			p := &record.Proxy{Upstream: up, Tape: f, Server: "a", Shadow: &record.ShadowOptions{URL: bu}}
			if err := p.Start("test", "test"); err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			args := []string{"--protocol", "2025-06-18", "--steps", "init,tools,echo,sum,error,answer"}
			direct := runClient(t, append(args, "--url", tc.upstream)...)
			proxied := runClient(t, append(args, "--url", srv.URL+up.Path)...)
			srv.Close()
			if err := p.Close("test over"); err != nil {
				t.Fatal(err)
			}
			f.Close()
			if direct != proxied {
				t.Errorf("transcript through the shadowing proxy differs.\nthrough it:\n%s\ndirect:\n%s", proxied, direct)
			}
			lane := laneRecords(t, path)
			aSession, bSession := "", ""
			whole, _ := os.ReadFile(path)
			for _, l := range strings.Split(string(whole), "\n") {
				if s := gjson.Get(l, "_meta.newSession").String(); s != "" {
					if strings.HasSuffix(gjson.Get(l, "_meta.server").String(), tape.ShadowSuffix) {
						bSession = s
					} else {
						aSession = s
					}
				}
			}
			if bSession == "" || bSession == aSession {
				t.Errorf("B's session %q, A's %q: want B's own", bSession, aSession)
			}
			_, got := shadowDiff(t, path)
			if tc.want != "" && strings.Join(got, "|") != tc.want {
				t.Errorf("diff --shadow found %q, want %q", got, tc.want)
			}
			if tc.want == "" && len(got) == 0 {
				t.Errorf("diff --shadow of server-everything against sdkserver found nothing; lane:\n%s", strings.Join(lane, "\n"))
			}
		})
	}
}
