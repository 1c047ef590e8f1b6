package upstream

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
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

// A recorded handshake and nothing else: every call falls through.
const (
	recInit    = `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"rec","version":"1"}}}`
	recInitAns = `{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}},"serverInfo":{"name":"srv","version":"1"}}}`
	inited     = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	clientInit = `{"jsonrpc":"2.0","id":"a","method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"live","version":"9"}}}`
	neverCall  = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"never-recorded"}}`
)

func handshakeEngine(t *testing.T) *replay.Engine {
	t.Helper()
	x := buildIndex(t, nil, hline{"send", recInit, nil}, hline{"recv", recInitAns, nil}, hline{"send", inited, nil})
	e, err := replay.NewEngine(x, replay.EngineOptions{Mode: replay.Keyed})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// A request the tape lacks goes to a live server that exits on it, or
// never answers it: the client gets a JSON-RPC error saying so (at once,
// or after the timeout), and the tape and the outcome say what happened
// (the client was left waiting while stderr said the server answered).
func TestFallthroughServerDiesOrHangs(t *testing.T) {
	for _, tc := range []struct {
		name, onRequest, want string
		within                time.Duration
	}{
		{"exits", "exit 0", "the live server ended before answering", 3 * time.Second},
		{"hangs", ":", "the live server did not answer in 400ms", 3 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := handshakeEngine(t)
			tp := &lockedBuffer{}
			ft := NewFallthrough(&Fallback{Command: "sh", Args: liveScript(tc.onRequest), Tape: tp, Server: "srv", Timeout: 400 * time.Millisecond})
			inR, inW := io.Pipe()
			outR, outW := io.Pipe()
			done := make(chan error, 1)
			go func() {
				err := replay.ServeStdio(context.Background(), e, inR, outW, replay.StdioOptions{Miss: ft.Miss, Peek: ft.Peek})
				if cerr := ft.Close(); err == nil {
					err = cerr
				}
				outW.Close()
				done <- err
			}()
			lines := make(chan string, 16)
			go func() {
				sc := bufio.NewScanner(outR)
				for sc.Scan() {
					lines <- sc.Text()
				}
				close(lines)
			}()
			io.WriteString(inW, clientInit+"\n"+inited+"\n")
			if got := <-lines; !strings.Contains(got, `"id":"a","result"`) {
				t.Fatalf("the client got %s, expected the tape's answer to initialize", got)
			}
			start := time.Now()
			io.WriteString(inW, neverCall+"\n")
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
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			for range lines {
			}
			fell := ft.Fell()
			if len(fell) != 1 || fell[0].Answered() || !strings.Contains(fell[0].Outcome, tc.want) {
				t.Errorf("fell through: %+v, want one call, not answered: %s", fell, tc.want)
			}
			rep := e.Report()
			replay.FallbackReport(&rep, fell)
			if len(rep.Divergences) != 1 || string(rep.Divergences[0].RequestID) != "9" {
				t.Errorf("divergences after FallbackReport: %+v, want the unanswered call 9 kept", rep.Divergences)
			}
			s := tp.String()
			if !strings.Contains(s, `"method":"`+tape.MethodUnanswered+`","params":{"id":9,"method":"tools/call","reason":"`+tc.want) {
				t.Errorf("the tape lacks the unanswered call:\n%s", s)
			}
			if tc.name == "exits" && !strings.Contains(s, `"reason":"the live server ended before answering"}`) {
				t.Errorf("the episode's close record does not say the live server ended:\n%s", s)
			}
		})
	}
}

// A live Streamable HTTP server that never answers initialize: the client
// gets an error saying so after the timeout, not "replay mismatch".
func TestFallthroughURLHangs(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	e := handshakeEngine(t)
	ft := NewFallthrough(&Fallback{URL: srv.URL, Tape: io.Discard, Server: "srv", Timeout: 300 * time.Millisecond})
	in := strings.NewReader(clientInit + "\n" + inited + "\n" + neverCall + "\n")
	var out bytes.Buffer
	if err := replay.ServeStdio(context.Background(), e, in, &out, replay.StdioOptions{Miss: ft.Miss, Peek: ft.Peek}); err != nil {
		t.Fatal(err)
	}
	if err := ft.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	last := lines[len(lines)-1]
	const want = `"message":"the live server could not be started: the live server did not answer initialize in 300ms`
	if !strings.Contains(last, `"id":9`) || !strings.Contains(last, want) {
		t.Errorf("the client got %s\nwant an error to id 9 starting %s", last, want)
	}
}
