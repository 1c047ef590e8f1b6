package debug

// Events: what a live debug session (debug/serve) reports to the debugger,
// the client runs it serves, and the interface the debugger holds it by.

import (
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/tape"
)

// EventKind says what happened on a live session.
type EventKind int

// What a Server reports.
const (
	// Connected: a client connected (Event.Transport says how).
	Connected EventKind = iota + 1
	// Progress: the client's messages brought the tape to Event.Reached
	// and it now waits for Event.Awaiting.
	Progress
	// Diverged: the client departed from the tape (Event.Divergence).
	Diverged
	// Disconnected: the client went away; what was meant for it was
	// dropped (Event.Dropped, Event.Abandoned).
	Disconnected
	// Failed: something went wrong (Event.Err); the session goes on.
	Failed
	// Closed: the session ended.
	Closed
	// RunEnded: a client run ended (Event.Run); the next client starts at
	// the top of the tape.
	RunEnded
	// Note: something to tell the user (Event.Note), such as a request
	// that went to the live server of a fallback.
	Note
)

// Event is one thing that happened on a live session.
type Event struct {
	Kind EventKind
	// Transport is "stdio" (tapedeck attach) or "http", on Connected.
	Transport string
	// RunNo is the client run a Connected client starts or joins, from 1.
	RunNo int
	// Session is the session an HTTP client opens in its run (from 1; a
	// Connected event for each), served by the recorded session of that
	// number, and Sessions the tape's recorded sessions, on Connected over
	// HTTP; zero over stdio.
	Session, Sessions int
	// Run is the run that ended, on RunEnded.
	Run *RunReport
	// Reached is the recorded client message the client's latest message
	// matched (-1 before any), and Awaiting the next one the tape waits for
	// (the tape's length when none is left), on Progress: playback
	// delivers up to Awaiting, timed from when Reached arrived.
	Reached, Awaiting int
	// Dropped counts the answers queued for the client that went away and
	// Abandoned its divergences that awaited a choice, on Disconnected:
	// they never reach another client.
	Dropped, Abandoned int
	Divergence         *LiveDivergence
	Err                error
	Note               string
}

// LiveDivergence is a divergence a live session holds for the debugger: the
// engine's (its Session and ID name it back to Live.Resolve; Raw is the
// client's request as sent, Expected the recorded message's seq or -1),
// with where it happened for people and the recorded request it departed
// from.
type LiveDivergence struct {
	Divergence
	Where    string // "at #5", "after the tape's end (…)" (see Where)
	Recorded []byte // the recorded request Expected names, as on the tape
}

// NewLiveDivergence gives the engine's divergence d on tape x what a
// debugger shows with it.
func NewLiveDivergence(d Divergence, x *tape.Index) *LiveDivergence {
	out := &LiveDivergence{Divergence: d, Where: Where(d, x)}
	if d.Expected >= 0 {
		if e, err := x.Message(d.Expected); err == nil {
			out.Recorded = e.Raw
		}
	}
	return out
}

// Paths lists the changed JSON paths, dotted: params.arguments.limit.
func (d *LiveDivergence) Paths() []string {
	var out []string
	for _, op := range d.Diff {
		out = append(out, pointerPath(op.Path))
	}
	return out
}

// pointerPath turns a JSON pointer (/params/arguments/a) into a dotted path.
func pointerPath(p string) string {
	p = strings.TrimPrefix(p, "/")
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(s)
	}
	return strings.Join(parts, ".")
}

// Where says where on tape x divergence d happened, for people: "at #5",
// the recorded request the client departed from; when none was expected,
// "after the tape's end" naming the last request the tape records for d's
// server (the client went on past it), or "on a call the tape does not
// hold" for one matched with nothing in keyed or loose mode.
func Where(d Divergence, x *tape.Index) string {
	if d.Expected >= 0 {
		return fmt.Sprintf("at #%d", d.Expected)
	}
	if d.Reason != ReasonBeyondEnd {
		return "on a call the tape does not hold"
	}
	for i := x.Len() - 1; i >= 0; i-- {
		e := x.Entry(i)
		if e.Kind == tape.KindRequest && e.Dir == tape.DirSend && (d.Server == "" || e.Server == d.Server) {
			return fmt.Sprintf("after the tape's end (its last request is #%d %s)", i, e.Method)
		}
	}
	return "after the tape's end (it records no request)"
}

// RunReport is one client run, in brief.
type RunReport struct {
	Run       int    // from 1
	Transport string // "stdio" or "http"
	// Ended says how the run ended: the client disconnected, ended its
	// session (DELETE), started a new one, went quiet after the tape's
	// end, was restarted by the user, or the session closed.
	Ended       string
	Requests    int // client requests received
	Matched     int // of them, matched on the tape
	Divergences int // the client departed from the tape
	Unused      int // recorded requests the client never sent
	Dropped     int // recorded server messages that never reached the client
	Report      Report
}

// Failed reports whether the run departed from the tape.
func (r RunReport) Failed() bool { return r.Divergences > 0 }

// Live is a live client session for "tapedeck debug TAPE": a client
// connected to the replay engine, whose messages the debugger delivers
// under its breakpoints and whose divergences it shows. debug/serve's
// Server implements it over the network; the TUI holds only this.
type Live interface {
	// Next blocks until the session has something to report.
	Next() Event
	// Deliver lets the engine send the recorded messages seqs to the
	// client of run run (the RunNo it connected with).
	Deliver(run int, seqs []int)
	// Resolve answers divergence d, one the session reported, with
	// AnswerRecorded, SendError, SendErrorKeep or SkipRecorded.
	Resolve(d *LiveDivergence, r Resolution)
	// Restart ends the client run under way: the next client starts at
	// the top of the tape.
	Restart()
	// Close ends the session.
	Close() error
}
