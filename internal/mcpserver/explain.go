package mcpserver

// explain_report: a replay's --report file (debug.Report as JSON) read back
// and said in words, with what to try for each kind of divergence.

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/debug"
	"github.com/tapedeck/tapedeck/tape"
)

// maxReport bounds the report file read: reports list divergences, not
// bodies, so a larger file is not one.
const maxReport = 64 << 20

// reasons says what each divergence reason means and what to try.
var reasons = map[debug.Reason]struct{ meaning, hint string }{
	debug.ReasonMismatch: {"the client sent a request other than the next one on the tape (strict matching: in order)",
		"if the differences are values that change from run to run (ids, times, paths), replay with --ignore PATH for each; if the client sends calls in another order, replay with --match keyed"},
	debug.ReasonUnknown: {"the client sent a request (method and params) the tape never recorded",
		"the client changed what it asks: record a new tape, or replay with --fallback to send what the tape lacks to the live server"},
	debug.ReasonRepeat: {"the client sent a recorded request more often than the tape holds it",
		"record a session in which the call repeats as often, or replay with --match loose"},
	debug.ReasonBeyondEnd: {"the client went on after the tape's last recorded request",
		"the client does more than it did when recorded: record a longer session, or replay with --fallback"},
	debug.ReasonUnreadable: {"the recorded request this one may match could not be read from the tape",
		"check the tape's line named (tapedeck stats warns of damaged lines)"},
	debug.ReasonReply: {"the client's answer to a server request (sampling, elicitation, roots) differs from the recorded one",
		"if the differences are volatile values, replay with --ignore PATH"},
	debug.ReasonUnexpected: {"the client answered a server request that was not outstanding", "the client's answers do not follow the server's requests as recorded"},
	debug.ReasonUnused:     {"a recorded request the client never sent", "the client stopped early or skipped a call it made when recorded"},
	debug.ReasonResponse:   {"verify: the live server answered differently from the tape", "the server changed; record a new tape if the change is intended"},
	debug.ReasonNoResponse: {"verify: the live server did not answer", "the server hangs or dropped the request"},
}

// ExplainInput is explain_report's input.
type ExplainInput struct {
	Report string `json:"report" jsonschema:"the path of a tapedeck replay --report JSON file, in the library's directories"`
}

// Explained is one divergence said in words.
type Explained struct {
	ID             int           `json:"id"`
	Server         string        `json:"server,omitempty"`
	Reason         string        `json:"reason"`
	Meaning        string        `json:"meaning" jsonschema:"what the reason means"`
	Hint           string        `json:"hint" jsonschema:"what to try"`
	Tolerated      bool          `json:"tolerated,omitempty" jsonschema:"reported but not failing the replay (loose matching)"`
	Method         string        `json:"method,omitempty" jsonschema:"what the client sent"`
	Params         any           `json:"params,omitempty"`
	ExpectedSeq    int           `json:"expected_seq" jsonschema:"the recorded message expected instead, or -1"`
	ExpectedLine   int           `json:"expected_line,omitempty"`
	ExpectedMethod string        `json:"expected_method,omitempty"`
	ExpectedParams any           `json:"expected_params,omitempty"`
	Diff           []tape.DiffOp `json:"diff,omitempty" jsonschema:"from the recorded to the live message, after normalization"`
	Message        string        `json:"message" jsonschema:"the error the client was sent"`
	Open           string        `json:"open,omitempty" jsonschema:"the command that opens the tape at the expected message"`
}

// ExplainedUnused is a recorded request the client never sent.
type ExplainedUnused struct {
	Seq    int    `json:"seq"`
	Line   int    `json:"line"`
	Method string `json:"method"`
	Params any    `json:"params,omitempty"`
}

// ExplainOutput is explain_report's result.
type ExplainOutput struct {
	Report      string            `json:"report"`
	Tape        string            `json:"tape,omitempty"`
	Server      string            `json:"server"`
	Mode        string            `json:"mode"`
	Verdict     string            `json:"verdict" jsonschema:"followed (the replay passed) or diverged"`
	Summary     string            `json:"summary"`
	Requests    int               `json:"requests"`
	Matched     int               `json:"matched"`
	Divergences []Explained       `json:"divergences"`
	Unused      []ExplainedUnused `json:"unused"`
	Unanswered  []ExplainedUnused `json:"unanswered,omitempty" jsonschema:"matched requests the tape holds no answer to: the tape's gap, not a failure"`
}

func (s *service) explainReport(_ context.Context, _ *mcp.CallToolRequest, in ExplainInput) (*mcp.CallToolResult, ExplainOutput, error) {
	out := ExplainOutput{Divergences: []Explained{}, Unused: []ExplainedUnused{}}
	path, err := s.resolve(in.Report)
	if err != nil {
		return nil, out, err
	}
	b, err := readFile(path, maxReport)
	if err != nil {
		return nil, out, err
	}
	var rep debug.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		return nil, out, fmt.Errorf("%s: expected a tapedeck replay --report JSON file: %w", in.Report, err)
	}
	if rep.Mode == "" && rep.Divergences == nil && rep.Unused == nil {
		return nil, out, fmt.Errorf("%s: expected a tapedeck replay --report JSON file (with mode, divergences, unused), found JSON without them", in.Report)
	}
	out.Report, out.Server, out.Mode, out.Requests, out.Matched = path, rep.Server, rep.Mode, rep.Requests, rep.Matched
	// The tape is opened only when it is in the library too.
	tapePath := ""
	if rep.Tape != "" {
		out.Tape = rep.Tape
		if p, err := s.resolve(rep.Tape); err == nil {
			tapePath, out.Tape = p, p
		}
	}
	for _, d := range rep.Divergences {
		r := reasons[d.Reason]
		if r.meaning == "" {
			r.meaning, r.hint = "a divergence of a kind this tapedeck does not know", "see tapedeck replay --help"
		}
		e := Explained{ID: d.ID, Server: d.Server, Reason: string(d.Reason), Meaning: r.meaning, Hint: r.hint, Tolerated: d.Tolerated,
			Method: d.Method, Params: asJSON(d.Params), ExpectedSeq: d.Expected, ExpectedLine: d.ExpectedLine, ExpectedMethod: d.ExpectedMethod,
			ExpectedParams: asJSON(d.ExpectedParams), Diff: d.Diff, Message: d.Message}
		if len(d.Diff) > 0 && (d.Reason == debug.ReasonMismatch || d.Reason == debug.ReasonReply) {
			var ignore []string
			for _, op := range d.Diff {
				ignore = append(ignore, "--ignore "+shellArg(pointerToPath(op.Path)))
			}
			e.Hint += " (here: " + strings.Join(ignore, " ") + ")"
		}
		if tapePath != "" && d.Expected >= 0 {
			e.Open = openCommand(tapePath, d.Expected)
		}
		out.Divergences = append(out.Divergences, e)
	}
	for _, u := range rep.Unused {
		out.Unused = append(out.Unused, ExplainedUnused{Seq: u.Seq, Line: u.Line, Method: u.Method, Params: asJSON(u.Params)})
	}
	for _, u := range rep.Unanswered {
		out.Unanswered = append(out.Unanswered, ExplainedUnused{Seq: u.Seq, Line: u.Line, Method: u.Method, Params: asJSON(u.Params)})
	}
	if err := rep.Err(); err != nil {
		out.Verdict, out.Summary = "diverged", err.Error()
	} else {
		out.Verdict = "followed"
		out.Summary = fmt.Sprintf("the client followed the tape: %d of %d requests matched", rep.Matched, rep.Requests)
	}
	return nil, out, nil
}

// pointerToPath turns a diff's JSON pointer (/params/arguments/x) into the
// dotted path --ignore takes (params.arguments.x).
func pointerToPath(p string) string {
	p = strings.TrimPrefix(p, "/")
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
	}
	return strings.Join(parts, ".")
}
