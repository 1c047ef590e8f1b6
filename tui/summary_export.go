package tui

import "github.com/tapedeck/tapedeck/tape"

// Summary is the timeline's summary column for message e (raw, without
// its tape metadata; method is the request's for a response), for tools
// outside the debugger that ask how it is shown (the coverage table).
func Summary(e tape.Entry, raw []byte, method string) string { return summarize(e, raw, method) }

// SummaryMax is the longest summary the column writes.
const SummaryMax = summaryMax
