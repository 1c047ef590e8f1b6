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
	"time"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
)

// Run is tapedeck attach: it copies stdin to the debug session at addr
// and the session's lines to stdout, until the session ends (or ctx).
// The error says when the session refused the client, or cut it off while
// it was still sending.
func Run(ctx context.Context, addr string, stdin io.Reader, stdout io.Writer) error {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("attach %s: %w (is tapedeck debug listening there?)", addr, err)
	}
	defer c.Close()
	up := make(chan error, 1)
	go func() {
		_, err := io.Copy(c, stdin)
		if tc, ok := c.(*net.TCPConn); ok {
			tc.CloseWrite() // the client closed its end: tell the session
		}
		up <- err
	}()
	down := make(chan error, 1)
	go func() { down <- relayDown(stdout, c) }()
	select {
	case err = <-down: // the session ended
	case <-ctx.Done():
		return nil
	}
	if err != nil {
		return err
	}
	// The session closed the connection: after the client closed its
	// input, that is the end; before, the client was cut off (the
	// debugger quit or restarted the run), and its caller should know.
	select {
	case <-up:
		return nil
	case <-time.After(200 * time.Millisecond):
		return fmt.Errorf("attach: the session at %s closed the connection while the client was still sending (the debugger quit or restarted the run)", addr)
	}
}

// relayDown copies the session's lines to the client, unless the first is
// the session's refusal (an error with "id":null, code -32000 and a
// message from tapedeck debug), which it returns as the error instead.
func relayDown(w io.Writer, r io.Reader) error {
	first := true
	return jsonrpc.ReadLines(r, 0, func(line []byte) error {
		if first {
			first = false
			if msg, ok := refusal(line); ok {
				return errors.New("attach: the session refused the client: " + msg)
			}
		}
		_, err := w.Write(line)
		return err
	}, func() error { return fmt.Errorf("attach: the session sent a line over %d bytes", jsonrpc.MaxLine) })
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
