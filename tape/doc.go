// Package tape reads and writes tapes: recordings of MCP (Model Context
// Protocol) sessions as newline-delimited JSON, one JSON-RPC message a line
// with a top-level "_meta" object {dir, server, ts}, compatible with the
// recordings mcporter writes.
//
// Goals: never lose or alter a recorded message (the raw bytes of every
// message are kept exactly as recorded, and nothing forwarded is
// re-serialized); read every tape mcporter writes; tolerate damaged tapes
// (a torn last line, a bad line among good ones) with warnings that name the
// line; open a tape of millions of messages quickly, with an [Index] that
// keeps a few dozen bytes per message and reads bodies lazily.
//
// Non-goals: transport handling (see package replay) and any user interface.
//
// The pieces:
//   - [Classify] parses one line into its messages without decoding bodies.
//   - [Reader] streams entries from an io.Reader; [Writer] appends messages.
//   - [Index] holds a compact, incrementally built view of a whole tape,
//     with requests paired to their responses ([Index.Pair]).
//   - [Canonical] and [Normalizer] compare JSON by meaning, for matching.
//   - [ComputeStats] summarizes an index per server and method.
package tape
