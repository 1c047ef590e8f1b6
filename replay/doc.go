// Package replay plays tapes back: it serves a recorded MCP session to a
// live client in place of the real server (Engine), plays a tape in time for
// the debugger (Player), and drives a live server with a tape's client
// side to check it still answers the same (Verify).
//
// Goals: deterministic replays that fail loudly and precisely at the first
// point where a client departs from the tape (a JSON-RPC error naming both
// sides, with a structured diff); tolerance of what legitimately varies
// between runs (ids, protocol versions, client identity, volatile _meta,
// user-chosen paths); replay speed close to a trivial in-memory server; and
// tapes of millions of messages that start serving at once, because bodies
// are read lazily from the tape's Index.
//
// The Engine and the Player are synchronous: no goroutines, no clock
// reads. Time comes in as arguments and I/O lives at the edges (the stdio and
// HTTP servers in this package, the TUI's commands), so the same engine
// serves the headless replay server and the debugger.
//
// Non-goals: recording (package record) and any user interface;
// this package never imports Bubble Tea.
package replay
