package record_test

import (
	"os"
	"testing"

	"github.com/tapedeck/tapedeck/internal/mcptest"
)

func TestMain(m *testing.M) {
	if d := os.Getenv(echoServerEnv); d != "" {
		os.Exit(serveEcho(d)) // the test binary re-executed as a benchmark's server
	}
	if os.Getenv(clientEnv) != "" {
		os.Exit(serveClient()) // the test binary re-executed as the benchmark's client
	}
	mcptest.Main(m)
}
