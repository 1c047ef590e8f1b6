// Package tui is tapedeck's terminal debugger, a Bubble Tea (v2) program
// that steps through a tape, or through a live replay, in time.
//
// The screen: a title line; the timeline of messages (seq, time from the
// start, direction, server, method or "↳ method" for a response, tool,
// latency, status); a lower pane showing the selected message as
// highlighted JSON (1), the request beside its response (2), the tape's
// stats (3) or a live divergence (diff); the status line (playback state,
// position N/M, tape time, speed, breakpoints and hits, the live client).
//
// Playback: a debug.Player's position splits the tape. Messages before
// it are delivered; the one at it (▶) and those after are not yet and are
// drawn dimmed, not hidden, so the user can look ahead and set breakpoints
// there. Stepping and playing move the position; the cursor follows the
// last delivered message, or the message a breakpoint stopped before (◆).
// With a live client (tapedeck debug) the engine's answers are held until
// playback delivers the recorded messages they replay, and playback follows
// the client: it waits at each recorded client message until the client
// sends it (Player.SetLimit), then times what follows from its arrival
// (Player.Anchor).
//
// Anatomy: Model (app.go) is the only tea.Model, its state grouped by
// concept (loading, following, filter, playback, live session) and its
// rendering in view.go; each pane (Timeline, Detail,
// Pairing, StatsPane, DiffView, Prompt, BreakpointList) has the bubbles
// shape (New…, Update, View, SetSize, a focus gate, a KeyMap in keys.go);
// one Styles serves every pane, built for a dark or light background. The
// root Update routes in a fixed order: resize, theme, keys (prompt and
// overlays, global keys, then the focused pane), mouse, app messages.
// I/O (indexing, following, filtering, stats, the live session) runs in
// tea.Cmds, and errors come back as messages. The live session's network
// side is debug/serve's Server, reached through debug.Live: this
// package imports no net.
//
// Goals: a tape of a million messages opens at once (indexed in background
// chunks) and every frame reads only the rows on screen. Non-goals: editing
// tapes.
package tui
