// Package mcptest gives tapedeck's tests real MCP peers to talk to.
//
// It locates the npm peers that .ci/peers.sh installs into .peers/ at the
// repository root (server-everything and mcporter), starts server-everything
// over stdio or streamable HTTP with clean process-group shutdown, builds the
// go-sdk test programs in cmd/sdkclient and cmd/sdkserver, the mcp-go ones in
// cmd/mcpgoclient and cmd/mcpgoserver and mcp-go's own examples (mcpgo.go)
// once per test process (Main removes them when the package's tests end), and makes the
// fixture tapes of testdata/ (TestFixtures -update) with a recorder of its
// own that writes the HTTP dialect's older form, which readers keep
// accepting. Round trips through tapedeck's own recorder are tested where
// it lives (record, cmd/tapedeck).
//
// Goals: tests that exercise real peers, fail loudly when a peer is missing
// (never skip), and leave no process and no file behind. Non-goals: being a
// tape library (that is package tape) or mocking MCP (the peers are real).
//
// This package never imports Bubble Tea.
package mcptest
