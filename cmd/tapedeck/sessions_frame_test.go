package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tui"
)

// frameWriter is a program's output: it tells when the screen first
// holds want.
type frameWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (w *frameWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(ansi.Strip(w.buf.String()), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

// sessionsFrame is bare tapedeck's sessions view on a library whose index
// holds two small tapes, with a synthetic tape of msgs realistic messages
// (about 2 KB each) new in it: how long from opening the index to the
// first frame, whether the big tape was still being indexed then, and,
// when waitFresh, whether its row came in once the background refresh
// ended. The program is a real Bubble Tea program on pipes, 100×30.
func sessionsFrame(tb testing.TB, msgs int, waitFresh bool) (first time.Duration, indexing bool, size int64) {
	tb.Helper()
	state := tb.TempDir()
	tb.Setenv("XDG_STATE_HOME", state)
	tapes := filepath.Join(state, "tapedeck", "tapes")
	if err := os.MkdirAll(tapes, 0o700); err != nil {
		tb.Fatal(err)
	}
	for i, day := range []string{"2026-03-01", "2026-03-02"} {
		if err := os.WriteFile(filepath.Join(tapes, fmt.Sprintf("small-%d.jsonl", i)), []byte(libraryTape(day, "acme")), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	s := streams{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	l, _, err := openLibrary(context.Background(), s, nil)
	if err != nil {
		tb.Fatal(err)
	}
	l.Close()
	size, err = tape.WriteSynth(filepath.Join(tapes, "big.jsonl"), tape.SynthOptions{Messages: msgs, Seed: 1, Profile: tape.SynthRealistic})
	if err != nil {
		tb.Fatal(err)
	}

	out := &frameWriter{want: "library · 2 tapes", seen: make(chan struct{})}
	in, inW := io.Pipe()
	defer inW.Close()
	rows := make(chan int, 1)
	start := time.Now()
	l, err = openIndex(s, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer l.Close() // after cancel: once the refresh has ended
	defer cancel()
	m, err := newSessions(ctx, l)
	if err != nil {
		tb.Fatal(err)
	}
	p := tea.NewProgram(m, tea.WithInput(in), tea.WithOutput(out), tea.WithWindowSize(100, 30),
		tea.WithoutSignalHandler(), tea.WithFilter(func(m tea.Model, msg tea.Msg) tea.Msg {
			if sm, ok := m.(tui.Sessions); ok {
				select {
				case rows <- len(sm.Rows()):
				default:
				}
			}
			return msg
		}))
	ran := make(chan error, 1)
	go func() {
		_, err := p.Run()
		ran <- err
	}()
	defer func() {
		p.Quit()
		if err := <-ran; err != nil {
			tb.Errorf("the program: %v", err)
		}
	}()
	select {
	case <-out.seen:
		first = time.Since(start)
		_, indexing = l.Indexing()
	case <-time.After(60 * time.Second):
		tb.Fatalf("no frame with %q after 60 s:\n%s", out.want, out.buf.String())
	}
	if !waitFresh {
		return first, indexing, size
	}
	for deadline := time.Now().Add(60 * time.Second); ; {
		p.Send(tea.WindowSizeMsg{Width: 100, Height: 30})
		if n := <-rows; n == 3 {
			break
		} else if n != 2 {
			tb.Fatalf("the view lists %d tapes, want 2 then 3", n)
		}
		if time.Now().After(deadline) {
			tb.Fatal("the new tape's row did not come in within 60 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return first, indexing, size
}

// Bare tapedeck with a new tape in the library: the first frame lists the
// tapes the index held, without waiting for the new one, whose row comes
// in when the background refresh has indexed it.
func TestSessionsFirstFrameWhileIndexing(t *testing.T) {
	// Big enough (about 45 MB) that its refresh, facts only, cannot end
	// before the first frame.
	sessionsFrame(t, 20_000, true)
}

// BenchmarkSessionsFirstFrame is the sessions view's time to its first
// frame (opening the index, listing its rows, the program's first render)
// with a new realistic tape of BenchMessages(90 000) messages (about
// 176 MB) being indexed in the background. Budget: < 200 ms.
func BenchmarkSessionsFirstFrame(b *testing.B) {
	msgs := tape.BenchMessages(90_000)
	var total time.Duration
	for i := 0; i < b.N; i++ {
		first, indexing, size := sessionsFrame(b, msgs, false)
		total += first
		if !indexing {
			b.Logf("the %.0f MB tape was no longer being indexed at the first frame", float64(size)/1e6)
		}
		b.ReportMetric(float64(size)/1e6, "MB-tape")
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-first-frame")
	fmt.Fprintf(os.Stderr, "sessions view: first frame in %v (mean of %d) with a %d-message tape being indexed\n", total/time.Duration(b.N), b.N, msgs)
}
