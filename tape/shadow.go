package tape

import "strings"

// The shadow lane (record --shadow, --shadow-cmd)
//
// A recording may send a copy of the client's traffic to a second server,
// B, the shadow of the recorded server A. B's exchanges go on the same
// tape as a server of their own, named A's name with ShadowSuffix
// ("everything~shadow"), so every reader pairs them apart from A's. Each
// record of the lane carries, besides dir, server and ts:
//
//   - MetaShadow: true;
//   - MetaShadowOf: on B's request and its answer, the id of the client's
//     request (to A) it copies: the pointer from B's call to A's. B's ids
//     are B's own (the recorder numbers them), so the lane pairs by
//     itself; over HTTP the lane's records carry B's own Mcp-Session-Id as
//     MetaSession and, in MetaShadowSession, the client's (A's) session
//     the copy came from.
//
// Lifecycle records of the lane: MethodStart and MethodClose around it
// (params "shadowOf": A's name), and MethodShadowDropped for a client
// message that never reached B (params "reason": the queue was full, B
// was gone or had not opened its session; "method" and "id" when it was
// a request). Calls of A that B never got are not differences; calls B
// did not answer are (diff --shadow).
//
// B's own requests to the client (sampling, roots) never reach the client:
// the recorder answers them with an error, recorded on the lane. The
// client's answers to A's requests are not copied.
const (
	ShadowSuffix      = "~shadow"
	MetaShadow        = "shadow"
	MetaShadowOf      = "shadowOf"
	MetaShadowSession = "shadowSession"

	MethodShadowDropped = "$shadow/dropped"
)

// ShadowServer is the tape name of the shadow lane of server.
func ShadowServer(server string) string { return server + ShadowSuffix }

// ShadowOf returns the server a shadow lane's name shadows, and whether
// name is a shadow lane's.
func ShadowOf(name string) (string, bool) {
	return strings.CutSuffix(name, ShadowSuffix)
}
