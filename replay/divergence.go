package replay

import (
	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// The divergence vocabulary is debug's (debug/divergence.go), shared with
// the debugger's services and the TUI, which import no network code; the
// replay API names it here.

// ErrDiverged reports a replay or verification in which the live peer did
// not follow the tape (debug.ErrDiverged).
var ErrDiverged = debug.ErrDiverged

type (
	Reason     = debug.Reason
	Divergence = debug.Divergence
	Resolution = debug.Resolution
	Unused     = debug.Unused
	Report     = debug.Report
	RuleAnswer = debug.RuleAnswer
	Resync     = debug.Resync
	// DiffOp is one difference between an expected and an actual JSON
	// value (tape.DiffOp).
	DiffOp = tape.DiffOp
)

// Reasons of divergences (debug's).
const (
	ReasonMismatch   = debug.ReasonMismatch
	ReasonUnknown    = debug.ReasonUnknown
	ReasonRepeat     = debug.ReasonRepeat
	ReasonBeyondEnd  = debug.ReasonBeyondEnd
	ReasonUnreadable = debug.ReasonUnreadable
	ReasonReply      = debug.ReasonReply
	ReasonUnexpected = debug.ReasonUnexpected
	ReasonUnused     = debug.ReasonUnused
	ReasonResponse   = debug.ReasonResponse
	ReasonNoResponse = debug.ReasonNoResponse
)

// Resolutions (debug's).
const (
	Pending        = debug.Pending
	SendError      = debug.SendError
	AnswerRecorded = debug.AnswerRecorded
	SkipRecorded   = debug.SkipRecorded
	NotAnswered    = debug.NotAnswered
	SendErrorKeep  = debug.SendErrorKeep
)

// Diff compares two normalized JSON values (tape.Diff).
func Diff(expected, actual any) []DiffOp { return tape.Diff(expected, actual) }

// JSON-RPC error codes the replay server answers with, in the range the
// JSON-RPC spec reserves for implementation-defined server errors.
const (
	// CodeDiverged answers a request that does not match the tape.
	CodeDiverged = -32090
	// CodeNotRecorded answers, in loose mode, a call the tape does not hold.
	CodeNotRecorded = -32091
	// CodeNoAnswer answers a request that matched the tape where the tape
	// holds no answer to it: the recording ended (or the recorder died)
	// before the server answered.
	CodeNoAnswer = -32093
	// CodeMethodNotFound is JSON-RPC's "method not found", answered to a
	// server/discover probe against a tape recorded without one, as the
	// older server did.
	CodeMethodNotFound = -32601
	// CodeParseError is JSON-RPC's "parse error", for a line that is not JSON.
	CodeParseError = -32700
)
