// Command tapedeck records MCP sessions to tapes, replays them, and steps
// through them in a terminal debugger. Run "tapedeck --help".
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"github.com/tapedeck/tapedeck/internal/text"
)

func main() {
	// A peer that closes our stdout or stderr (mcp-go's stdio client closes
	// the child's stderr before waiting for it) makes writes fail with
	// EPIPE instead of killing tapedeck before it writes its report.
	signal.Ignore(syscall.SIGPIPE)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// TAPEDECK_CPUPROFILE=FILE profiles a run (the shim's and the relays'
	// costs are measured this way: go tool pprof FILE).
	if path := os.Getenv("TAPEDECK_CPUPROFILE"); path != "" {
		if f, err := os.Create(path); err == nil {
			if pprof.StartCPUProfile(f) == nil {
				defer f.Close()
				defer pprof.StopCPUProfile()
			}
		}
	}
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if stdoutClosed(err) {
		pprof.StopCPUProfile()
		dieOfSIGPIPE()
	}
	code := exitCode(err, os.Stderr)
	pprof.StopCPUProfile()
	os.Exit(code)
}

// exitError carries an exit status chosen by a command (a recorded server's
// status, or 1 for a divergence) with an optional message.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

func (e *exitError) Unwrap() error { return e.err }

// exitCode decides the process's exit status in one place: 0 on success,
// the status an exitError carries, 1 for any other error (printed on
// stderr as one line). A run whose stdout's reader went away does not get
// here: it dies of SIGPIPE (dieOfSIGPIPE).
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil {
			fmt.Fprintf(stderr, "tapedeck: %s\n", text.Safe(ee.err.Error()))
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "tapedeck: %s\n", text.Safe(err.Error()))
	return 1
}

// stdoutClosed reports whether err is a write to stdout that failed because
// its reader went away (tapedeck stats TAPE | head).
func stdoutClosed(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && pe.Path == os.Stdout.Name() && errors.Is(pe.Err, syscall.EPIPE)
}

// dieOfSIGPIPE ends a run whose stdout's reader went away as cat's ends:
// quietly, killed by SIGPIPE, so that a shell's pipefail (and anyone
// reading the status) sees a run cut short, never the success a cut
// `check` or `diff --exit-code` report did not earn (it exited 0 before).
// SIGPIPE is ignored while tapedeck runs (main); once it is neither
// ignored nor caught, the runtime dies of it on the next write to stdout
// that fails with EPIPE (os/signal). 141 is the status a shell gives that
// death, should the write not fail.
func dieOfSIGPIPE() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE) // no longer ignored
	signal.Reset(syscall.SIGPIPE)                           // nor caught
	os.Stdout.Write([]byte{'\n'})
	os.Exit(128 + int(syscall.SIGPIPE))
}
