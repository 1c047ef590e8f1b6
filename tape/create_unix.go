//go:build unix

package tape

import (
	"errors"
	"os"
	"syscall"
)

// oNoFollow makes opening a symbolic link fail (ELOOP) instead of opening
// its target.
const oNoFollow = syscall.O_NOFOLLOW

func isSymlinkRefusal(path string, err error) bool {
	if errors.Is(err, syscall.ELOOP) {
		return true
	}
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&os.ModeSymlink != 0
}

// ownedByMe reports the file's owner and whether it is the effective user.
func ownedByMe(fi os.FileInfo) (int, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return -1, true
	}
	return int(st.Uid), int(st.Uid) == os.Geteuid()
}

// oNonBlock opens a named pipe without waiting for a writer.
const oNonBlock = syscall.O_NONBLOCK
