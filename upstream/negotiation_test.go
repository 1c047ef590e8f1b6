package upstream

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/tapedeck/tapedeck/tape"
)

// scriptedConn answers each request Verify sends with answer(method, id).
type scriptedConn struct {
	answer func(method, id string) string
	out    []string
}

func (c *scriptedConn) Send(_ context.Context, msg []byte) error {
	if m := gjson.GetBytes(msg, "method"); m.Exists() && gjson.GetBytes(msg, "id").Exists() {
		c.out = append(c.out, c.answer(m.String(), gjson.GetBytes(msg, "id").Raw))
	}
	return nil
}

func (c *scriptedConn) Recv(context.Context) ([]byte, error) {
	if len(c.out) == 0 {
		return nil, io.EOF
	}
	m := c.out[0]
	c.out = c.out[1:]
	return []byte(m), nil
}

// A probe the recorded server rejected is version negotiation: it passes
// whether the live server rejects it too (another way) or answers it; a
// probe that succeeded when recorded is compared as any call.
func TestVerifyNegotiation(t *testing.T) {
	rejected := verifyProbeTape(t, `{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}`)
	for _, tt := range []struct {
		name, live, want string
	}{
		{"rejected again", `{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"Bad Request: Server not initialized"}}`, "and so did the live one"},
		{"an HTTP 400 without a message", string(httpError("ID", "400 Bad Request", []byte("no session"))), "and so did the live one"},
		{"answered", `{"jsonrpc":"2.0","id":ID,"result":{"supportedVersions":["2026-07-28"]}}`, "the live one answered it (not compared)"},
	} {
		conn := &scriptedConn{answer: func(method, id string) string {
			if method == tape.MethodDiscover {
				return strings.ReplaceAll(strings.ReplaceAll(tt.live, `"ID"`, id), "ID", id)
			}
			return `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25"}}`
		}}
		rep, err := Verify(context.Background(), rejected, conn, VerifyOptions{Timeout: time.Second}, nil)
		if err != nil || rep.Err() != nil {
			t.Fatalf("%s: verify: %v, %v", tt.name, err, rep.Err())
		}
		if c := rep.Calls[0]; !c.Pass || !strings.Contains(c.Negotiation, tt.want) {
			t.Errorf("%s: the probe: pass %v, %q; want a pass saying %q", tt.name, c.Pass, c.Negotiation, tt.want)
		}
	}
	answered := verifyProbeTape(t, `{"jsonrpc":"2.0","id":1,"result":{"supportedVersions":["2026-07-28"]}}`)
	conn := &scriptedConn{answer: func(method, id string) string {
		if method == tape.MethodDiscover {
			return `{"jsonrpc":"2.0","id":` + id + `,"error":{"code":-32601,"message":"Method not found"}}`
		}
		return `{"jsonrpc":"2.0","id":` + id + `,"result":{"protocolVersion":"2025-11-25"}}`
	}}
	rep, err := Verify(context.Background(), answered, conn, VerifyOptions{Timeout: time.Second}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c := rep.Calls[0]; c.Pass || c.Negotiation != "" {
		t.Errorf("a probe answered when recorded, rejected live: pass %v, %q; want a failure", c.Pass, c.Negotiation)
	}
}

// verifyProbeTape is a session whose server rejected the client's
// server/discover probe with rejection before the client initialized.
func verifyProbeTape(t *testing.T, rejection string) *tape.Index {
	return buildIndex(t, nil,
		hline{"send", `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, nil},
		hline{"recv", rejection, nil},
		hline{"send", `{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}`, nil},
		hline{"recv", `{"jsonrpc":"2.0","id":2,"result":{"protocolVersion":"2025-11-25"}}`, nil},
	)
}
