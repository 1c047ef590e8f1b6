package upstream

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// A request the tape lacks falls through to the live server (here the
// replay's own HTTP edge serving another tape), and the episode appended
// to the tape is recorded through record.Session: the redaction rules
// apply to it (a key and a value rule, in both directions), between a
// $transport/start and a $transport/close of the new episode.
func TestFallthroughRedactsEpisode(t *testing.T) {
	call := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"login","arguments":{"apiKey":"sk-live-123"}}}`
	liveTape := buildIndex(t, nil,
		hline{"send", call, map[string]any{"transport": "http", "http": "POST", "status": 200}},
		hline{"recv", `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"token sk-live-456"}]}}`, map[string]any{"transport": "http", "http": "POST", "status": 200}},
	)
	live := newReplayServerMode(t, liveTape, replay.Loose)

	served := buildIndex(t, nil,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, nil},
		hline{"recv", `{"jsonrpc":"2.0","id":1,"result":{}}`, nil},
	)
	e, err := replay.NewEngine(served, replay.EngineOptions{Mode: replay.Loose})
	if err != nil {
		t.Fatal(err)
	}
	var episodes bytes.Buffer
	ft := NewFallthrough(&Fallback{URL: live.url, Tape: &episodes, Server: "s",
		Redact: &tape.Redactor{Keys: []string{"apiKey"}, Values: []*regexp.Regexp{regexp.MustCompile(`sk-live-\d+`)}}})
	in := `{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n" + strings.Replace(call, `"id":7`, `"id":"c"`, 1) + "\n"
	pr, pw := newSlowInput(in)
	var out lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- replay.ServeStdio(context.Background(), e, pr, &out, replay.StdioOptions{Miss: ft.Miss, Peek: ft.Peek})
	}()
	// Wait for the live answer before the client goes.
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), `"id":"c"`) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	pw.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ft.Close(); err != nil {
		t.Fatalf("Close: %v, expected no error writing the episode", err)
	}
	got := out.String()
	if !strings.Contains(got, `"id":"c","result":{"content":[{"type":"text","text":"token sk-live-456"}]}`) {
		t.Fatalf("the client got %s; expected the live server's answer to \"c\", unredacted", got)
	}
	if fell := ft.Fell(); len(fell) != 1 || string(fell[0].ID) != `"c"` {
		t.Errorf("Fell = %+v, expected the one request \"c\"", fell)
	}
	tp := episodes.String()
	for _, secret := range []string{"sk-live-123", "sk-live-456"} {
		if strings.Contains(tp, secret) {
			t.Errorf("the episode holds %s, which a rule redacts:\n%s", secret, tp)
		}
	}
	lines := strings.Split(strings.TrimSpace(tp), "\n")
	if len(lines) != 4 || !strings.Contains(lines[0], tape.MethodStart) || !strings.Contains(lines[0], `"episode":"new"`) ||
		!strings.Contains(lines[1], `"dir":"send"`) || !strings.Contains(lines[1], tape.RedactedMarker) || !strings.Contains(lines[1], `"redacted"`) ||
		!strings.Contains(lines[2], `"dir":"recv"`) || !strings.Contains(lines[2], "token "+tape.RedactedMarker) ||
		!strings.Contains(lines[3], tape.MethodClose) {
		t.Errorf("the episode: expected start, the redacted request and answer, close; found %d lines:\n%s", len(lines), tp)
	}
}

// newSlowInput is a client's stdin: in, then open until pw is closed.
func newSlowInput(in string) (*io.PipeReader, *io.PipeWriter) {
	pr, pw := io.Pipe()
	go func() { _, _ = io.WriteString(pw, in) }()
	return pr, pw
}

// lockedBuffer is the client's stdout, written by the edge and read by
// the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
