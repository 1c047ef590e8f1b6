package serve

import (
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/replay"
	"github.com/tapedeck/tapedeck/tape"
)

// serveStdio serves an attached client until it goes away.
func (s *Server) serveStdio(c *peekedConn) {
	defer c.Close()
	s.mu.Lock()
	refuse := ""
	switch {
	case s.transport == "http":
		refuse = "tapedeck debug: this session serves an HTTP client; one kind of client a session"
	case s.conn != nil:
		refuse = "tapedeck debug: a client is already attached"
	}
	if refuse != "" {
		s.mu.Unlock()
		fmt.Fprintf(c, `{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":%q}}`+"\n", refuse)
		return
	}
	s.transport, s.conn, s.dead = "stdio", c, false
	run := s.startRun()
	if s.fallback != nil {
		s.ft = s.fallback()
	}
	ft := s.ft
	edge := replay.NewRuleEdge(s.rules, s.opts.Server, func(line string) { s.emit(debug.Event{Kind: debug.Note, Note: line}) })
	s.mu.Unlock()
	defer func() {
		if ft == nil {
			return
		}
		if err := ft.Close(); err != nil {
			s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("debug --fallback: the live exchange's tape: %w", err)})
		}
	}()
	s.emit(debug.Event{Kind: debug.Connected, Transport: "stdio", RunNo: run})
	defer func() {
		s.mu.Lock()
		answers, divs := s.dropClient()
		s.conn = nil
		s.emit(debug.Event{Kind: debug.Disconnected, Dropped: answers, Abandoned: divs})
		why := "the client disconnected"
		if s.restarting {
			why, s.restarting = "restarted", false
		}
		after := s.endRun(why)
		s.ft = nil
		s.mu.Unlock()
		after()
	}()
	err := jsonrpc.ReadLines(c.r, 0, func(line []byte) error {
		if ft != nil && ft.Peek(line) {
			return nil // the client's reply to the live server
		}
		s.mu.Lock()
		if edge != nil {
			outs, err := edge.In(s.e, line, s.now())
			if err == nil {
				outs, err = edge.Out(outs)
			}
			s.handle(outs)
			s.progressed(s.e.Progress())
			s.mu.Unlock()
			if err != nil {
				c.Close() // a rule cut the session
			}
			return err
		}
		s.handle(s.e.Receive(line, s.now()))
		s.progressed(s.e.Progress())
		s.mu.Unlock()
		return nil
	}, func() error {
		s.mu.Lock()
		s.write(jsonrpc.LineTooLong("tapedeck replay", jsonrpc.MaxLine))
		s.mu.Unlock()
		return nil
	})
	if errors.Is(err, replay.ErrDisconnected) {
		s.emit(debug.Event{Kind: debug.Note, Note: "a rule disconnected the client"})
		err = nil
	}
	if err != nil && !errors.Is(err, net.ErrClosed) {
		s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("debug client: %w", err)})
	}
}

// dropClient forgets what was meant for the stdio client going away, so
// that none of it reaches the next one: its held divergences are resolved
// with the divergence error (written to no one) and its undelivered answers
// dropped. It returns how many of each; mu is held.
func (s *Server) dropClient() (answers, divergences int) {
	s.dead = true // what the resolutions yield goes nowhere
	held := s.held
	s.held = nil
	for _, h := range held {
		outs, err := s.e.Resolve(h.id, replay.SendError, s.now())
		if err != nil {
			continue
		}
		divergences++
		s.handle(outs)
	}
	if divergences > 0 {
		s.progressed(s.e.Progress())
	}
	return s.gate.Drop(), divergences
}

// handle sends or queues the stdio path's outputs; mu is held.
func (s *Server) handle(outs []replay.Output) {
	for _, o := range outs {
		if d := o.Divergence; d != nil && d.Resolution == replay.Pending && s.ft != nil && replay.IsMiss(d) && !s.dead {
			s.fallThrough(*d)
			continue
		}
		if d := o.Divergence; d != nil && d.Resolution == replay.Pending {
			s.held = append(s.held, heldDivergence{id: d.ID})
			s.emit(debug.Event{Kind: debug.Diverged, Divergence: s.divergence(*d)})
		}
		if o.Msg == nil {
			continue
		}
		if s.gate.Pass(o.Seq) && s.write(o.Msg) {
			continue
		}
		if o.Seq >= 0 {
			s.gate.Hold(o.Seq, o) // counted as dropped if its client goes away first
		}
	}
}

// write sends msg to the attached stdio client, within the write timeout:
// a client that does not read is closed (its reader then reports the
// disconnect), so that mu is never held for long. It reports whether msg
// was written; mu is held.
func (s *Server) write(msg []byte) bool {
	if s.conn == nil || s.dead {
		return false
	}
	b := make([]byte, 0, len(msg)+1)
	b = append(append(b, msg...), '\n')
	_ = s.conn.SetWriteDeadline(time.Now().Add(s.writeTimeout))
	if _, err := s.conn.Write(b); err != nil {
		s.dead = true
		s.conn.Close()
		if errors.Is(err, os.ErrDeadlineExceeded) {
			s.emit(debug.Event{Kind: debug.Failed, Err: fmt.Errorf("debug client: it read nothing for %v: dropped as disconnected", s.writeTimeout)})
		}
		return false
	}
	return true
}

// fallThrough sends a request the tape lacks to the live server of the
// fallback: the engine forgets it (the recorded request it may have been
// compared with is still expected), and the live server's answer reaches
// the client. mu is held.
func (s *Server) fallThrough(d replay.Divergence) {
	outs, err := s.e.Resolve(d.ID, replay.SendErrorKeep, s.now())
	if err == nil {
		var rest []replay.Output
		for _, o := range outs {
			if o.Msg != nil && isErrorTo(o.Msg, d.RequestID) {
				continue // the divergence error: the live server answers instead
			}
			rest = append(rest, o)
		}
		s.handle(rest)
	}
	ft, raw := s.ft, d.Raw
	s.emit(debug.Event{Kind: debug.Note, Note: fmt.Sprintf("%s (id %s) is not on the tape (%s): the live server answers it", d.Method, d.RequestID, d.Reason)})
	client := func(msgs ...[]byte) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, m := range msgs {
			s.write(m)
		}
		return nil
	}
	go ft.Miss(raw, &d, client) // it answers the client itself when no live server starts
}

// isErrorTo reports whether msg is an error response to id.
func isErrorTo(msg, id []byte) bool {
	es := tape.Classify(msg)
	return len(es) == 1 && es[0].Kind == tape.KindResponse && es[0].Error && tape.EqualJSON([]byte(es[0].ID), id)
}
