//go:build !unix

package replay

import "os"

// blockingPipe: os.Pipe's ends, which are not polled here.
func blockingPipe() (r, w *os.File, err error) { return os.Pipe() }
