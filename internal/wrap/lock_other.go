//go:build !unix

package wrap

import (
	"errors"
	"io/fs"
	"os"
)

// tryLock creates the file at path exclusively, or returns errLocked when
// it exists. A lock left by a crashed run must be removed by hand; the
// error names it.
func tryLock(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return nil, errLocked
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	return func() { os.Remove(path) }, nil
}
