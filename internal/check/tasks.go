package check

import (
	"fmt"

	"github.com/tapedeck/tapedeck/tape"
)

// taskFindings adds a finding for each task of x that ended failed or
// cancelled (RuleTaskFailed), and, with --max-duration, each that ran
// longer (RuleSlow): a task is one thing, whose duration is from its
// creation to its terminal status, not its creating call's few
// milliseconds.
func taskFindings(x *tape.Index, o Options, add func(rule string, seq int, server, msg string)) {
	for _, t := range tape.Tasks(x) {
		what := fmt.Sprintf("task %s (%s)", t.ID, tape.TaskCreator(x, t))
		at := t.Terminal
		if at < 0 {
			at = max(t.Create, t.Created)
		}
		if t.Failed() {
			add(RuleTaskFailed, at, t.Server, fmt.Sprintf("%s ended %s after %s", what, t.Status, tape.FormatLatency(1, t.Duration())))
		}
		if d := t.Duration(); o.MaxDuration > 0 && d > o.MaxDuration {
			add(RuleSlow, at, t.Server, fmt.Sprintf("%s ran %s, over %s", what, tape.FormatLatency(1, d), o.MaxDuration))
		}
	}
}
