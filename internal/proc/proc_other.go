//go:build !linux

package proc

import (
	"os"
	"syscall"
)

// sysProcAttr puts the server in its own process group, so that signals
// reach its children too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

func pipe() (r, w *os.File, err error) { return os.Pipe() }

// GrowPipe does nothing outside Linux.
func GrowPipe(f any) {}

// BecomeSubreaper does nothing outside Linux.
func BecomeSubreaper() error { return nil }

// KillOrphans does nothing outside Linux.
func KillOrphans() int { return 0 }
