package vcr_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/internal/mcptest"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/vcr"
)

type echoIn struct {
	Message string `json:"message"`
}

// goServer starts an in-memory go-sdk server with an echo tool and returns
// the transport its client connects with.
func goServer(t testing.TB) mcp.Transport {
	s := mcp.NewServer(&mcp.Implementation{Name: "gosrv", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo", Description: "echoes"}, func(_ context.Context, _ *mcp.CallToolRequest, in echoIn) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
	})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	return ct
}

// session connects a go-sdk client through transport, calls echo with msg
// and returns the answer's text.
func session(t *testing.T, transport mcp.Transport, msg string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "vcr-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
	if err != nil {
		t.Fatalf("call echo: %v", err)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// The modes with a real go-sdk client, against the go-sdk server and
// server-everything: the first run records, the next replays with the
// server absent, a changed call fails with the difference, and the tape
// is one tapedeck reads.
func TestModes(t *testing.T) {
	peers := mcptest.Peers(t)
	for _, srv := range []struct {
		name string
		real func(t testing.TB) func() mcp.Transport
		want string
	}{
		{"go-sdk", func(t testing.TB) func() mcp.Transport { return func() mcp.Transport { return goServer(t) } }, "Echo: hi"},
		{"server-everything", func(t testing.TB) func() mcp.Transport {
			return func() mcp.Transport {
				return &mcp.CommandTransport{Command: exec.Command(peers.Node, peers.Everything, "stdio")}
			}
		}, "Echo: hi"},
	} {
		t.Run(srv.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "echo.tape.jsonl")

			// Record once: no tape yet, so it records.
			r, err := vcr.New(path, srv.real(t), vcr.Options{Server: srv.name})
			if err != nil {
				t.Fatal(err)
			}
			if !r.Recording() {
				t.Fatal("RecordOnce with no tape does not record")
			}
			if got := session(t, r, "hi"); got != srv.want {
				t.Fatalf("recording: %q", got)
			}
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			x, err := tape.OpenIndex(path)
			if err != nil {
				t.Fatal(err)
			}
			if ws := x.Warnings(); len(ws) != 0 || x.Len() < 6 {
				t.Errorf("the tape: %d messages, warnings %v", x.Len(), ws)
			}
			x.Close()

			// Record once again: the tape exists, so it replays, server absent.
			r, err = vcr.New(path, nil, vcr.Options{Server: srv.name})
			if err != nil || r.Recording() {
				t.Fatalf("RecordOnce with a tape: %v, recording %v", err, r != nil && r.Recording())
			}
			if got := session(t, r, "hi"); got != srv.want {
				t.Errorf("replay: %q, want %q", got, srv.want)
			}
			if err := r.Stop(); err != nil {
				t.Errorf("replay of the same calls: %v", err)
			}

			// Replay only, with a changed call: the test's failure.
			r, err = vcr.New(path, nil, vcr.Options{Mode: vcr.ReplayOnly, Server: srv.name})
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			c := mcp.NewClient(&mcp.Implementation{Name: "vcr-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, r, nil)
			if err != nil {
				t.Fatal(err)
			}
			_, callErr := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "bye"}})
			cs.Close()
			cancel()
			err = r.Stop()
			if callErr == nil || err == nil || !strings.Contains(err.Error(), "departed from") || !strings.Contains(err.Error(), `"bye"`) {
				t.Errorf("a changed call: the call's error %v; Stop: %v", callErr, err)
			}
			if !errors.Is(err, replay.ErrDiverged) {
				t.Errorf("Stop's error %v: expected it to wrap replay.ErrDiverged, errors.Is says no", err)
			}

			// Record only: records again over the tape; passthrough writes nothing.
			before, _ := os.Stat(path)
			r, err = vcr.New(path, srv.real(t), vcr.Options{Mode: vcr.Passthrough})
			if err != nil {
				t.Fatal(err)
			}
			session(t, r, "hi")
			if after, _ := os.Stat(path); after.ModTime() != before.ModTime() || r.Stop() != nil {
				t.Error("passthrough wrote the tape")
			}
			r, err = vcr.New(path, srv.real(t), vcr.Options{Mode: vcr.RecordOnly, Server: srv.name})
			if err != nil || !r.Recording() {
				t.Fatalf("RecordOnly: %v", err)
			}
			session(t, r, "again")
			if err := r.Stop(); err != nil {
				t.Fatal(err)
			}
			data, _ := os.ReadFile(path)
			if !strings.Contains(string(data), `"again"`) || strings.Contains(string(data), `"hi"`) {
				t.Errorf("RecordOnly did not replace the tape:\n%s", data)
			}
		})
	}
}

// NewT fails the test on a divergence; ReplayOnly without a tape is an error.
func TestReplayOnlyNeedsTape(t *testing.T) {
	if _, err := vcr.New(filepath.Join(t.TempDir(), "none.jsonl"), nil, vcr.Options{Mode: vcr.ReplayOnly}); err == nil || !strings.Contains(err.Error(), "no tape") {
		t.Errorf("ReplayOnly with no tape: %v", err)
	}
}

// A bad Ignore path is New's error, before anything connects; a good one
// is used by the replay.
func TestIgnoreCheckedByNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.jsonl")
	r, err := vcr.New(path, func() mcp.Transport { return goServer(t) }, vcr.Options{Ignore: []string{"params.arguments["}})
	if err == nil || !strings.Contains(err.Error(), `ignore "params.arguments["`) {
		t.Fatalf("New with a bad ignore path: recorder %v, error %v; expected an error naming the path", r, err)
	}
	// A good path: recorded, then replayed with the ignored member changed.
	r, err = vcr.New(path, func() mcp.Transport { return goServer(t) }, vcr.Options{Ignore: []string{"params.arguments.message"}})
	if err != nil {
		t.Fatal(err)
	}
	session(t, r, "hi")
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	r, err = vcr.New(path, nil, vcr.Options{Mode: vcr.ReplayOnly, Ignore: []string{"params.arguments.message"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := session(t, r, "other"); got != "Echo: hi" {
		t.Errorf("replay with the message ignored: %q, expected the recorded %q", got, "Echo: hi")
	}
	if err := r.Stop(); err != nil {
		t.Errorf("a call differing only in an ignored member: %v", err)
	}
}

// ReplayWithNewEpisodes: the tape answers what it holds; a call it lacks
// goes to the real server (started on demand, initialised with the
// client's initialize) and the exchange is appended to the tape, which
// then answers it in turn with the server gone.
func TestNewEpisodes(t *testing.T) {
	peers := mcptest.Peers(t)
	for _, srv := range []struct {
		name string
		real func() mcp.Transport
	}{
		{"go-sdk (2026-07-28, no initialize)", func() mcp.Transport { return goServer(t) }},
		{"server-everything (initialize)", func() mcp.Transport {
			return &mcp.CommandTransport{Command: exec.Command(peers.Node, peers.Everything, "stdio")}
		}},
	} {
		t.Run(srv.name, func(t *testing.T) { newEpisodes(t, srv.real) })
	}
}

func newEpisodes(t *testing.T, real func() mcp.Transport) {
	path := filepath.Join(t.TempDir(), "episodes.tape.jsonl")
	r, err := vcr.New(path, real, vcr.Options{Mode: vcr.ReplayWithNewEpisodes, Server: "gosrv"})
	if err != nil || !r.Recording() {
		t.Fatalf("no tape yet: %v, recording %v", err, r != nil && r.Recording())
	}
	session(t, r, "hi")
	if err := r.Stop(); err != nil {
		t.Fatal(err)
	}
	r, err = vcr.New(path, real, vcr.Options{Mode: vcr.ReplayWithNewEpisodes, Server: "gosrv", Match: replay.Keyed})
	if err != nil || r.Recording() {
		t.Fatalf("with a tape: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "vcr-test", Version: "1"}, nil).Connect(ctx, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"hi", "new"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "Echo: "+msg {
			t.Fatalf("echo %s: %v %+v", msg, err, res)
		}
	}
	cs.Close()
	if err := r.Stop(); err != nil {
		t.Fatalf("a call that fell through is no failure: %v", err)
	}
	data, _ := os.ReadFile(path)
	if !strings.Contains(string(data), `"message":"new"`) || !strings.Contains(string(data), `Echo: new`) || !strings.Contains(string(data), `"episode":"new"`) {
		t.Fatalf("the new episode is not on the tape:\n%s", data)
	}
	if n := strings.Count(string(data), `"method":"$transport/close","params":{"episode":"new"`); n != 1 {
		t.Errorf("the new episode ends with %d $transport/close records, expected one (record.Session's):\n%s", n, data)
	}
	// The server gone, the tape answers both.
	r, err = vcr.New(path, nil, vcr.Options{Mode: vcr.ReplayOnly, Match: replay.Keyed, Server: "gosrv"})
	if err != nil {
		t.Fatal(err)
	}
	cs, err = mcp.NewClient(&mcp.Implementation{Name: "vcr-test", Version: "1"}, nil).Connect(ctx, r, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range []string{"hi", "new"} {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": msg}})
		if err != nil || res.Content[0].(*mcp.TextContent).Text != "Echo: "+msg {
			t.Errorf("replay of echo %s: %v %+v", msg, err, res)
		}
	}
	cs.Close()
	r.Stop()
}
