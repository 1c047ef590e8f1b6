//go:build !linux

package record

import "syscall"

// sysProcAttr puts the server in its own process group, so that signals
// reach its children too.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
