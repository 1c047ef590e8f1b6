package proc

import (
	"bytes"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// GrowPipe enlarges f's pipe buffer to 1 MiB if f is a pipe.
func GrowPipe(f any) {
	if x, ok := f.(*os.File); ok {
		_, _ = unix.FcntlInt(x.Fd(), unix.F_SETPIPE_SZ, 1<<20)
	}
}

// sysProcAttr puts the server in its own process group (signals reach its
// children too) and has the kernel kill it if its parent dies, even by
// SIGKILL, so no server is ever orphaned.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// pipe returns a pipe with blocking ends: a blocked read wakes as soon as
// data arrives, without a round through the runtime's poller, which halves
// the latency a recording shim adds.
func pipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, os.NewSyscallError("pipe2", err)
	}
	_, _ = unix.FcntlInt(uintptr(p[0]), unix.F_SETPIPE_SZ, 1<<20)
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// BecomeSubreaper makes the process adopt its orphaned descendants (a
// server's grandchild that left its process group with setsid), so that
// KillOrphans can find them.
func BecomeSubreaper() error { return unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) }

// KillOrphans kills and reaps the process's adopted orphans: children in
// a session other than the process's own (a server's grandchild that left
// with setsid; the servers the process started itself share its session),
// and theirs as they are adopted in turn. It returns how many it killed.
func KillOrphans() int {
	own, err := unix.Getsid(0)
	if err != nil {
		return 0
	}
	killed := 0
	for range 16 { // each round adopts the next generation
		var pids []int
		for _, pid := range children() {
			if sid, ok := sessionOf(pid); ok && sid != own {
				pids = append(pids, pid)
			}
		}
		if len(pids) == 0 {
			break
		}
		for _, pid := range pids {
			if syscall.Kill(pid, syscall.SIGKILL) == nil {
				killed++
			}
			var ws syscall.WaitStatus
			_, _ = syscall.Wait4(pid, &ws, 0, nil)
		}
	}
	return killed
}

// children lists the process's children, from /proc/self/task/*/children.
func children() []int {
	tasks, _ := os.ReadDir("/proc/self/task")
	var pids []int
	for _, t := range tasks {
		b, err := os.ReadFile("/proc/self/task/" + t.Name() + "/children")
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if pid, err := strconv.Atoi(f); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	return pids
}

// sessionOf reads a process's session id from /proc/PID/stat.
func sessionOf(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// pid (comm) state ppid pgrp session ...: comm may hold spaces and
	// parentheses, so the fields start after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 4 {
		return 0, false
	}
	sid, err := strconv.Atoi(f[3])
	return sid, err == nil
}
