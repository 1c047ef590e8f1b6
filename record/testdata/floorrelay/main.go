// Command floorrelay is the least a recording stdio shim can do, for the
// recorder's throughput benchmark: it runs a server and relays both ways in
// chunks, writing each chunk to a tape file (raw, no framing, no _meta)
// before forwarding it, with the same 1 MiB pipes as the shim. What it gets
// against a direct connection bounds what the shim can get on the machine.
//
// Usage: floorrelay TAPE|- COMMAND [ARG...]
package main

import (
	"io"
	"os"
	"os/exec"
	"sync"

	"golang.org/x/sys/unix"
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
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	in, err1 := cmd.StdinPipe()
	out, err2 := cmd.StdoutPipe()
	if err1 != nil || err2 != nil || cmd.Start() != nil {
		os.Exit(2)
	}
	for _, f := range []any{os.Stdin, os.Stdout, in, out} {
		if x, ok := f.(interface{ Fd() uintptr }); ok {
			_, _ = unix.FcntlInt(x.Fd(), unix.F_SETPIPE_SZ, 1<<20)
		}
	}
	var mu sync.Mutex
	go func() { relay(os.Stdin, in, tape, &mu); in.Close() }()
	relay(out, os.Stdout, tape, &mu)
	_ = cmd.Wait()
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
