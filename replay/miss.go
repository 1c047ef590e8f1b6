package replay

// Tape misses
//
// A request the tape cannot answer (a strict mismatch or the end of the
// tape, a keyed call never recorded or repeated more often) is a miss.
// By default the client gets the divergence error; with a Miss hook
// (StdioOptions.Miss, go-vcr's passthrough predicate) the edge offers it
// the request first, and a hook that takes it answers it itself: package
// upstream's Fallthrough sends it to a live server and records the
// exchange. What the live server answered is no divergence (FallbackReport).

import "github.com/tapedeck/tapedeck/debug"

// OutcomeAnswered is FellThrough.Outcome when the live server answered.
const OutcomeAnswered = debug.OutcomeAnswered

// FellThrough says a request went to the live server (debug's type).
type FellThrough = debug.FellThrough

// missReason reports whether a divergence's reason means the tape lacks
// the request (which a live server may answer) rather than a reply gone
// wrong.
func missReason(r Reason) bool {
	switch r {
	case ReasonMismatch, ReasonUnknown, ReasonRepeat, ReasonBeyondEnd:
		return true
	}
	return false
}

// IsMiss reports whether d is a request the tape lacks: a divergence a
// Miss hook is offered.
func IsMiss(d *Divergence) bool {
	return d != nil && len(d.RequestID) > 0 && missReason(d.Reason)
}

// FallbackReport takes the divergences the live server answered out of
// rep: they were answered, by the server instead of the tape. A request
// that fell through and got the client an error instead (the live server
// ended, or did not answer in time) stays a divergence.
func FallbackReport(rep *Report, fell []FellThrough) {
	rep.FellThrough = fell
	if len(fell) == 0 {
		return
	}
	ids := map[string]bool{}
	for _, f := range fell {
		if f.Answered() {
			ids[string(f.ID)] = true
		}
	}
	kept := rep.Divergences[:0]
	for _, d := range rep.Divergences {
		if missReason(d.Reason) && ids[string(d.RequestID)] {
			continue
		}
		kept = append(kept, d)
	}
	rep.Divergences = kept
}
