package replay

import (
	"bytes"
	"context"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
)

// ServeStdio ends when ctx does, even while the client keeps its end of the
// pipe open and sends nothing (the read is unblocked by closing r, or left
// to its goroutine): over an io.Pipe, an OS pipe the runtime polls (read in
// the serving goroutine), and a blocking OS pipe (read by a goroutine).
func TestServeStdioStopsOnCancel(t *testing.T) {
	pipes := map[string]func() (io.ReadCloser, io.Closer){
		"io.Pipe": func() (io.ReadCloser, io.Closer) { return io.Pipe() },
		"polled": func() (io.ReadCloser, io.Closer) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		},
		"blocking": func() (io.ReadCloser, io.Closer) {
			r, w, err := blockingPipe()
			if err != nil {
				t.Fatal(err)
			}
			return r, w
		},
	}
	for name, pipe := range pipes {
		for _, speed := range []float64{0, 1} {
			e := mustEngine(t, sessionTape(t), EngineOptions{Speed: speed})
			r, w := pipe()
			if _, ok := r.(*os.File); ok && name == "polled" != interruptible(r) {
				t.Fatalf("%s: interruptible = %v", name, interruptible(r))
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- ServeStdio(ctx, e, r, io.Discard, StdioOptions{}) }()
			time.Sleep(20 * time.Millisecond)
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("%s, speed %v: ServeStdio returned %v after cancel, want nil", name, speed, err)
				}
			case <-time.After(2 * time.Second):
				t.Fatalf("%s, speed %v: ServeStdio still running 2 s after its context ended", name, speed)
			}
			w.Close()
			r.Close()
		}
	}
}

// With --speed, answers still queued when the client closes its input are
// sent at their time, not dropped.
func TestServeStdioFlushesQueueAtEndOfInput(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{Speed: 0.2}) // recorded 10 ms later: due 50 ms after the request
	var out bytes.Buffer
	start := time.Now()
	if err := ServeStdio(context.Background(), e, strings.NewReader(liveInit+"\n"), &out, StdioOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"id":"a","result"`) {
		t.Fatalf("the queued initialize answer was dropped: %q", out.String())
	}
	if took := time.Since(start); took < 40*time.Millisecond {
		t.Errorf("answered after %v, want the recorded 10 ms at speed 0.2 (50 ms)", took)
	}
}

// A matched request the tape holds no answer to (a torn last line) is
// answered with CodeNoAnswer instead of left waiting, and reported.
func TestServeStdioUnanswered(t *testing.T) {
	x := buildIndex(t, line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"}}`})
	e := mustEngine(t, x, EngineOptions{})
	var out bytes.Buffer
	if err := ServeStdio(context.Background(), e, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo"}}`+"\n"), &out, StdioOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"id":7,"error":{"code":-32093`) {
		t.Fatalf("answer %q, want error -32093", out.String())
	}
	if rep := e.Report(); len(rep.Unanswered) != 1 || rep.Unanswered[0].Line != 1 || rep.Err() != nil {
		t.Errorf("report: %+v, err %v", rep.Unanswered, rep.Err())
	}
}

// ServeStdio answers a line over jsonrpc.MaxLine with -32600 and goes on with the
// next (its instant path splits lines itself).
func TestServeStdioLineTooLong(t *testing.T) {
	e := mustEngine(t, sessionTape(t), EngineOptions{Mode: Loose})
	in := strings.Repeat("x", jsonrpc.MaxLine+10) + "\n" + `{"jsonrpc":"2.0","id":"p","method":"ping"}` + "\n"
	var out bytes.Buffer
	if err := ServeStdio(context.Background(), e, strings.NewReader(in), &out, StdioOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"code":-32600`) || !strings.Contains(lines[0], "over the limit") || !strings.Contains(lines[1], `"id":"p"`) {
		t.Fatalf("outputs %.300q", lines)
	}
}

// The Miss hook (go-vcr's passthrough predicate) is offered a request the
// tape lacks: taken, the client gets what the hook writes and no divergence
// error; declined, the client gets the divergence. Peek keeps a line from
// the engine. The tape's own answers are served either way.
func TestServeStdioMissHook(t *testing.T) {
	in := `{"jsonrpc":"2.0","id":"a","method":"ping"}` + "\n" +
		`{"jsonrpc":"2.0","id":"z","method":"tools/call","params":{"name":"nope"}}` + "\n" +
		`{"jsonrpc":"2.0","id":"live-1","result":{}}` + "\n"
	for _, take := range []bool{true, false} {
		e := mustEngine(t, sessionTape(t), EngineOptions{Mode: Loose})
		var out bytes.Buffer
		var offered []string
		var divs []Divergence
		peeked := 0
		o := StdioOptions{
			OnDivergence: func(d Divergence) { divs = append(divs, d) },
			Miss: func(req []byte, d *Divergence, client func(msgs ...[]byte) error) bool {
				offered = append(offered, string(d.RequestID))
				if take {
					_ = client([]byte(`{"jsonrpc":"2.0","id":"z","result":{"live":true}}`))
				}
				return take
			},
			Peek: func(line []byte) bool {
				if strings.Contains(string(line), `"live-1"`) {
					peeked++
					return true
				}
				return false
			},
		}
		if err := ServeStdio(context.Background(), e, strings.NewReader(in), &out, o); err != nil {
			t.Fatal(err)
		}
		got := out.String()
		if len(offered) != 1 || offered[0] != `"z"` || peeked != 1 {
			t.Errorf("take %v: the hook was offered %q and peeked %d lines; expected the miss \"z\" once and one peeked line", take, offered, peeked)
		}
		if !strings.Contains(got, `"id":"a"`) {
			t.Errorf("take %v: the ping the tape answers is not served: %s", take, got)
		}
		live, diverged := strings.Contains(got, `"live":true`), strings.Contains(got, `"id":"z","error"`)
		if take && (!live || diverged || len(divs) != 0) {
			t.Errorf("taken: expected the hook's answer and no divergence, found %s and %d divergences", got, len(divs))
		}
		if !take && (live || !diverged || len(divs) != 1) {
			t.Errorf("declined: expected the divergence error, found %s and %d divergences", got, len(divs))
		}
	}
}
