package tape

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// DefaultMaxPipe is the most Open reads from a pipe: past it the pipe is
// refused (a writer that never stops, "cat /dev/zero |"), instead of
// filling the temporary directory.
const DefaultMaxPipe = 4 << 30

// Open opens a tape for reading. A regular file is opened as it is. A pipe
// (a named pipe, "<(cat t)", "/dev/stdin" fed by "cat t |") is read to its
// end into an unlinked temporary file, which is what Open returns, since
// an Index reads its tape at random; the pipe is opened without blocking, so
// a named pipe no one writes to is an error at once instead of a hang in
// open(2) that no signal ends. Directories, devices and sockets are refused
// with a message that says what the path is. A pipe is read up to
// DefaultMaxPipe bytes; OpenContext sets another bound and stops reading
// when its context is done.
func Open(path string) (*os.File, error) {
	return OpenContext(context.Background(), path, DefaultMaxPipe)
}

// OpenContext is Open with a pipe read up to maxPipe bytes (0 means
// DefaultMaxPipe), and its reading stopped with ctx's error when ctx is
// done (a writer that writes slowly, or not at all, does not hold it).
func OpenContext(ctx context.Context, path string, maxPipe int64) (*os.File, error) {
	if maxPipe <= 0 {
		maxPipe = DefaultMaxPipe
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return os.Open(path)
	case m&os.ModeNamedPipe != 0:
		return spool(ctx, path, maxPipe)
	case m.IsDir():
		return nil, fmt.Errorf("open %s: is a directory, expected a tape file", path)
	default:
		return nil, fmt.Errorf("open %s: is a %s, expected a tape file or a pipe", path, kindOf(m))
	}
}

// spool copies the pipe at path, at most max bytes of it, into an
// unlinked temporary file.
func spool(ctx context.Context, path string, max int64) (*os.File, error) {
	p, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	// A pipe opened without blocking is read through the runtime's poller,
	// so a deadline ends a read that waits: the way ctx stops it.
	stop := context.AfterFunc(ctx, func() { p.SetReadDeadline(time.Now()) })
	defer stop()
	tmp, err := os.CreateTemp("", "tapedeck-pipe-*")
	if err != nil {
		return nil, fmt.Errorf("open %s: a pipe is read into a temporary file first: %w", path, err)
	}
	// Unlinked at once: the open file is all that is left, and it goes
	// when it is closed, whatever happens to the process.
	if err := os.Remove(tmp.Name()); err != nil {
		tmp.Close()
		return nil, err
	}
	n, err := io.Copy(tmp, io.LimitReader(p, max+1))
	if ctx.Err() != nil {
		err = ctx.Err()
	}
	if err == nil && n > max {
		err = fmt.Errorf("expected at most %d bytes, found more (a pipe is copied into a temporary file, and bounded)", max)
	}
	if err == nil && n == 0 {
		err = errors.New("the pipe had no writer, or its writer wrote nothing")
	}
	if err == nil {
		_, err = tmp.Seek(0, io.SeekStart)
	}
	if err != nil {
		tmp.Close()
		return nil, fmt.Errorf("read the pipe %s: %w", path, err)
	}
	return tmp, nil
}

// File returns the file the index reads (for OpenIndex, the tape, or a
// pipe's copy in an unlinked temporary file), nil when its source is not
// a file.
func (x *Index) File() *os.File {
	f, _ := x.src.(*os.File)
	return f
}

// ReopenIndexed opens the tape an index was made of again, read from its
// start: the file the index reads when it has one (so a pipe, read once
// into a temporary file, is not read again: it has nothing left), else
// path. A command that indexes a tape and then reads its messages in order
// (export, diff) opens it so.
func ReopenIndexed(x *Index, path string) (*os.File, error) {
	f := x.File()
	if f == nil {
		return Open(path)
	}
	if fi, err := f.Stat(); err == nil {
		if pi, err := os.Stat(f.Name()); err == nil && os.SameFile(fi, pi) {
			return os.Open(f.Name())
		}
	}
	// An unlinked file (a pipe's copy): another descriptor of it. On
	// Linux /dev/fd/N opens the file anew; elsewhere it duplicates the
	// descriptor, whose offset the index does not use (it reads at
	// offsets).
	g, err := os.Open(fmt.Sprintf("/dev/fd/%d", f.Fd()))
	if err != nil {
		return nil, fmt.Errorf("open %s again: %w", path, err)
	}
	if _, err := g.Seek(0, io.SeekStart); err != nil {
		g.Close()
		return nil, fmt.Errorf("open %s again: %w", path, err)
	}
	return g, nil
}
