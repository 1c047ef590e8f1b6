package replay

import (
	"testing"

	"github.com/tapedeck/tapedeck/tape"
)

// probeTape is a session whose server rejected the client's
// server/discover probe with rejection before the client initialized.
func probeTape(t *testing.T, rejection string) *tape.Index {
	return buildIndex(t,
		line{send, 0, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`},
		line{recv, 1, rejection},
		line{send, 2, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`},
		line{recv, 3, `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25"}}`},
	)
}

// A strict replay skips a recorded probe the server rejected as version
// negotiation when the live client starts with initialize; a probe that
// failed otherwise is a recorded request like any other.
func TestStrictSkipsNegotiation(t *testing.T) {
	init := `{"jsonrpc":"2.0","id":7,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`
	e := mustEngine(t, probeTape(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`), EngineOptions{})
	feed(t, e, init)
	if r := e.Report(); r.Err() != nil || len(r.Divergences) != 0 {
		t.Errorf("a rejected probe, then initialize: %v %+v", r.Err(), r.Divergences)
	}
	e = mustEngine(t, probeTape(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32603,"message":"Internal error"}}`), EngineOptions{})
	feed(t, e, init)
	if r := e.Report(); len(r.Divergences) != 1 {
		t.Errorf("a probe that failed with -32603, then initialize: %d divergences, want 1", len(r.Divergences))
	}
}
