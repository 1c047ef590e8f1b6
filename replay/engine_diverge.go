package replay

// Divergences: a live message the tape cannot answer.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/internal/jsonrpc"
	"github.com/tapedeck/tapedeck/tape"
)

type heldRequest struct {
	msg tape.Entry
	div *Divergence
}

// newDivergence records a divergence of live message m from recorded
// message exp (or -1).
func (e *Engine) newDivergence(m tape.Entry, exp int, reason Reason) *Divergence {
	d := &Divergence{
		ID: len(e.report.divs) + 1, Server: e.server, Reason: reason,
		Method: m.Method, Expected: exp,
		Raw: json.RawMessage(slices.Clone(m.Raw)), // m.Raw is the caller's buffer
	}
	if m.Kind == tape.KindRequest {
		d.RequestID = json.RawMessage(m.ID)
	}
	if p := gjson.GetBytes(m.Raw, "params"); p.Exists() {
		d.Params = json.RawMessage(p.Raw)
	}
	if exp >= 0 {
		en := e.x.Entry(exp)
		d.ExpectedLine, d.ExpectedMethod = en.Line, en.Method
		if rec, err := e.recorded(exp); err == nil {
			if p := gjson.GetBytes(rec.Raw, "params"); p.Exists() {
				d.ExpectedParams = json.RawMessage(p.Raw)
			}
		}
	}
	e.report.divs = append(e.report.divs, d)
	return d
}

// diverge reports that live request m departs from the tape and answers it
// with the divergence error, or holds it (EngineOptions.Hold).
func (e *Engine) diverge(m tape.Entry, exp int, reason Reason) {
	e.divergeWith(m, exp, reason, "")
}

// divergeWith is diverge with a note on why the request could not be
// compared, added to the message.
func (e *Engine) divergeWith(m tape.Entry, exp int, reason Reason, note string) {
	d := e.newDivergence(m, exp, reason)
	var notes []string
	if note != "" {
		notes = append(notes, note)
	}
	if exp >= 0 && (reason == ReasonMismatch || reason == ReasonRepeat || reason == ReasonUnknown) {
		rec, err := e.recorded(exp)
		var want any
		if err == nil {
			want, err = e.norm.Normalize(rec.Raw)
		}
		if err != nil {
			notes = append(notes, fmt.Sprintf("the recorded request at tape line %d could not be read: %v", d.ExpectedLine, err))
		}
		got, gerr := e.norm.Normalize(m.Raw)
		if gerr != nil {
			notes = append(notes, fmt.Sprintf("the request received could not be decoded: %v", gerr))
		}
		if err == nil && gerr == nil {
			d.Diff = Diff(want, got)
		}
	}
	got := m.Method + " " + paramsText(d.Params)
	switch reason {
	case ReasonMismatch:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s did not match next expected %s %s (tape line %d)", e.server, got, d.ExpectedMethod, paramsText(d.ExpectedParams), d.ExpectedLine)
	case ReasonBeyondEnd:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s came after the last recorded request", e.server, got)
	case ReasonRepeat:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s was sent more often than recorded (last recorded at tape line %d)", e.server, got, d.ExpectedLine)
	case ReasonUnknown:
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s is not on the tape", e.server, got)
		if exp >= 0 {
			d.Message += fmt.Sprintf("; the nearest recorded is %s %s (tape line %d)", d.ExpectedMethod, paramsText(d.ExpectedParams), d.ExpectedLine)
		}
		d.Tolerated = e.opts.Mode == Loose
	}
	if len(d.Diff) > 0 {
		d.Message += " (" + diffSummary(d.Diff) + ")"
	}
	if len(notes) > 0 {
		d.Message += "; " + strings.Join(notes, "; ")
	}
	e.answerDivergence(m, d)
}

// divergeUnreadable reports that live request m could not be matched
// because recorded request exp, the one expected or one of its method,
// could not be read, and why.
func (e *Engine) divergeUnreadable(m tape.Entry, exp int, why error) {
	d := e.newDivergence(m, exp, ReasonUnreadable)
	got := m.Method + " " + paramsText(d.Params)
	if e.opts.Mode == Strict {
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s could not be compared with the next expected: the recorded request at tape line %d could not be read: %v", e.server, got, d.ExpectedLine, why)
	} else {
		d.Message = fmt.Sprintf("replay mismatch for server '%s': request %s is not among the recorded requests that could be read: the recorded request at tape line %d could not be read: %v", e.server, got, d.ExpectedLine, why)
	}
	e.answerDivergence(m, d)
}

// answerDivergence answers live request m with divergence d's error, or
// holds it (EngineOptions.Hold).
func (e *Engine) answerDivergence(m tape.Entry, d *Divergence) {
	if e.opts.Hold {
		e.report.held[d.ID] = heldRequest{msg: m, div: d}
		e.push(nil, e.pos.now, -1, m.ID, d)
		return
	}
	e.sendError(m, d)
}

func (e *Engine) sendError(m tape.Entry, d *Divergence) {
	d.Resolution = SendError
	code := CodeDiverged
	if d.Tolerated {
		code = CodeNotRecorded
	}
	data, _ := json.Marshal(d)
	e.push(jsonrpc.ErrorResponse([]byte(m.ID), code, d.Message, data), e.pos.now, -1, m.ID, d)
}

// Resolve answers a divergence held under EngineOptions.Hold: with the divergence
// error, with the expected recorded response anyway, or by skipping the
// expected recorded request and matching the live request again (which may
// diverge anew). It returns the outputs due by now.
//
// Where no recorded request was expected (Divergence.Expected < 0: the
// client went past the tape's end, or sent a call the tape does not hold),
// there is no recorded response to send and nothing to skip: AnswerRecorded
// and SkipRecorded send the divergence error instead, so the client is
// answered, and the divergence's Resolution says SendError.
func (e *Engine) Resolve(id int, r Resolution, now time.Time) ([]Output, error) {
	h, ok := e.report.held[id]
	if !ok {
		return nil, fmt.Errorf("divergence %d is not awaiting a resolution", id)
	}
	e.pos.now = now
	if h.div.Expected < 0 && (r == AnswerRecorded || r == SkipRecorded) {
		r = SendError
	}
	switch r {
	case SendError:
		e.sendError(h.msg, h.div)
		if exp := h.div.Expected; exp >= 0 && e.opts.Mode == Strict && !e.report.used[exp] {
			// The client has had its answer: the next request is compared
			// with the one recorded after the expected one, which is
			// reported unused (SendErrorKeep keeps expecting it).
			e.order.passed[exp] = true
		}
	case SendErrorKeep:
		e.sendError(h.msg, h.div)
		h.div.Resolution = SendError
	case AnswerRecorded:
		h.div.Resolution = AnswerRecorded
		if e.opts.Mode == Strict || !e.report.used[h.div.Expected] {
			e.consume(h.msg, h.div.Expected)
		} else {
			e.report.matched++
			e.respond(h.msg, h.div.Expected)
		}
	case SkipRecorded:
		h.div.Resolution = SkipRecorded
		e.report.used[h.div.Expected] = true
		e.scanned.skipped++
		e.request(h.msg)
	default:
		return nil, fmt.Errorf("divergence %d: expected a resolution of error, recorded or skip, got %s", id, r)
	}
	delete(e.report.held, id)
	return e.Poll(now), nil
}

// Divergences returns the divergences so far, in order.
func (e *Engine) Divergences() []Divergence {
	out := make([]Divergence, len(e.report.divs))
	for i, d := range e.report.divs {
		out[i] = *d
	}
	return out
}

// paramsText renders params compactly for messages, cut at 300 bytes.
func paramsText(p json.RawMessage) string {
	if len(p) == 0 {
		return "{}"
	}
	var buf bytes.Buffer
	if json.Compact(&buf, p) != nil {
		buf.Reset()
		buf.Write(p)
	}
	s := buf.String()
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

func diffSummary(diff []DiffOp) string {
	parts := make([]string, 0, 3)
	for i, d := range diff {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(diff)-3))
			break
		}
		parts = append(parts, d.String())
	}
	return strings.Join(parts, "; ")
}
