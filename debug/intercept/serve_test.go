package intercept

import (
	"bufio"
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/debug"
)

// syncBuffer is a tape in memory.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// An attached client's request is held, forwarded on the verdict to the
// server (cat, which says it back), recorded, and Close ends the service.
func TestServeStdioHoldsAndRecords(t *testing.T) {
	s := breaking(t, "tools/call")
	var tp syncBuffer
	addr, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0", Command: "cat", Tape: &tp, Server: "cat", Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	next(t, s, debug.InterceptInfo) // a client attached
	if _, err := c.Write([]byte(call + "\n")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"send", "recv"} { // cat says the request back: held again
		ev := next(t, s, debug.InterceptHeld)
		if string(ev.Dir) != dir || string(ev.Raw) != call {
			t.Fatalf("held %s %s, want %s %s", ev.Dir, ev.Raw, dir, call)
		}
		s.Settle(ev.ID, debug.Verdict{Action: debug.Forward})
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != call {
		t.Fatalf("the client read %q (%v), want %s", line, err, call)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := tp.String()
	if strings.Count(got, `"method":"tools/call"`) != 2 || !strings.Contains(got, "$transport/start") {
		t.Errorf("the tape holds\n%s\nwant the start record and the call both ways", got)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("the listener still accepts after Close")
	}
}

func TestServeNeedsOneServer(t *testing.T) {
	s := New()
	defer s.Close()
	if _, err := s.Start(context.Background(), Options{Listen: "127.0.0.1:0"}); err == nil || !strings.Contains(err.Error(), "found neither") {
		t.Errorf("Serve without a server: %v", err)
	}
}
