// Package rules is tapedeck's interception engine: a rules file says which
// messages to fault (match), what to do to them (action) and how often
// (schedule), and the recorders (record's stdio shim and HTTP proxy) and
// replay's servers ask it about every message they pass on.
//
// # Design
//
//   - A Set is a parsed, compiled rules file: compiled once, read-only
//     afterwards except for each rule's schedule counter and random source.
//   - A Conn is one connection's view of a Set: it pairs responses with the
//     requests they answer, so a rule on a response can name the method and
//     the tool of its call. Conn.Apply is the one entry point: given a
//     message and its direction it returns a Decision, what to send on in
//     place of the message, what to answer its sender, how long to wait,
//     whether to cut the connection, and the Injection records the tape
//     carries in _meta.injected.
//   - A message no rule could match costs a classification (tape.Classify)
//     and a few string comparisons: each rule's phase, direction, method
//     and target are checked before its expression, and the expression is
//     given only the members it names, decoded on demand.
//   - Schedules count matches per rule; a probability draws from the rule's
//     own random source, seeded from the Set's seed and the rule's name, so
//     the same session with the same seed faults the same messages.
//
// The package imports tape and nothing else of tapedeck, so record and
// replay can both use it.
package rules
