//go:build !unix

package export

import "os"

// newGatherWriter is nil where there is no writev: a bufio.Writer then.
func newGatherWriter(*os.File) sink { return nil }
