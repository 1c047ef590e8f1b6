package upstream

import (
	"context"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// Compared, the rule docs/coverage.md's "verified" column is drawn by,
// agrees call by call with what Verify reports: verifying a testdata tape
// against its own replay, a call is compared (neither skipped nor passed
// as version negotiation) exactly when Compared says so, and no message
// Compared counts goes unreported.
func TestComparedAgreesWithVerify(t *testing.T) {
	for _, tc := range []struct {
		name string
		http bool
	}{
		{"ts-v2-http", true},               // subscriptions/listen never answered: skipped
		{"ts-everything-coverage", false},  // a call the client cancelled: skipped
		{"sdk-everything-discover", false}, // server/discover rejected: negotiation
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := tape.OpenIndex(filepath.Join("..", "testdata", tc.name+".tape.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { x.Close() })
			var conn Conn
			if tc.http {
				ts := newReplayServer(t, x)
				hc := NewHTTPConn(ts.url, ts.srv.Client())
				t.Cleanup(func() { hc.Close() })
				conn = hc
			} else {
				e, err := replay.NewEngine(x, replay.EngineOptions{Mode: replay.Keyed})
				if err != nil {
					t.Fatal(err)
				}
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				done := make(chan error, 1)
				go func() {
					done <- replay.ServeStdio(context.Background(), e, inR, outW, replay.StdioOptions{})
					outW.Close()
				}()
				sc := NewStdioConn(inW, outR)
				t.Cleanup(func() { inW.Close(); sc.Close(); <-done })
				conn = sc
			}
			rep, err := Verify(context.Background(), x, conn, VerifyOptions{Timeout: 10 * time.Second}, nil)
			if err != nil {
				t.Fatalf("verify against the tape's own replay: %v\n%+v", err, rep)
			}
			reported := map[int]bool{}
			skipped := 0
			for _, c := range rep.Calls {
				reported[c.Seq] = true
				compared := c.Skipped == "" && c.Negotiation == ""
				if got := Compared(x, rep.Server, c.Seq); got != compared {
					t.Errorf("seq %d %s: Compared says %v; verify reported skipped %q, negotiation %q", c.Seq, c.Method, got, c.Skipped, c.Negotiation)
				}
				if !compared {
					skipped++
				}
			}
			for i := range x.Len() {
				if Compared(x, rep.Server, i) && !reported[i] {
					t.Errorf("seq %d %s: Compared says verify compares it, but verify reported no call for it", i, x.Entry(i).Method)
				}
			}
			if skipped == 0 {
				t.Errorf("no call of %s was skipped or negotiated: the test checks nothing of what Compared excludes", tc.name)
			}
		})
	}
}
