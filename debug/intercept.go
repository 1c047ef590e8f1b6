package debug

// Held messages: the live intercept (tapedeck debug -- SERVER, debug
// --upstream URL) holds a message a breakpoint matches until the user's
// verdict. debug/intercept serves it; the TUI shows what it holds and
// settles it.

import "github.com/tapedeck/tapedeck/tape"

// Intercept is a live intercept session (debug/intercept's Service
// implements it over the recorders); the TUI holds only this.
type Intercept interface {
	// Next blocks until the session has something to report.
	Next() InterceptEvent
	// Settle settles held message id.
	Settle(id int, v Verdict)
	// Resend sends a client's request to the server again (with an id of
	// the session's own); its answer comes back as an InterceptResent event.
	Resend(raw []byte) error
	// SetBreakpoints sets which messages are held.
	SetBreakpoints(bs []Breakpoint)
	// Close ends the session.
	Close() error
}

// InterceptEventKind says what an InterceptEvent reports.
type InterceptEventKind int

const (
	InterceptHeld   InterceptEventKind = iota + 1 // a message is held: ID, Dir, Raw, Breakpoint
	InterceptResent                               // a re-sent request was answered: Request, Raw
	InterceptInfo                                 // something to say: Text
	InterceptClosed                               // the session ended
)

// InterceptEvent is what an Intercept reports.
type InterceptEvent struct {
	Kind       InterceptEventKind
	ID         int
	Dir        tape.Dir
	Raw        []byte
	Breakpoint string
	Request    []byte
	Text       string
}

// VerdictAction is what the user decided about a held message.
type VerdictAction int

const (
	Forward     VerdictAction = iota // send it on as it is
	Drop                             // send nothing
	AnswerError                      // a request: answer it with an error; a response: turn it into one
	Edited                           // send Raw, the edited message, instead
)

// Verdict settles a held message.
type Verdict struct {
	Action VerdictAction
	Raw    []byte // Edited
}
