package record

import (
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// growPipe enlarges f's pipe buffer if f is a pipe.
func growPipe(f any) {
	if x, ok := f.(*os.File); ok {
		_, _ = unix.FcntlInt(x.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
}

// sysProcAttr puts the server in its own process group (signals reach its
// children too) and has the kernel kill it if the shim dies, even by
// SIGKILL, so no server is ever orphaned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pipe returns a pipe with blocking ends: a blocked read wakes as soon as
// data arrives, without a round through the runtime's poller, which halves
// the latency the shim adds.
func pipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	_, _ = unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, 1<<20)
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}
