package replay

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// liveScript is a stdio MCP server in sh: it answers initialize, and
// then, on the first request, does what onRequest says.
func liveScript(onRequest string) []string {
	return []string{"-c", `while IFS= read -r line; do
  case "$line" in
    *'"method":"initialize"'*) echo '{"jsonrpc":"2.0","id":"tapedeck-fallback-initialize","result":{"protocolVersion":"2025-06-18","capabilities":{},"serverInfo":{"name":"live","version":"1"}}}' ;;
    *'"method":"notifications/'*) ;;
    *) ` + onRequest + ` ;;
  esac
done`}
}

type lockedTape struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedTape) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedTape) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// A request the tape lacks goes to a live server that exits on it, or
// never answers it: the client gets a JSON-RPC error saying so (at once,
// or after the timeout), and the tape and the outcome say what happened
// (the client was left waiting while stderr said the server answered).
func TestServeStdioFallbackServerDiesOrHangs(t *testing.T) {
	for _, tc := range []struct {
		name, onRequest, want string
		within                time.Duration
	}{
		{"exits", "exit 0", "the live server ended before answering", 3 * time.Second},
		{"hangs", ":", "the live server did not answer in 400ms", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := mustEngine(t, sessionTape(t), EngineOptions{Mode: Keyed})
			tp := &lockedTape{}
			fb := &Fallback{Command: "sh", Args: liveScript(tc.onRequest), Tape: tp, Server: "srv", Timeout: 400 * time.Millisecond}
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			type result struct {
				fell []FellThrough
				err  error
			}
			done := make(chan result, 1)
			go func() {
				fell, err := ServeStdioFallback(context.Background(), e, inR, outW, StdioOptions{}, fb)
				outW.Close()
				done <- result{fell, err}
			}()
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			io.WriteString(inW, liveInit+"\n"+liveInited+"\n")
			<-lines // the tape's answer to initialize
			start := time.Now()
			io.WriteString(inW, `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"never-recorded"}}`+"\n")
			var got string
			select {
			case got = <-lines:
			case <-time.After(tc.within):
				t.Fatalf("no answer to the call %v after it fell through to a live server that %s", tc.within, tc.name)
			}
			if !strings.Contains(got, `"id":9`) || !strings.Contains(got, `"error"`) || !strings.Contains(got, tc.want) {
				t.Errorf("the client got %s, want an error to id 9 saying %q", got, tc.want)
			}
			t.Logf("answered in %v", time.Since(start).Round(time.Millisecond))
			inW.Close()
			r := <-done
			if r.err != nil {
				t.Fatal(r.err)
			}
			if len(r.fell) != 1 || r.fell[0].Answered() || !strings.Contains(r.fell[0].Outcome, tc.want) {
				t.Errorf("fell through: %+v, want one call, not answered: %s", r.fell, tc.want)
			}
			if s := tp.String(); !strings.Contains(s, `"method":"$transport/unanswered","params":{"id":9,"method":"tools/call","reason":"`+tc.want) {
				t.Errorf("the tape lacks the unanswered call:\n%s", s)
			}
		})
	}
}

// A live Streamable HTTP server that never answers initialize: the client
// gets an error saying so after the timeout, not "replay mismatch".
func TestServeStdioFallbackURLHangs(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	e := mustEngine(t, sessionTape(t), EngineOptions{Mode: Keyed})
	fb := &Fallback{URL: srv.URL, Tape: io.Discard, Server: "srv", Timeout: 300 * time.Millisecond}
	in := strings.NewReader(liveInit + "\n" + liveInited + "\n" + `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"never-recorded"}}` + "\n")
	var out bytes.Buffer
	if _, err := ServeStdioFallback(context.Background(), e, in, &out, StdioOptions{}, fb); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	const want = `"message":"tapedeck replay --fallback: the live server could not be started: the live server did not answer initialize in 300ms`
	if !strings.Contains(last, `"id":9`) || !strings.Contains(last, want) {
		t.Errorf("the client got %s\nwant an error to id 9 starting %s", last, want)
	}
}
