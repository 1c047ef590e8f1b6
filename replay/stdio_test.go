package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
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
			var fds [2]int
			if err := syscall.Pipe2(fds[:], syscall.O_CLOEXEC); err != nil {
				t.Fatal(err)
			}
			return os.NewFile(uintptr(fds[0]), "|0"), os.NewFile(uintptr(fds[1]), "|1")
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

// Once a StdioConn is closed, what the server writes is read and dropped:
// a server that keeps writing after verify stopped listening is not left
// blocked on a full pipe.
func TestStdioConnDrainsAfterClose(t *testing.T) {
	pr, pw := io.Pipe()
	wrote := make(chan error, 1)
	go func() {
		for i := range 2000 {
			if _, err := fmt.Fprintf(pw, `{"jsonrpc":"2.0","method":"notifications/message","params":{"n":%d}}`+"\n", i); err != nil {
				wrote <- err
				return
			}
		}
		wrote <- pw.Close()
	}()
	c := NewStdioConn(io.Discard, pr)
	if msg, err := c.Recv(context.Background()); err != nil || !strings.Contains(string(msg), `"n":0`) {
		t.Fatalf("first message %q, %v", msg, err)
	}
	c.Close()
	select {
	case err := <-wrote:
		if err != nil {
			t.Fatalf("the server's writes failed: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server is still blocked writing its stdout 5 s after the conn was closed")
	}
	if _, err := c.Recv(context.Background()); !errors.Is(err, io.EOF) {
		t.Errorf("Recv after Close and the end of output: %v, want io.EOF", err)
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
