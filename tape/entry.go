package tape

import (
	"errors"
	"time"
)

// Sentinel errors, wrapped with %w by the functions of this package.
var (
	// ErrMalformed reports a line that is not a JSON-RPC message.
	ErrMalformed = errors.New("malformed tape line")
	// ErrTorn reports a last line cut off mid-message (a recorder killed mid-write).
	ErrTorn = errors.New("torn last line")
	// ErrLineTooLong reports a line over a Reader's MaxLine.
	ErrLineTooLong = errors.New("line too long")
)

// Dir is the direction of a message, seen from the client.
type Dir string

// Directions, as mcporter writes them.
const (
	DirSend      Dir = "send"      // client to server
	DirRecv      Dir = "recv"      // server to client
	DirLifecycle Dir = "lifecycle" // not a wire message
	DirUnknown   Dir = ""          // no _meta.dir on the line
)

// Opposite returns the other wire direction (send for recv and recv for send).
func (d Dir) Opposite() Dir {
	switch d {
	case DirSend:
		return DirRecv
	case DirRecv:
		return DirSend
	}
	return d
}

// Kind classifies a message.
type Kind uint8

// Kinds of tape entries.
const (
	KindInvalid      Kind = iota // not JSON, or not a JSON-RPC message
	KindRequest                  // id and method
	KindResponse                 // id and result or error
	KindNotification             // method without id
	KindLifecycle                // a $-method or dir "lifecycle": not a wire message
)

var kindNames = [...]string{"invalid", "request", "response", "notification", "lifecycle"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ID is a JSON-RPC id in its JSON form: a number literal (1, -1,
// 18446744073709551617, 1.5) or a quoted string ("abc"), so the number 1 and
// the string "1" stay different ids. The empty ID means no id.
type ID string

// Entry is one message of a tape.
type Entry struct {
	Seq    int       // position among the tape's messages, from 0
	Line   int       // line number in the file, from 1
	Offset int64     // byte offset of Raw in the file
	Raw    []byte    // the message exactly as recorded, _meta included; nil when read from an Index
	Kind   Kind      //
	Dir    Dir       // from _meta.dir
	Server string    // from _meta.server
	Time   time.Time // from _meta.ts; zero when absent or unreadable
	ID     ID        // requests and responses
	Method string    // requests, notifications and lifecycle records
	Error  bool      // a response carrying "error": a JSON-RPC error
	// ToolError marks a response whose result says "isError": true: the
	// call reached the tool and the tool failed (MCP reports tool failures
	// this way, not as JSON-RPC errors). See Failed.
	ToolError bool
	// Negotiation marks a server/discover probe, or its answer, that a
	// server of an earlier era rejected before initialize: version
	// negotiation, not a failure (see the function Negotiation). Only an
	// Index knows it: a message read alone has no request to judge by.
	Negotiation bool
	// Injected marks a message an interception rule acted on: its
	// _meta.injected says which rule and what it did.
	Injected bool
	// Dropped marks a recorded message a rule (or the debugger) stopped:
	// it never reached its peer, and replay does not send it.
	Dropped bool
	Batch   int // messages that travelled in one JSON array share a batch number (from 1); 0 otherwise
	// Problem says why an invalid entry is invalid; empty otherwise.
	Problem string
}

// IsWire reports whether the entry is a JSON-RPC message that crossed the wire
// (request, response or notification), as opposed to lifecycle or invalid.
func (e *Entry) IsWire() bool {
	return e.Kind == KindRequest || e.Kind == KindResponse || e.Kind == KindNotification
}

// Warning is a problem found while reading a tape that did not stop the reading.
type Warning struct {
	Line int
	Err  error
}

func (w Warning) Error() string { return w.Err.Error() }
func (w Warning) Unwrap() error { return w.Err }
