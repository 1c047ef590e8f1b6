// Command floorrelay is the least a stdio shim can do, for the recorder's
// benchmarks: it starts a server the way the shim does (internal/proc, the
// same blocking 1 MiB pipes, its own stdin and stdout grown to 1 MiB too)
// and relays both ways in chunks, parsing nothing. With a TAPE it writes
// what it reads to that file (raw, no framing, no _meta) before forwarding
// it (the floor of a recording shim); with "-" it writes no tape: the bare
// relay, the floor of any shim, which the shim's budget is measured against.
//
// -mode=M chooses how a recording relay writes its tape, every one of them
// before the bytes are forwarded (the floor variants the throughput
// benchmark compares):
//
//	chunk     one write(2) per chunk read, O_APPEND (the default)
//	line      one write(2) per line of the chunk, O_APPEND
//	small     chunk, reading in 16 KiB instead of 1 MiB
//	prealloc  chunk, into a file preallocated with
//	          fallocate(FALLOC_FL_KEEP_SIZE)
//	pwrite    one pwrite(2) per chunk at its offset, into a file
//	          preallocated with fallocate(FALLOC_FL_KEEP_SIZE)
//	mmap      a memcpy per chunk into a preallocated file mapped shared
//	          (the page cache holds it: a crash of the process loses nothing)
//	mmap-ahead  mmap, with a goroutine faulting the pages in 8 MiB ahead
//	          of the writes (MADV_POPULATE_WRITE), off the forwarding path
//	pipeline  a writer goroutine per direction writes chunk N (write(2))
//	          while the reader reads chunk N+1; chunk N is forwarded once
//	          its write is done
//	pipeline-prealloc  pipeline, into a file preallocated as prealloc
//
// Usage: floorrelay [-mode=M] TAPE|- COMMAND [ARG...]
package main

import (
	"bytes"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/tapedeck/tapedeck/internal/proc"
)

// reserve is what the pwrite and mmap modes preallocate: more than a
// benchmark round writes.
const reserve = 1 << 30

func main() {
	args := os.Args[1:]
	mode := "chunk"
	if len(args) > 0 && strings.HasPrefix(args[0], "-mode=") {
		mode, args = strings.TrimPrefix(args[0], "-mode="), args[1:]
	}
	var tape tapeFile
	if args[0] != "-" {
		var err error
		tape, err = openTape(args[0], mode)
		if err != nil {
			os.Stderr.WriteString("floorrelay: " + err.Error() + "\n")
			os.Exit(2)
		}
	}
	proc.GrowPipe(os.Stdin)
	proc.GrowPipe(os.Stdout)
	p, err := proc.Start(proc.Spec{Command: args[1], Args: args[2:], Stderr: os.Stderr, FastPipes: true})
	if err != nil {
		os.Exit(2)
	}
	size := 1 << 20
	if mode == "small" {
		size = 16 << 10
	}
	rel := relay
	switch {
	case tape == nil:
	case mode == "line":
		rel = relayLines
	case mode == "pipeline", mode == "pipeline-prealloc":
		rel = relayPipelined
	}
	done := make(chan struct{})
	go func() { rel(os.Stdin, p.Stdin, tape, size); p.CloseStdin(); close(done) }()
	rel(p.Stdout, os.Stdout, tape, size)
	<-p.Exited()
	if tape != nil {
		tape.Close()
	}
}

// tapeFile is a tape as a mode writes it: Write is safe for concurrent use
// and returns once the bytes are on the tape.
type tapeFile interface {
	Write(b []byte) (int, error)
	Close() error
}

// appendFile is write(2) with O_APPEND, serialized.
type appendFile struct {
	mu sync.Mutex
	f  *os.File
}

func (a *appendFile) Write(b []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.f.Write(b)
}

func (a *appendFile) Close() error { return a.f.Close() }

func relay(r io.Reader, w io.Writer, tape tapeFile, size int) {
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			if tape != nil {
				_, _ = tape.Write(buf[:n])
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

// relayLines writes each line of a chunk to the tape on its own (a last
// part without a newline too), then forwards the chunk.
func relayLines(r io.Reader, w io.Writer, tape tapeFile, size int) {
	buf := make([]byte, size)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			for rest := buf[:n]; len(rest) > 0; {
				k := bytes.IndexByte(rest, '\n') + 1
				if k == 0 {
					k = len(rest)
				}
				_, _ = tape.Write(rest[:k])
				rest = rest[k:]
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

// relayPipelined reads chunk N+1 while a writer goroutine writes chunk N
// to the tape; a forwarder sends chunk N once its write is done. Four
// buffers go round.
func relayPipelined(r io.Reader, w io.Writer, tape tapeFile, size int) {
	const depth = 4
	free := make(chan []byte, depth)
	for range depth {
		free <- make([]byte, size)
	}
	toTape, toPeer := make(chan []byte, depth), make(chan []byte, depth)
	go func() {
		for b := range toTape {
			_, _ = tape.Write(b)
			toPeer <- b
		}
		close(toPeer)
	}()
	fwdDone := make(chan struct{})
	go func() {
		defer close(fwdDone)
		broken := false
		for b := range toPeer {
			if !broken {
				_, err := w.Write(b)
				broken = err != nil
			}
			free <- b[:cap(b)]
		}
	}()
	for {
		buf := <-free
		n, err := r.Read(buf)
		if n > 0 {
			toTape <- buf[:n]
		} else {
			free <- buf
		}
		if err != nil {
			break
		}
	}
	close(toTape)
	<-fwdDone
}
