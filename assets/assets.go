// Package assets holds the files tapedeck embeds in its binary: the demo tape
// that "tapedeck open" shows when it is given no tape.
package assets

import _ "embed"

// DemoTape is a real session recorded by the project's peer harness: the
// official Go SDK client talking to two servers at once (npm
// server-everything and the SDK's own test server) over stdio. It holds
// initialize, tools/list, tool calls with progress and logging
// notifications, tool and protocol errors, a server-to-client roots/list
// request with its reply, concurrent calls answered out of order, and a
// variant-dependent call ("answer") that is the natural place to diverge.
//
//go:embed demo.tape.jsonl
var DemoTape []byte

// DemoName is the name the TUI shows for DemoTape.
const DemoName = "demo.tape.jsonl (embedded)"
