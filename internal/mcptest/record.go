package mcptest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Directions of a tape line, from the client's side.
const (
	DirSend      = "send"      // client to server
	DirRecv      = "recv"      // server to client
	DirLifecycle = "lifecycle" // not a wire message
)

// TapeWriter writes NDJSON tape lines in mcporter's recording format: each
// line is a JSON-RPC message with a top-level "_meta" object
// {"dir","server","ts", extra keys...}. It is safe for concurrent use, so
// several recorders (several servers) can share one tape.
//
// It is a fixture-making tool for tests, not tapedeck's tape package.
type TapeWriter struct {
	// Now returns the timestamp of each line; nil means time.Now.
	Now func() time.Time

	mu  sync.Mutex
	w   io.Writer
	err error
}

// NewTapeWriter returns a TapeWriter that writes lines to w.
func NewTapeWriter(w io.Writer) *TapeWriter {
	return &TapeWriter{w: w}
}

// Err returns the first write error, if any.
func (tw *TapeWriter) Err() error {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.err
}

// Write appends msg, a JSON object, with a _meta object built from dir,
// server, the current time and extra (written in sorted key order after the
// three standard keys). The message bytes are kept as they are, minus
// surrounding whitespace: _meta is spliced in before the closing brace.
func (tw *TapeWriter) Write(dir, server string, msg []byte, extra map[string]any) error {
	msg = bytes.TrimSpace(msg)
	if len(msg) < 2 || msg[0] != '{' || msg[len(msg)-1] != '}' {
		return fmt.Errorf("mcptest: tape line for %s %s is not a JSON object: %.40q", dir, server, msg)
	}
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.err != nil {
		return tw.err
	}
	now := time.Now
	if tw.Now != nil {
		now = tw.Now
	}
	meta, err := metaJSON(dir, server, now(), extra)
	if err != nil {
		return err
	}
	var line bytes.Buffer
	line.Write(msg[:len(msg)-1])
	if len(bytes.TrimSpace(msg[1:len(msg)-1])) > 0 {
		line.WriteByte(',')
	}
	line.WriteString(`"_meta":`)
	line.Write(meta)
	line.WriteString("}\n")
	if _, err := tw.w.Write(line.Bytes()); err != nil {
		tw.err = err
	}
	return tw.err
}

// Lifecycle writes a lifecycle record {"jsonrpc":"2.0","method":method} such
// as "$transport/start".
func (tw *TapeWriter) Lifecycle(server, method string, extra map[string]any) error {
	m, err := json.Marshal(method)
	if err != nil {
		return err
	}
	return tw.Write(DirLifecycle, server, []byte(`{"jsonrpc":"2.0","method":`+string(m)+`}`), extra)
}

// metaJSON encodes the _meta object with a stable key order: dir, server, ts,
// then the extra keys sorted.
func metaJSON(dir, server string, ts time.Time, extra map[string]any) ([]byte, error) {
	var b bytes.Buffer
	field := func(k string, v any) error {
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return fmt.Errorf("mcptest: _meta key %s: %w", k, err)
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		return nil
	}
	b.WriteByte('{')
	// Same shape as JavaScript's Date.toISOString, which mcporter writes.
	stamp := ts.UTC().Format("2006-01-02T15:04:05.000Z")
	for _, kv := range [][2]string{{"dir", dir}, {"server", server}, {"ts", stamp}} {
		if err := field(kv[0], kv[1]); err != nil {
			return nil, err
		}
	}
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := field(k, extra[k]); err != nil {
			return nil, err
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// RecordingTransport is an [mcp.Transport] that delegates to another transport
// and writes every message read or written to a tape, like the SDK's
// LoggingTransport. It writes "$transport/start" on Connect and
// "$transport/close" on the first Close.
//
// Messages are re-encoded by the SDK's jsonrpc.EncodeMessage, so key order is
// the Go SDK's, not necessarily the wire's.
//
// Do not wrap an mcp.StreamableClientTransport with it: the SDK informs its
// HTTP connection of the negotiated session through an unexported method that
// a wrapper cannot forward, so the client would never open its standalone SSE
// stream. Record HTTP through record.Proxy instead (sdkclient --tape --url).
type RecordingTransport struct {
	Transport mcp.Transport
	Tape      *TapeWriter
	// Server names the server in each line's _meta.
	Server string
	// ServerSide, if true, records from the server's side: messages written are
	// "recv" and messages read are "send". Use it to wrap a server's transport.
	ServerSide bool
}

// Connect connects the delegate transport and returns a recording connection.
func (t *RecordingTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	if err := t.Tape.Lifecycle(t.Server, "$transport/start", nil); err != nil {
		return nil, err
	}
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, errors.Join(err, t.Tape.Lifecycle(t.Server, "$transport/close", map[string]any{"error": err.Error()}))
	}
	readDir, writeDir := DirRecv, DirSend
	if t.ServerSide {
		readDir, writeDir = DirSend, DirRecv
	}
	return &recordingConn{delegate: conn, t: t, readDir: readDir, writeDir: writeDir}, nil
}

type recordingConn struct {
	delegate          mcp.Connection
	t                 *RecordingTransport
	readDir, writeDir string
	closeOnce         sync.Once
}

func (c *recordingConn) SessionID() string { return c.delegate.SessionID() }

func (c *recordingConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.delegate.Read(ctx)
	if err != nil {
		return msg, err
	}
	return msg, c.record(c.readDir, msg)
}

func (c *recordingConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	// Record first, as mcporter does: a reply can arrive before Write returns.
	if err := c.record(c.writeDir, msg); err != nil {
		return err
	}
	return c.delegate.Write(ctx, msg)
}

func (c *recordingConn) record(dir string, msg jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return fmt.Errorf("mcptest: encode %s message: %w", dir, err)
	}
	return c.t.Tape.Write(dir, c.t.Server, data, nil)
}

func (c *recordingConn) Close() error {
	err := c.delegate.Close()
	c.closeOnce.Do(func() {
		err = errors.Join(err, c.t.Tape.Lifecycle(c.t.Server, "$transport/close", nil))
	})
	return err
}
