package record

import "syscall"

// sysProcAttr puts the server in its own process group (signals reach its
// children too) and has the kernel kill it if the shim dies, even by
// SIGKILL, so no server is ever orphaned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
