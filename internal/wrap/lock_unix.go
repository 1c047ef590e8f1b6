//go:build unix

package wrap

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes an exclusive flock on the file at path, created if need
// be, or returns errLocked. The file is removed on release while still
// locked; a waiter that locked a file since removed tries again.
func tryLock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, errLocked
		}
		return nil, err
	}
	if !sameFile(f, path) {
		f.Close() // the holder before us removed it: take the new one
		return nil, errLocked
	}
	return func() {
		os.Remove(path)
		f.Close()
	}, nil
}
