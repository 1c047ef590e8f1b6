package mcphttp

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// Serve answers until ctx is done, then runs Stop (which ends a handler
// that would otherwise hold its request open) and returns nil once the
// request in flight ended.
func TestServeStopsOnContext(t *testing.T) {
	ln, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var stopped atomic.Int32
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-stop // an open stream: only Stop ends it
			return
		}
		io.WriteString(w, "ok")
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, h, ServeOptions{Grace: 5 * time.Second, Stop: func() { stopped.Add(1); close(stop) }})
	}()
	resp, err := http.Get("http://" + ln.Addr().String() + "/")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "ok" {
		t.Fatalf("answer %q, expected ok", b)
	}
	held, err := http.Get("http://" + ln.Addr().String() + "/hold")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Body.Close()
	start := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Serve after ctx: %v, expected nil (the held request ended with Stop)", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return within 10s of ctx ending")
	}
	if stopped.Load() != 1 || time.Since(start) > 4*time.Second {
		t.Errorf("Stop ran %d times, Serve took %v: expected Stop once and no wait for the grace", stopped.Load(), time.Since(start))
	}
}
