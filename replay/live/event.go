package live

import (
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/replay"
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
	Divergence         *Divergence
	Err                error
	Note               string
}

// Divergence is a live client's request that did not match the tape, as a
// debugger shows it and names it back to Server.Resolve.
type Divergence struct {
	Seq      int      // the recorded message expected next, or -1
	Where    string   // where on the tape, for people: "at #5", "after the tape's end (…)" (see Where)
	Reason   string   // why it did not match
	Expected []byte   // the recorded request, as on the tape
	Actual   []byte   // the client's request, the bytes it sent
	Paths    []string // the changed JSON paths, e.g. params.arguments.limit
	// Session is the HTTP session the divergence happened in ("" over
	// stdio) and ID its engine's number for it: together they name it to
	// Resolve.
	Session string
	ID      int
}

// divergence turns the engine's divergence into what a debugger shows;
// expected is the recorded message d.Expected, if any, and where says
// where it happened (Where).
func divergence(d replay.Divergence, expected []byte, where string) *Divergence {
	out := &Divergence{Seq: d.Expected, Where: where, Reason: d.Message, Session: d.Session, ID: d.ID, Expected: expected, Actual: d.Raw}
	for _, op := range d.Diff {
		out.Paths = append(out.Paths, pointerPath(op.Path))
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
func Where(d replay.Divergence, x *tape.Index) string {
	if d.Expected >= 0 {
		return fmt.Sprintf("at #%d", d.Expected)
	}
	if d.Reason != replay.ReasonBeyondEnd {
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
