package tape

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// Open opens a tape for reading. A regular file is opened as it is. A pipe
// (a named pipe, "<(cat t)", "/dev/stdin" fed by "cat t |") is read to its
// end into an unlinked temporary file, which is what Open returns, since
// an Index reads its tape at random; the pipe is opened without blocking, so
// a named pipe no one writes to is an error at once instead of a hang in
// open(2) that no signal ends. Directories, devices and sockets are refused
// with a message that says what the path is.
func Open(path string) (*os.File, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	switch m := st.Mode(); {
	case m.IsRegular():
		return os.Open(path)
	case m&os.ModeNamedPipe != 0:
		return spool(path)
	case m.IsDir():
		return nil, fmt.Errorf("open %s: is a directory, expected a tape file", path)
	default:
		return nil, fmt.Errorf("open %s: is a %s, expected a tape file or a pipe", path, kindOf(m))
	}
}

// spool copies the pipe at path into an unlinked temporary file.
func spool(path string) (*os.File, error) {
	p, err := os.OpenFile(path, os.O_RDONLY|oNonBlock, 0)
	if err != nil {
		return nil, err
	}
	defer p.Close()
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
	n, err := io.Copy(tmp, p)
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
