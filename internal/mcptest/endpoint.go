package mcptest

import (
	"net"
	"testing"
)

// DeadEndpoint is an http:// address nothing listens on, for tests of what
// a client says when its endpoint cannot be reached: a loopback port that
// was bound and closed again.
func DeadEndpoint(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}
