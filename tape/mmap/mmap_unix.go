//go:build unix

package mmap

import (
	"os"

	"golang.org/x/sys/unix"
)

func mapRange(f *os.File, off, length int64, advice Advice) ([]byte, func() error, error) {
	if length <= 0 || length != int64(int(length)) {
		return nil, nil, unix.EINVAL
	}
	flags := unix.MAP_SHARED
	if advice&Populate != 0 {
		flags |= mapPopulate
	}
	data, err := unix.Mmap(int(f.Fd()), off, int(length), unix.PROT_READ, flags)
	if err != nil {
		return nil, nil, err
	}
	if advice&Sequential != 0 {
		_ = unix.Madvise(data, unix.MADV_SEQUENTIAL)
	}
	return data, func() error { return unix.Munmap(data) }, nil
}
