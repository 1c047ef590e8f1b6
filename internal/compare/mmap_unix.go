//go:build unix

package compare

import (
	"os"
	"syscall"
)

// mapRange maps length bytes of f from off (a multiple of the page size)
// read-only, read in order.
func mapRange(f *os.File, off, length int64) ([]byte, func() error, error) {
	if length <= 0 || length != int64(int(length)) {
		return nil, nil, syscall.EINVAL
	}
	data, err := syscall.Mmap(int(f.Fd()), off, int(length), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	_ = syscall.Madvise(data, syscall.MADV_SEQUENTIAL)
	return data, func() error { return syscall.Munmap(data) }, nil
}
