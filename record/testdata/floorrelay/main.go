// Command floorrelay is the least a stdio shim can do, for the recorder's
// benchmarks: it starts a server the way the shim does (internal/proc, the
// same blocking 1 MiB pipes, its own stdin and stdout grown to 1 MiB too)
// and relays both ways in chunks, parsing nothing. With a TAPE it writes
// each chunk to that file (raw, no framing, no _meta) before forwarding it
// (the floor of a recording shim); with "-" it writes no tape: the bare
// relay, the floor of any shim, which the shim's budget is measured against.
//
// Usage: floorrelay TAPE|- COMMAND [ARG...]
package main

import (
	"io"
	"os"
	"sync"

	"github.com/tapedeck/tapedeck/internal/proc"
)

func main() {
	var tape io.Writer
	if os.Args[1] != "-" {
		f, err := os.OpenFile(os.Args[1], os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			os.Exit(2)
		}
		tape = f
	}
	proc.GrowPipe(os.Stdin)
	proc.GrowPipe(os.Stdout)
	p, err := proc.Start(proc.Spec{Command: os.Args[2], Args: os.Args[3:], Stderr: os.Stderr, FastPipes: true})
	if err != nil {
		os.Exit(2)
	}
	var mu sync.Mutex
	go func() { relay(os.Stdin, p.Stdin, tape, &mu); p.CloseStdin() }()
	relay(p.Stdout, os.Stdout, tape, &mu)
	<-p.Exited()
}

func relay(r io.Reader, w, tape io.Writer, mu *sync.Mutex) {
	buf := make([]byte, 1<<20)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if tape != nil {
				mu.Lock()
				_, _ = tape.Write(buf[:n])
				mu.Unlock()
			}
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}
