// Package attach is the client side of tapedeck attach: a stdio shim a
// client launches as its server command, relaying its lines to a tapedeck
// debug session's listener and the session's lines back.
package attach

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
)

// Run is tapedeck attach: it copies stdin to the debug session at addr
// and the session's lines to stdout, until the session ends (or ctx, which
// ends it with nil). The client's end of stdin closes the connection's
// write side, so the session sees it. The error says when the session
// refused the client, cut it off while it was still sending, or sent a
// line over jsonrpc.MaxLine, and when reading stdin or writing stdout
// failed.
//
// Run does not wait for a stdin Read or a stdout Write in progress when it
// returns (no io.Reader can be interrupted): the goroutine doing it ends
// when that call returns, and drops what it got.
func Run(ctx context.Context, addr string, stdin io.Reader, stdout io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("attach %s: %w (is tapedeck debug listening there?)", addr, err)
	}
	defer c.Close()
	up := make(chan error, 1)
	go func() { up <- relayUp(c, stdin) }()
	down := make(chan error, 1)
	go func() { down <- relayDown(stdout, c) }()
	cutOff := fmt.Errorf("attach: the session at %s closed the connection while the client was still sending (the debugger quit or restarted the run)", addr)
	select {
	case <-ctx.Done():
		return nil
	case err := <-down:
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			return err
		}
		// The session closed (or reset) the connection: after the client
		// closed its input, that is the end; before, the client was cut
		// off (the debugger quit or restarted the run), and its caller
		// should know.
		select {
		case err := <-up:
			if errors.Is(err, errSessionWrite) {
				return cutOff
			}
			return err
		case <-time.After(200 * time.Millisecond):
			return cutOff
		}
	case err := <-up:
		if err != nil && !errors.Is(err, errSessionWrite) {
			return err // stdin failed: the client is gone
		}
		// The client closed its input (the session was told), or the
		// session stopped taking it: the session's end, or its refusal,
		// says which.
		select {
		case <-ctx.Done():
			return nil
		case derr := <-down:
			switch {
			case errors.Is(derr, syscall.ECONNRESET):
			case derr != nil:
				return derr
			}
			if err == nil {
				return nil
			}
			return cutOff
		}
	}
}

// errSessionWrite marks relayUp's error when the session, not stdin, failed.
var errSessionWrite = errors.New("writing to the session")

// relayUp copies the client's bytes to the session as they come, then
// closes the connection's write side. It returns nil at the end of stdin,
// else which side failed.
func relayUp(c net.Conn, stdin io.Reader) error {
	src := &readSide{r: stdin}
	_, err := io.Copy(c, src)
	if tc, ok := c.(*net.TCPConn); ok {
		tc.CloseWrite() // the client closed its end (or failed): tell the session
	}
	switch {
	case src.err != nil:
		return fmt.Errorf("attach: reading the client's input: %w", src.err)
	case err != nil:
		return fmt.Errorf("attach: %w: %w", errSessionWrite, err)
	}
	return nil
}

// readSide remembers the error its reader returned, to tell it from the
// writer's in an io.Copy.
type readSide struct {
	r   io.Reader
	err error
}

func (s *readSide) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if err != nil && err != io.EOF {
		s.err = err
	}
	return n, err
}

// relayDown copies the session's lines to the client, unless the first is
// the session's refusal (an error with "id":null, code -32000 and a
// message from tapedeck debug), which it returns as the error instead.
func relayDown(w io.Writer, r io.Reader) error {
	first := true
	src := &readSide{r: r}
	err := jsonrpc.ReadLines(src, 0, func(line []byte) error {
		if first {
			first = false
			if msg, ok := refusal(line); ok {
				return errors.New("attach: the session refused the client: " + msg)
			}
		}
		if _, err := w.Write(line); err != nil {
			return fmt.Errorf("attach: writing to the client: %w", err)
		}
		return nil
	}, func() error { return fmt.Errorf("attach: the session sent a line over %d bytes", jsonrpc.MaxLine) })
	if src.err != nil && errors.Is(err, src.err) {
		return fmt.Errorf("attach: reading from the session: %w", err)
	}
	return err
}

// refusal reports whether line is the session's refusal, and its reason.
func refusal(line []byte) (string, bool) {
	var m struct {
		ID    json.RawMessage `json:"id"`
		Error *struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(line, &m) != nil || string(m.ID) != "null" || m.Error == nil || m.Error.Code != -32000 {
		return "", false
	}
	return strings.CutPrefix(m.Error.Message, "tapedeck debug: ")
}
