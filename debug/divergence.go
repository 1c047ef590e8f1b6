package debug

// Divergences: where a live peer departed from a tape, as the replay
// engine reports them, a replay's report, and how a held divergence is
// answered. The engine (replay) makes them; the debugger's services and
// the TUI read them; replay names them too (type aliases), so a
// divergence has one type wherever it travels.

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/tapedeck/tapedeck/internal/text"
	"github.com/tapedeck/tapedeck/tape"
)

// ErrDiverged reports a replay or verification in which the live peer did
// not follow the tape: a mismatched, unknown or extra request, or recorded
// requests left unused.
var ErrDiverged = errors.New("replay diverged from the tape")

// Reason says what kind of departure from the tape a Divergence is.
type Reason string

// Reasons of divergences.
const (
	ReasonMismatch   Reason = "mismatch"    // strict: not the next recorded request
	ReasonUnknown    Reason = "unknown"     // keyed/loose: (method, params) never recorded
	ReasonRepeat     Reason = "repeat"      // keyed: called more often than recorded
	ReasonBeyondEnd  Reason = "beyond-end"  // strict: the tape holds no further request
	ReasonUnreadable Reason = "unreadable"  // the recorded request it may match could not be read
	ReasonReply      Reason = "reply"       // the client's reply to a server request differs
	ReasonUnexpected Reason = "unexpected"  // a reply to no outstanding server request
	ReasonUnused     Reason = "unused"      // a recorded request the client never sent
	ReasonResponse   Reason = "response"    // verify: the live server answered differently
	ReasonNoResponse Reason = "no-response" // verify: the live server did not answer
)

// Divergence is one point where the live peer departed from the tape.
type Divergence struct {
	// ID numbers the engine's divergences from 1; Engine.Resolve takes it.
	ID     int    `json:"id"`
	Server string `json:"server"`
	Reason Reason `json:"reason"`
	// Tolerated divergences (loose mode's unknown calls) are reported but
	// do not fail the replay.
	Tolerated bool `json:"tolerated,omitempty"`
	// RequestID is the live request's id (JSON text), when it was a request.
	RequestID json.RawMessage `json:"requestId,omitempty"`
	Method    string          `json:"method,omitempty"`
	Params    json.RawMessage `json:"params,omitempty"`
	// Raw is the live message as the peer sent it (key order, _meta and
	// all), for a debugger to show; reports leave it out, as they give
	// Method and Params.
	Raw json.RawMessage `json:"-"`
	// Expected is the tape's sequence number of the recorded message
	// expected instead, or -1; ExpectedLine is its line in the file.
	Expected       int             `json:"expectedSeq"`
	ExpectedLine   int             `json:"expectedLine,omitempty"`
	ExpectedMethod string          `json:"expectedMethod,omitempty"`
	ExpectedParams json.RawMessage `json:"expectedParams,omitempty"`
	// Diff lists the differences from the expected to the actual message,
	// after normalization (ids, _meta and ignored paths removed).
	Diff []tape.DiffOp `json:"diff,omitempty"`
	// Message is the one-line text sent to the client and printed.
	Message string `json:"message"`
	// Resolution says how the divergence was answered.
	Resolution Resolution `json:"resolution"`
	// Session is the Mcp-Session-Id of the HTTP session it happened in (the
	// one issued, or to be issued, with that session's initialize), set by
	// HTTPHandler on what it reports through OnDivergence; "" for a
	// transport or an era without sessions. Every session's engine numbers
	// its divergences from 1, so a held one is named by Session and ID
	// (HTTPHandler.Resolve).
	Session string `json:"session,omitempty"`
}

// Resolution is how a divergence was, or is to be, answered.
type Resolution int

// Resolutions. The debugger lets its user choose one for a held divergence
// (EngineOptions.Hold); the headless server always sends the error.
const (
	Pending        Resolution = iota // held, awaiting Engine.Resolve
	SendError                        // answer with the divergence error; a strict replay moves past the expected request
	AnswerRecorded                   // answer with the expected recorded response anyway
	SkipRecorded                     // skip the expected recorded request and match again
	NotAnswered                      // a notification or reply: nothing to answer
	SendErrorKeep                    // answer with the divergence error, the expected request still expected next
)

var resolutionNames = [...]string{"pending", "error", "recorded", "skip", "none", "error-keep"}

func (r Resolution) String() string {
	if int(r) < len(resolutionNames) {
		return resolutionNames[r]
	}
	return "unknown"
}

// MarshalText writes the resolution's name.
func (r Resolution) MarshalText() ([]byte, error) { return []byte(r.String()), nil }

// UnmarshalText reads a resolution's name.
func (r *Resolution) UnmarshalText(b []byte) error {
	for i, n := range resolutionNames {
		if string(b) == n {
			*r = Resolution(i)
			return nil
		}
	}
	return fmt.Errorf("unknown resolution %q: expected one of %s", b, strings.Join(resolutionNames[:], ", "))
}

// Unused is a recorded request the client never sent.
type Unused struct {
	Seq    int             `json:"seq"`
	Line   int             `json:"line"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Report sums up a replay: what matched, every divergence, and the
// recorded requests left unused.
type Report struct {
	Tape        string       `json:"tape,omitempty"`
	Server      string       `json:"server"`
	Mode        string       `json:"mode"`
	Requests    int          `json:"requests"` // live requests received
	Matched     int          `json:"matched"`
	Divergences []Divergence `json:"divergences"`
	Unused      []Unused     `json:"unused"`
	// Unanswered lists the matched requests the tape holds no answer to
	// (answered with CodeNoAnswer). They are the tape's gap, not the
	// client's departure, so they do not fail the replay.
	Unanswered []Unused `json:"unanswered,omitempty"`
	// UnusedTolerated is true in loose mode, where unused requests are
	// reported but do not fail the replay.
	UnusedTolerated bool `json:"unusedTolerated,omitempty"`
	// Resyncs lists where a strict replay found the client again after it
	// left out recorded calls (those are in Unused).
	Resyncs []Resync `json:"resyncs,omitempty"`
	// Dropped counts the recorded server messages that never reached the
	// client (over HTTP: no stream opened to carry them, or their stream's
	// client went away); the client did not see what the server said.
	Dropped int `json:"dropped,omitempty"`
	// FellThrough lists the requests the tape could not answer that went
	// to the live server (replay --fallback): answered, so not divergences.
	FellThrough []FellThrough `json:"fellThrough,omitempty"`
	// RuleAnswered lists the client's requests a rule answered or dropped
	// before the tape's matcher saw them (replay --rules): sent by the
	// client, so the recorded requests they stand for are consumed, not
	// unused, and not divergences.
	RuleAnswered []RuleAnswer `json:"ruleAnswered,omitempty"`
}

// RuleAnswer is a client request a rule answered (respond, error) or
// dropped (block) at the replay's edge. Seq is the recorded request it
// stands for (at Line), consumed without its recorded answer, or -1 when it
// matched none the replay expected (strict: the next one or one in the
// reorder window; keyed: one by key).
type RuleAnswer struct {
	Rule   string          `json:"rule"`
	Action string          `json:"action"`
	Seq    int             `json:"seq"`
	Line   int             `json:"line,omitempty"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params,omitempty"`
}

// Resync is a place where a strict replay re-synchronised: the live request
// matched recorded request Seq (at Line), Skipped recorded requests after
// the one expected, which the client did not send.
type Resync struct {
	Seq     int    `json:"seq"`
	Line    int    `json:"line"`
	Method  string `json:"method"`
	Skipped int    `json:"skipped"`
}

// Err returns nil when the replay followed the tape, else an error wrapping
// ErrDiverged that counts what went wrong.
func (r *Report) Err() error {
	n := 0
	for _, d := range r.Divergences {
		if !d.Tolerated {
			n++
		}
	}
	unused := len(r.Unused)
	if r.UnusedTolerated {
		unused = 0
	}
	if n == 0 && unused == 0 && r.Dropped == 0 {
		return nil
	}
	var parts []string
	if n > 0 {
		parts = append(parts, text.Plural(n, "divergence"))
	}
	if unused > 0 {
		parts = append(parts, text.Plural(unused, "unused recorded request"))
	}
	if r.Dropped > 0 {
		parts = append(parts, text.Plural(r.Dropped, "recorded server message")+" never delivered")
	}
	return fmt.Errorf("%w: server '%s': %s", ErrDiverged, r.Server, strings.Join(parts, ", "))
}

// OutcomeAnswered is FellThrough.Outcome when the live server answered.
const OutcomeAnswered = "answered"

// FellThrough says a request went to the live server.
type FellThrough struct {
	Method string          `json:"method"`
	ID     json.RawMessage `json:"id"`
	Reason Reason          `json:"reason"` // why the tape could not answer
	// Outcome is OutcomeAnswered, or why the live server did not answer
	// (the client got an error saying so); empty while it is awaited.
	Outcome string `json:"outcome,omitempty"`
}

// Answered reports whether the live server answered f.
func (f FellThrough) Answered() bool { return f.Outcome == OutcomeAnswered }
