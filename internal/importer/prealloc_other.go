//go:build !linux

package importer

import "os"

// preallocate does nothing here (prealloc_linux.go).
func preallocate(*os.File, int64) (release func()) { return func() {} }
