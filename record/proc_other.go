//go:build !linux

package record

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

func growPipe(f any) {}

func becomeSubreaper() error { return nil }

func killOrphans() int { return 0 }
