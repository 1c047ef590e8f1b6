//go:build unix

package importer

import (
	"os"
	"syscall"
)

// mapFile maps size bytes of f read-only (the page cache read in place,
// no copy), with a function that unmaps them.
func mapFile(f *os.File, size int64) ([]byte, func(), error) {
	if size <= 0 || size != int64(int(size)) {
		return nil, nil, syscall.EINVAL
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED|mapPopulate)
	if err != nil {
		return nil, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
