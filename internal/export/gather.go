//go:build unix

package export

import (
	"io"
	"io/fs"
	"os"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

const (
	gatherScratch = 256 << 10 // the small pieces' bytes, copied
	gatherPieces  = 1024      // IOV_MAX: the most pieces a writev takes
	gatherBytes   = 1 << 20   // pending bytes that make a writev
)

// gatherWriter writes to a file with writev(2): what is written with
// Write is copied into a scratch buffer that is not overwritten before it
// has gone out, and what is written with WriteAlias (a message's parts,
// slices of the tape's mapping) is not copied at all, the pieces handed
// to the kernel together at the next writev. Aliased pieces must stay
// valid until Flush: the export flushes before the tape is unmapped
// (readCalls). A piece of the mapping the file no longer has (the tape
// cut shorter meanwhile) fails the writev with EFAULT, not a SIGBUS: the
// error is then mmap.ErrShrank.
type gatherWriter struct {
	raw     syscall.RawConn
	name    string
	buf     []byte   // the scratch, its capacity fixed
	pieces  [][]byte // pending: slices of buf, or aliased
	iov     []unix.Iovec
	inBuf   bool // the last piece ends at len(buf)
	pending int
	err     error
}

// newGatherWriter returns a gatherWriter to f, nil when f has no raw
// connection.
func newGatherWriter(f *os.File) sink {
	raw, err := f.SyscallConn()
	if err != nil {
		return nil
	}
	return &gatherWriter{raw: raw, name: f.Name(), buf: make([]byte, 0, gatherScratch),
		pieces: make([][]byte, 0, gatherPieces), iov: make([]unix.Iovec, 0, gatherPieces)}
}

func (g *gatherWriter) Write(p []byte) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(p) > cap(g.buf)-len(g.buf) {
		if g.Flush(); g.err != nil {
			return 0, g.err
		}
		if len(p) > cap(g.buf) {
			// Too large for the scratch: written now, as it is.
			g.pieces = append(g.pieces, p)
			g.Flush()
			if g.err != nil {
				return 0, g.err
			}
			return len(p), nil
		}
	}
	start := len(g.buf)
	g.buf = append(g.buf, p...)
	g.add(g.buf[start:], true)
	return len(p), g.err
}

func (g *gatherWriter) WriteString(s string) (int, error) {
	if g.err != nil {
		return 0, g.err
	}
	if len(s) > cap(g.buf)-len(g.buf) {
		return g.Write([]byte(s))
	}
	start := len(g.buf)
	g.buf = append(g.buf, s...)
	g.add(g.buf[start:], true)
	return len(s), g.err
}

func (g *gatherWriter) WriteByte(c byte) error {
	_, err := g.Write([]byte{c})
	return err
}

// WriteAlias writes p without copying it: p must not change before the
// next Flush. Even a short p is not copied: its bytes are far from the
// scratch (a message's tail, its "}" after _meta), and reading them would
// cost a cache miss each where the kernel may not read them at all
// (/dev/null).
func (g *gatherWriter) WriteAlias(p []byte) {
	if g.err != nil {
		return
	}
	g.add(p, false)
}

// add appends the piece p (inBuf: it ends the scratch's bytes), joined to
// the last piece when both are the scratch's and adjacent, and writes the
// pieces when they are as many as a writev takes or enough bytes.
func (g *gatherWriter) add(p []byte, inBuf bool) {
	if len(p) == 0 {
		return
	}
	g.pending += len(p)
	if inBuf && g.inBuf {
		last := &g.pieces[len(g.pieces)-1]
		*last = (*last)[:len(*last)+len(p)] // the scratch's bytes just after it
	} else {
		g.pieces = append(g.pieces, p)
	}
	g.inBuf = inBuf
	if len(g.pieces) == gatherPieces || g.pending >= gatherBytes {
		g.Flush()
	}
}

// Flush writes the pending pieces, a writev of at most gatherPieces at a
// time, and returns the first error of any write.
func (g *gatherWriter) Flush() error {
	for len(g.pieces) > 0 && g.err == nil {
		// The vector is built here, not by unix.Writev, which allocates
		// one a call.
		g.iov = g.iov[:0]
		for _, p := range g.pieces[:min(len(g.pieces), gatherPieces)] {
			v := unix.Iovec{Base: &p[0]}
			v.SetLen(len(p))
			g.iov = append(g.iov, v)
		}
		var n int
		var werr error
		err := g.raw.Write(func(fd uintptr) bool {
			for {
				r, _, e := unix.Syscall(unix.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&g.iov[0])), uintptr(len(g.iov)))
				n, werr = int(r), nil
				if e != 0 {
					n, werr = 0, e
				}
				if werr != unix.EINTR {
					return werr != unix.EAGAIN
				}
			}
		})
		switch {
		case err != nil:
			g.err = &fs.PathError{Op: "write", Path: g.name, Err: err}
		case werr == unix.EFAULT:
			g.err = mmap.ErrShrank // a piece of the mapping the tape no longer has
		case werr != nil:
			g.err = &fs.PathError{Op: "write", Path: g.name, Err: werr}
		case n <= 0:
			g.err = &fs.PathError{Op: "write", Path: g.name, Err: io.ErrShortWrite}
		}
		if n > 0 {
			g.advance(n)
		}
	}
	clear(g.pieces)
	clear(g.iov) // no pointer into the mapping kept
	g.pieces, g.buf, g.inBuf, g.pending = g.pieces[:0], g.buf[:0], false, 0
	return g.err
}

// advance drops the first n bytes of the pending pieces, written.
func (g *gatherWriter) advance(n int) {
	g.pending -= n
	i := 0
	for i < len(g.pieces) && n >= len(g.pieces[i]) {
		n -= len(g.pieces[i])
		i++
	}
	if i < len(g.pieces) {
		g.pieces[i] = g.pieces[i][n:]
	}
	rest := copy(g.pieces, g.pieces[i:])
	clear(g.pieces[rest:])
	g.pieces = g.pieces[:rest]
}
