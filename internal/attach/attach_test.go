package attach

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
)

// session is an in-process stand-in for a tapedeck debug listener: it
// accepts one connection and hands it to handle, then closes it.
func session(t *testing.T, handle func(c net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		// Nothing here may hang the test past its own deadline.
		c.SetDeadline(time.Now().Add(20 * time.Second))
		handle(c)
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// run is Run with a deadline, so that a relay that never ends fails the
// test instead of hanging it.
func run(t *testing.T, addr string, stdin io.Reader, stdout io.Writer) error {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- Run(ctx, addr, stdin, stdout) }()
	select {
	case err := <-done:
		return err
	case <-time.After(15 * time.Second):
		cancel()
		<-done
		t.Fatal("Run did not return within 15 s")
		return nil
	}
}

const refusalLine = `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"tapedeck debug: a client is already attached"}}` + "\n"

// TestRelayBothWays: the client's bytes reach the session as they are, and
// the client's EOF closes the connection's write side (the session reads
// to its end before it answers); the session's lines reach stdout byte for
// byte, the longest line jsonrpc.MaxLine allows (newline included) among
// them, and its close ends the relay with nil.
func TestRelayBothWays(t *testing.T) {
	long := make([]byte, 1<<20) // the upstream is not split into lines: any length goes
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	in := `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}` + "\n" +
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"é✓"}}` + "\r\n" +
		`{"jsonrpc":"2.0","id":2,"method":"x","params":{"s":"` + string(long) + `"}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled"}` // no newline at the end
	atLimit := append([]byte(`{"jsonrpc":"2.0","id":2,"result":{"s":"`), bytes.Repeat([]byte{'z'}, jsonrpc.MaxLine)...)
	atLimit = append(atLimit[:jsonrpc.MaxLine-len(`"}}`+"\n")], `"}}`+"\n"...)
	if len(atLimit) != jsonrpc.MaxLine {
		t.Fatalf("the line at the limit has %d bytes, want %d", len(atLimit), jsonrpc.MaxLine)
	}
	out := [][]byte{
		[]byte(`{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18"}}` + "\n"),
		// A refusal's shape after the first line is an answer like any other.
		[]byte(refusalLine),
		[]byte(`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"é✓"}]}}` + "\r\n"),
		atLimit,
		[]byte(`{"jsonrpc":"2.0","method":"notifications/message","params":{}}`), // no newline at the end
	}
	var got []byte
	addr := session(t, func(c net.Conn) {
		got, _ = io.ReadAll(c) // ends only when the client's end closes the write side
		for _, l := range out {
			if _, err := c.Write(l); err != nil {
				return
			}
		}
	})
	var stdout bytes.Buffer
	err := run(t, addr, strings.NewReader(in), &stdout)
	if err != nil {
		t.Fatalf("Run: %v; want nil", err)
	}
	if string(got) != in {
		t.Errorf("the session got %d bytes, want the client's %d as they are (first difference at %d)", len(got), len(in), firstDiff(got, []byte(in)))
	}
	want := bytes.Join(out, nil)
	if !bytes.Equal(stdout.Bytes(), want) {
		t.Errorf("stdout got %d bytes, want the session's %d as they are (first difference at %d)", stdout.Len(), len(want), firstDiff(stdout.Bytes(), want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestLineOverLimit: a session line one byte over jsonrpc.MaxLine ends the
// relay with an error that says so; the lines before it were relayed, none
// of it was.
func TestLineOverLimit(t *testing.T) {
	first := `{"jsonrpc":"2.0","id":0,"result":{}}` + "\n"
	over := append(bytes.Repeat([]byte{'z'}, jsonrpc.MaxLine), '\n')
	addr := session(t, func(c net.Conn) {
		io.WriteString(c, first)
		c.Write(over)
		io.WriteString(c, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
		io.Copy(io.Discard, c)
	})
	var stdout bytes.Buffer
	err := run(t, addr, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), &stdout)
	if want := fmt.Sprintf("the session sent a line over %d bytes", jsonrpc.MaxLine); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run: %v; want an error with %q", err, want)
	}
	if stdout.String() != first {
		t.Errorf("stdout got %d bytes (%.80q), want only the line before the long one", stdout.Len(), stdout.String())
	}
}

// TestRefusal: the session's refusal as its first line is Run's error,
// naming why (without the "tapedeck debug: " prefix), and never reaches
// stdout; lines that only look like it are relayed.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		name, line, err string
	}{
		{"refusal", refusalLine, "attach: the session refused the client: a client is already attached"},
		{"http client", `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"tapedeck debug: an HTTP client has the session"}}` + "\n", "attach: the session refused the client: an HTTP client has the session"},
		{"an id", `{"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"tapedeck debug: a client is already attached"}}` + "\n", ""},
		{"another code", `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"tapedeck debug: a client is already attached"}}` + "\n", ""},
		{"another program", `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"a client is already attached"}}` + "\n", ""},
		{"not JSON", "tapedeck debug: a client is already attached\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			addr := session(t, func(c net.Conn) {
				io.WriteString(c, tc.line)
				io.Copy(io.Discard, c)
			})
			var stdout bytes.Buffer
			err := run(t, addr, strings.NewReader(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), &stdout)
			if tc.err == "" {
				if err != nil || stdout.String() != tc.line {
					t.Errorf("Run: %v, stdout %q; want nil and the line relayed", err, stdout.String())
				}
				return
			}
			if err == nil || err.Error() != tc.err {
				t.Errorf("Run: %v; want %q", err, tc.err)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout got %q; want nothing", stdout.String())
			}
		})
	}
}

// TestDeadAddress: nothing listening at the address is an error that names
// it and what was expected there.
func TestDeadAddress(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	err = run(t, addr, strings.NewReader(""), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "attach "+addr+":") || !strings.Contains(err.Error(), "is tapedeck debug listening there?") {
		t.Errorf("Run: %v; want an error naming %s and tapedeck debug", err, addr)
	}
}

// slowInput gives one line at once, then one every 5 ms until closed: a
// client still sending.
type slowInput struct {
	first  bool
	closed chan struct{}
}

func (s *slowInput) Read(p []byte) (int, error) {
	if !s.first {
		s.first = true
		return copy(p, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), nil
	}
	select {
	case <-s.closed:
		return 0, io.EOF
	case <-time.After(5 * time.Millisecond):
		return copy(p, `{"jsonrpc":"2.0","method":"notifications/progress","params":{}}`+"\n"), nil
	}
}

// TestCutOff: the session closing while the client is still sending is an
// error, whether the client is idle then (its stdin open) or still writing
// (its writes to the connection fail).
func TestCutOff(t *testing.T) {
	hangUp := func(c net.Conn) {
		buf := make([]byte, 1)
		for {
			if _, err := c.Read(buf); err != nil || buf[0] == '\n' {
				return
			}
		}
	}
	const want = "closed the connection while the client was still sending"
	t.Run("idle", func(t *testing.T) {
		addr := session(t, hangUp)
		pr, pw := io.Pipe()
		defer pw.Close()
		go io.WriteString(pw, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n")
		if err := run(t, addr, pr, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %v; want %q", err, want)
		}
	})
	t.Run("reset", func(t *testing.T) {
		// A session that closes with the client's bytes unread resets the
		// connection: the same cut-off, not a read error.
		addr := session(t, func(c net.Conn) {
			hangUp(c)
			c.(*net.TCPConn).SetLinger(0)
		})
		pr, pw := io.Pipe()
		defer pw.Close()
		go io.WriteString(pw, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n")
		if err := run(t, addr, pr, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %v; want %q", err, want)
		}
	})
	t.Run("writing", func(t *testing.T) {
		addr := session(t, hangUp)
		in := &slowInput{closed: make(chan struct{})}
		defer close(in.closed)
		if err := run(t, addr, in, io.Discard); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Run: %v; want %q", err, want)
		}
	})
}

// failing fails every call with its error, after n good ones.
type failing struct {
	n   int
	err error
}

func (f *failing) Read(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	f.n--
	return copy(p, `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{}}`+"\n"), nil
}

func (f *failing) Write(p []byte) (int, error) {
	if f.n == 0 {
		return 0, f.err
	}
	f.n--
	return len(p), nil
}

// TestStdioErrors: a failed read of stdin or write to stdout is Run's
// error, saying which; the session was told of the client's end.
func TestStdioErrors(t *testing.T) {
	broken := errors.New("input/output error")
	t.Run("stdin", func(t *testing.T) {
		sawEOF := make(chan bool, 1)
		addr := session(t, func(c net.Conn) {
			_, err := io.Copy(io.Discard, c)
			sawEOF <- err == nil
		})
		err := run(t, addr, &failing{n: 1, err: broken}, io.Discard)
		if !errors.Is(err, broken) || !strings.Contains(err.Error(), "attach: reading the client's input: input/output error") {
			t.Errorf("Run: %v; want the stdin error, said to be the client's input", err)
		}
		select {
		case ok := <-sawEOF:
			if !ok {
				t.Error("the session's read ended in an error, not at the end of the client's input")
			}
		case <-time.After(10 * time.Second):
			t.Error("the session was not told of the client's end within 10 s")
		}
	})
	t.Run("stdout", func(t *testing.T) {
		addr := session(t, func(c net.Conn) {
			io.WriteString(c, `{"jsonrpc":"2.0","id":0,"result":{}}`+"\n")
			io.WriteString(c, `{"jsonrpc":"2.0","id":1,"result":{}}`+"\n")
			io.Copy(io.Discard, c)
		})
		out := &failing{n: 1, err: broken}
		pr, pw := io.Pipe()
		defer pw.Close() // the client keeps its input open: only stdout's error ends the relay
		err := run(t, addr, pr, out)
		if !errors.Is(err, broken) || !strings.Contains(err.Error(), "attach: writing to the client: input/output error") {
			t.Errorf("Run: %v; want the stdout error, said to be the client's output", err)
		}
	})
}

// TestCancel: cancelling ctx ends the relay promptly with nil, while both
// sides are still open, and leaves no goroutine behind once the client's
// input (which no Run can interrupt) ends.
func TestCancel(t *testing.T) {
	before := runtime.NumGoroutine()
	addr := session(t, func(c net.Conn) {
		io.WriteString(c, `{"jsonrpc":"2.0","method":"notifications/message","params":{}}`+"\n")
		io.Copy(io.Discard, c) // says nothing more; ends when the client closes
	})
	pr, pw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	relaying := &signalWriter{wrote: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- Run(ctx, addr, pr, relaying) }()
	select {
	case <-relaying.wrote:
	case err := <-done:
		t.Fatalf("Run: %v before the cancel", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run relayed nothing within 10 s")
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after cancel: %v; want nil", err)
		}
	case <-time.After(time.Second):
		t.Fatal("Run did not return within 1 s of the cancel")
	}
	// Run's close of the connection ends its reader and the session's
	// goroutine; only the stdin reader is left, blocked in the pipe's Read.
	settles(t, before+1, "the cancel, stdin still open")
	pw.Close()
	settles(t, before, "the end of stdin")
}

// settles waits up to 5 s for at most want goroutines to run.
func settles(t *testing.T, want int, after string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= want {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines 5 s after %s, want at most %d:\n%s", n, after, want, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// signalWriter closes wrote at its first write.
type signalWriter struct {
	once  sync.Once
	wrote chan struct{}
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.once.Do(func() { close(w.wrote) })
	return len(p), nil
}
