//go:build !unix

package tape

import "os"

const oNoFollow = 0

func isSymlinkRefusal(path string, err error) bool {
	fi, lerr := os.Lstat(path)
	return lerr == nil && fi.Mode()&os.ModeSymlink != 0
}

func ownedByMe(os.FileInfo) (int, bool) { return -1, true }

const oNonBlock = 0
