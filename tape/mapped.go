package tape

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// MappedLines reads the lines of a file by their offsets through read-only
// mappings of a window at a time (no copy, and no more than a window, or
// the longest line, resident), the window moved as the reading goes
// forward. It is how the index reads a large tape (mapRange), for readers
// that walk messages in the index's order (internal/compare).
type MappedLines struct {
	f      *os.File
	size   int64
	data   []byte // the file's bytes from base
	base   int64
	unmap  func() error
	window int64
}

// MapLines maps the first window bytes of f, a regular file of size bytes;
// an error when it cannot be mapped (or the system has no mappings).
func MapLines(f *os.File, size, window int64) (*MappedLines, error) {
	data, unmap, err := mmap.Map(f, 0, min(size, window), mmap.Sequential)
	if err != nil {
		return nil, err
	}
	if afterMap != nil {
		afterMap()
	}
	return &MappedLines{f: f, size: size, data: data, unmap: unmap, window: window}, nil
}

// Line returns the line at off (call it, and read the line, under Guard), without its "\n" (the file's last line may
// have none), valid until the next call or Close.
func (m *MappedLines) Line(off int64) ([]byte, error) {
	if off >= m.size {
		return nil, io.ErrUnexpectedEOF
	}
	page := int64(os.Getpagesize())
	length := m.window
	for {
		end := m.base + int64(len(m.data))
		if off >= m.base && off < end {
			rest := m.data[off-m.base:]
			k := bytes.IndexByte(rest, '\n')
			if k >= 0 {
				return rest[:k], nil
			}
			if end == m.size {
				return rest, nil
			}
			if m.base == off&^(page-1) {
				length = 2 * int64(len(m.data)) // one line longer than the window
			}
		}
		_ = m.Close()
		base := off &^ (page - 1)
		data, unmap, err := mmap.Map(m.f, base, min(m.size-base, length), mmap.Sequential)
		if err != nil {
			return nil, fmt.Errorf("map the tape at byte %d: %w", base, err)
		}
		m.data, m.base, m.unmap = data, base, unmap
		if afterMap != nil {
			afterMap()
		}
	}
}

// Guard runs fn, which calls Line and reads the lines it returns on this
// goroutine, under mmap.Guard: the file cut shorter meanwhile is an error
// naming it and wrapping mmap.ErrShrank, not a crash.
func (m *MappedLines) Guard(fn func() error) error {
	return shrank(m.f, mmap.Guard(fn))
}

// Close unmaps the window.
func (m *MappedLines) Close() error {
	if m.unmap == nil {
		return nil
	}
	err := m.unmap()
	m.unmap, m.data = nil, nil
	return err
}
