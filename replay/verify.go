package replay

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// Conn is a live server connection for Verify: Send writes one JSON-RPC
// message; Recv returns the next message the server sent (io.EOF when it
// closed). StdioConn adapts a process's pipes.
type Conn interface {
	Send(ctx context.Context, msg []byte) error
	Recv(ctx context.Context) ([]byte, error)
}

// VerifyOptions configure Verify.
type VerifyOptions struct {
	// Server is the tape's server to verify; empty when the tape holds one.
	Server string
	// Ignore lists paths dropped before comparing responses ("result.x").
	Ignore []tape.Path
	// Timeout bounds the wait for each response; 0 means 30 s.
	Timeout time.Duration
	// Now is the clock for latencies; nil means time.Now.
	Now func() time.Time
}

// CallResult is the verdict on one recorded request replayed to a live server.
type CallResult struct {
	Seq    int    `json:"seq"`
	Line   int    `json:"line"`
	Method string `json:"method"`
	// Name is the tool, prompt or resource the call names, if any.
	Name     string        `json:"name,omitempty"`
	Pass     bool          `json:"pass"`
	Diff     []DiffOp      `json:"diff,omitempty"`
	Problem  string        `json:"problem,omitempty"` // no response, a transport error
	Recorded time.Duration `json:"recorded"`          // the recorded latency
	Live     time.Duration `json:"live"`
}

// VerifyReport is what Verify found, call by call.
type VerifyReport struct {
	Server string       `json:"server"`
	Calls  []CallResult `json:"calls"`
}

// Err returns nil when every call passed, else an error wrapping ErrDiverged.
func (r *VerifyReport) Err() error {
	n := 0
	for _, c := range r.Calls {
		if !c.Pass {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: server '%s': %d of %d calls answered differently", ErrDiverged, r.Server, n, len(r.Calls))
}

// Verify sends the client side of the tape's server to a live server over
// conn, in recorded order, one request at a time, with ids of its own; it
// answers the server's own requests with the recorded replies and compares
// each response with the recorded one by meaning. onCall, if not nil, sees
// each result as it is decided.
func Verify(ctx context.Context, x *tape.Index, conn Conn, opts VerifyOptions, onCall func(CallResult)) (VerifyReport, error) {
	server, err := pickServer(x, opts.Server)
	if err != nil {
		return VerifyReport{}, err
	}
	v := &verifier{
		x: x, conn: conn, server: server, opts: opts,
		norm:    tape.Normalizer{Ignore: opts.Ignore},
		liveIDs: map[tape.ID]tape.ID{},
		used:    map[int]bool{},
	}
	if v.opts.Timeout == 0 {
		v.opts.Timeout = 30 * time.Second
	}
	if v.opts.Now == nil {
		v.opts.Now = time.Now
	}
	rep := VerifyReport{Server: server}
	for i := 0; i < x.Len(); i++ {
		en := x.Entry(i)
		if en.Server != server || en.Dir != tape.DirSend || !en.IsWire() {
			continue
		}
		switch en.Kind {
		case tape.KindNotification:
			if err := v.notify(ctx, i); err != nil {
				return rep, err
			}
		case tape.KindRequest:
			res, err := v.call(ctx, i)
			if res != nil {
				rep.Calls = append(rep.Calls, *res)
				if onCall != nil {
					onCall(*res)
				}
			}
			if err != nil {
				return rep, err
			}
		}
	}
	return rep, nil
}

type verifier struct {
	x       *tape.Index
	conn    Conn
	server  string
	opts    VerifyOptions
	norm    tape.Normalizer
	next    int
	liveIDs map[tape.ID]tape.ID // recorded client id → live id
	used    map[int]bool        // recorded server requests answered
}

func (v *verifier) notify(ctx context.Context, seq int) error {
	m, err := v.x.Message(seq)
	if err != nil {
		return err
	}
	msg := tape.StripMeta(m.Raw)
	if m.Method == "notifications/cancelled" {
		r := gjson.GetBytes(msg, "params.requestId")
		if live, ok := v.liveIDs[tape.ID(r.Raw)]; ok && r.Index > 0 {
			msg = append(append(append([]byte{}, msg[:r.Index]...), live...), msg[r.Index+len(r.Raw):]...)
		}
	}
	return v.conn.Send(ctx, msg)
}

func (v *verifier) call(ctx context.Context, seq int) (*CallResult, error) {
	m, err := v.x.Message(seq)
	if err != nil {
		return nil, err
	}
	p := v.x.Pair(seq)
	res := &CallResult{Seq: seq, Line: m.Line, Method: m.Method, Recorded: p.Latency}
	for _, k := range []string{"params.name", "params.uri"} {
		if r := gjson.GetBytes(m.Raw, k); r.Type == gjson.String {
			res.Name = r.String()
			break
		}
	}
	v.next++
	live := tape.ID(strconv.Itoa(v.next))
	v.liveIDs[m.ID] = live
	start := v.opts.Now()
	if err := v.conn.Send(ctx, spliceID(tape.StripMeta(m.Raw), []byte(live))); err != nil {
		res.Problem = err.Error()
		return res, err
	}
	want := p.Partner
	if want < 0 && !p.Cancelled {
		want = rejection(v.x, v.server, seq) // an HTTP 400 with "id":null
	}
	if p.Cancelled || want < 0 {
		// Cancelled or never answered on the tape: nothing to wait for.
		res.Pass = true
		return res, nil
	}
	ctx, cancel := context.WithTimeout(ctx, v.opts.Timeout)
	defer cancel()
	for {
		msg, err := v.conn.Recv(ctx)
		if err != nil {
			res.Problem = fmt.Sprintf("no response: %v", err)
			if errors.Is(err, context.DeadlineExceeded) {
				res.Problem = fmt.Sprintf("no response within %v", v.opts.Timeout)
				return res, nil
			}
			return res, err
		}
		entries := tape.Classify(bytes.TrimSpace(msg))
		for _, e := range entries {
			switch e.Kind {
			case tape.KindRequest:
				if err := v.answer(ctx, e); err != nil {
					return res, err
				}
			case tape.KindResponse:
				if e.ID != live {
					continue
				}
				res.Live = v.opts.Now().Sub(start)
				rec, err := v.x.Message(want)
				if err != nil {
					return res, err
				}
				want, err1 := v.norm.Normalize(rec.Raw)
				got, err2 := v.norm.Normalize(e.Raw)
				if err1 != nil || err2 != nil {
					res.Problem = fmt.Sprintf("undecodable response: %v", errors.Join(err1, err2))
					return res, nil
				}
				res.Diff = Diff(want, got)
				res.Pass = len(res.Diff) == 0
				return res, nil
			}
		}
	}
}

// answer replies to a live server request with the recorded reply to the
// next recorded server request of the same method.
func (v *verifier) answer(ctx context.Context, req tape.Entry) error {
	for i := 0; i < v.x.Len(); i++ {
		en := v.x.Entry(i)
		if v.used[i] || en.Server != v.server || en.Dir != tape.DirRecv || en.Kind != tape.KindRequest || en.Method != req.Method {
			continue
		}
		v.used[i] = true
		if reply := v.x.Pair(i).Partner; reply >= 0 {
			if m, err := v.x.Message(reply); err == nil {
				return v.conn.Send(ctx, spliceID(tape.StripMeta(m.Raw), []byte(req.ID)))
			}
		}
		break
	}
	return v.conn.Send(ctx, errorResponse([]byte(req.ID), CodeNotRecorded, "tapedeck verify: the tape holds no reply to "+req.Method, nil))
}

// StdioConn is a Conn over a stdio server's pipes: one message a line.
type StdioConn struct {
	w     io.Writer
	lines chan []byte
	err   chan error
}

// NewStdioConn returns a Conn writing to w (the server's stdin) and reading
// lines from r (its stdout) in a goroutine, until r ends.
func NewStdioConn(w io.Writer, r io.Reader) *StdioConn {
	c := &StdioConn{w: w, lines: make(chan []byte, 64), err: make(chan error, 1)}
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				c.lines <- line
			}
			if err != nil {
				c.err <- err
				close(c.lines)
				return
			}
		}
	}()
	return c
}

// Send writes msg and a newline.
func (c *StdioConn) Send(_ context.Context, msg []byte) error {
	_, err := c.w.Write(append(bytes.TrimSpace(msg), '\n'))
	return err
}

// Recv returns the next line the server wrote.
func (c *StdioConn) Recv(ctx context.Context) ([]byte, error) {
	select {
	case line, ok := <-c.lines:
		if !ok {
			return nil, io.EOF
		}
		return line, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
