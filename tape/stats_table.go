package tape

import (
	"fmt"
	"time"
)

// statsColumns names the columns of ServerStats.Table; those from
// "negotiation" to "invalid" are left out when they are zero for the whole
// server.
var statsColumns = []string{"method", "dir", "req", "notif", "resp", "err", "tool-err", "negotiation", "orphan", "pending", "cancel", "late", "invalid", "p50", "p95", "p99", "max"}

// Summary is the one-line overview of a tape's stats.
func (st Stats) Summary() string {
	s := fmt.Sprintf("%d messages (%d lifecycle, %d invalid), %d warnings", st.Messages, st.Lifecycle, st.Invalid, st.Warnings)
	switch st.StartFailures {
	case 0:
	case 1:
		s += "; the server failed to start"
	default:
		s += fmt.Sprintf("; %d server starts failed", st.StartFailures)
	}
	return s
}

// Name is the server's name for people: "(unnamed)" for lines without one.
func (ss ServerStats) Name() string {
	if ss.Server == "" {
		return "(unnamed)"
	}
	return ss.Server
}

// Table returns the server's stats as a header and rows of cells: a row a
// method, then the total. The columns of rarer events (negotiation,
// orphan, pending, cancel, late, invalid) appear only when one of them is
// not zero.
// `tapedeck stats` and the debugger's stats pane both print it, so they
// always show the same numbers.
func (ss ServerStats) Table() (header []string, rows [][]string) {
	t := ss.Total
	rare := map[string]int{"negotiation": t.Negotiations, "orphan": t.Orphans, "pending": t.Pending, "cancel": t.Cancelled, "late": t.Late, "invalid": t.Invalid}
	var keep []int
	for i, c := range statsColumns {
		if n, ok := rare[c]; ok && n == 0 {
			continue
		}
		keep = append(keep, i)
		header = append(header, c)
	}
	pick := func(row []string) []string {
		out := make([]string, len(keep))
		for i, k := range keep {
			out[i] = row[k]
		}
		return out
	}
	for _, m := range ss.Methods {
		rows = append(rows, pick(m.row(m.label(), string(m.Dir))))
	}
	return header, append(rows, pick(t.row("total", "")))
}

func (m MethodStats) label() string {
	switch {
	case m.Bucket != "":
		return "(" + m.Bucket + ")"
	case m.Method == "":
		return `""` // a message whose method is the empty string
	default:
		return m.Method
	}
}

func (m MethodStats) row(label, dir string) []string {
	l := m.Latency
	n := func(v int) string { return fmt.Sprint(v) }
	return []string{label, dir, n(m.Requests), n(m.Notifications), n(m.Responses), n(m.Errors), n(m.ToolErrors), n(m.Negotiations), n(m.Orphans),
		n(m.Pending), n(m.Cancelled), n(m.Late), n(m.Invalid),
		FormatLatency(l.Count, l.P50), FormatLatency(l.Count, l.P95), FormatLatency(l.Count, l.P99), FormatLatency(l.Count, l.Max)}
}

// FormatLatency writes a latency for people ("-" when there were no pairs
// to measure): minutes, seconds, milliseconds or microseconds. The
// debugger writes latencies with it too.
func FormatLatency(count int, d time.Duration) string {
	if count == 0 {
		return "-"
	}
	switch {
	case d >= time.Minute:
		return fmt.Sprintf("%.1fm", d.Minutes())
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%dµs", d.Microseconds())
}
