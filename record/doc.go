// Package record captures MCP sessions between a real client and a real
// server into tapes, without either side noticing.
//
// Two recorders share one way of writing: every message is on the tape
// before it is forwarded, and writes to the tape are whole lines (the shim
// writes the lines of a chunk it read in one write, then forwards the
// chunk), so a recorder killed at any moment leaves a tape whose lines are
// all complete but perhaps the last.
//
//   - [Stdio] is a transparent shim: the client launches it instead of the
//     server; it starts the server, relays stdin and stdout byte for byte,
//     passes stderr through, forwards signals and makes sure the server does
//     not outlive the session.
//   - [Proxy] is a reverse proxy for Streamable HTTP (and legacy HTTP+SSE):
//     an [net/http.Handler] that forwards requests to an upstream server and
//     relays JSON bodies and SSE streams event by event as they arrive.
//
// Goals: the bytes a peer receives are exactly the bytes the other peer sent
// (never re-serialized, even when the tape copy is redacted); no line-length
// limit; flat memory over long sessions; no orphaned server processes.
//
// Non-goals: matching or replaying tapes (package replay) and any user
// interface. Streams are injected (io.Reader, io.Writer, http.Handler) so
// tests drive the recorders in-process as well as through the tapedeck
// command.
package record
