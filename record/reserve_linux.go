package record

import (
	"io"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// reserver has the file system reserve a tape file's blocks ahead of the
// shim's writes (fallocate with FALLOC_FL_KEEP_SIZE: the file's size stays
// what is written, a reader never sees the reserve), so that a write(2)
// finds its blocks allocated instead of allocating them (ext4's delayed
// allocation, block by block). The bytes still reach the page cache by the
// same write(2) before they are forwarded: the guarantee is unchanged.
// The reserve grows with the tape (as much as is written, between 1 MiB
// and 64 MiB at a time), so a short session reserves little; release
// frees what was not used. A crash leaves at most one step reserved past
// the end, which a later --append writes into or deleting the tape frees.
// A file system without fallocate, or a failed call (no room), stops the
// reserving: the tape is written as before.
//
// Shims may append to one tape at once (a client run again with --append
// while the shim before shuts down): each holds a shared flock on the tape
// while it reserves, and release frees the blocks past the end only under
// an exclusive one, when no other shim is writing. Its truncate to the size
// it has just read would otherwise cut the lines another appended in
// between; the last shim to end frees what all reserved. A writer that
// takes no flock (another program appending to the tape) is not covered.
type reserver struct {
	f        *os.File
	size     int64 // the tape's size as written
	reserved int64 // the end of the blocks reserved so far
	off      bool
}

const (
	minReserve = 1 << 20
	maxReserve = 64 << 20
	// lockWait bounds the wait for the tape's shared lock (newReserver).
	lockWait = time.Second
)

// newReserver returns a reserver for w if it is a regular file, else nil.
func newReserver(w io.Writer) *reserver {
	f, ok := w.(*os.File)
	if !ok {
		return nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		return nil
	}
	// A shim releasing its reserve holds the tape's exclusive lock for a
	// stat and a truncate: this one waits for it, up to lockWait (another
	// program holding the lock longer costs this run its reserve, without
	// which no other shim's release can cut its lines).
	for deadline := time.Now().Add(lockWait); ; time.Sleep(time.Millisecond) {
		if err := unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB); err == nil {
			break
		} else if err != unix.EWOULDBLOCK || time.Now().After(deadline) {
			return nil
		}
	}
	return &reserver{f: f, size: st.Size(), reserved: st.Size()}
}

// ahead makes sure n more bytes land in reserved blocks; the caller holds
// the tape's lock.
func (r *reserver) ahead(n int) {
	if r == nil || r.off || r.size+int64(n) <= r.reserved {
		return
	}
	step := min(max(r.size, minReserve), maxReserve)
	from := max(r.reserved, r.size)
	if err := unix.Fallocate(int(r.f.Fd()), unix.FALLOC_FL_KEEP_SIZE, from, r.size+int64(n)-from+step); err != nil {
		r.off = true
		return
	}
	r.reserved = r.size + int64(n) + step
}

// wrote counts n bytes written to the tape.
func (r *reserver) wrote(n int) {
	if r != nil {
		r.size += int64(n)
	}
}

// release frees the reserve past the tape's end (a truncate to the file's
// own size, which does not change it), if anything was reserved and no
// other shim holds the tape (its release frees it then), and lets go of
// the tape's lock.
func (r *reserver) release() {
	if r == nil {
		return
	}
	fd := int(r.f.Fd())
	defer unix.Flock(fd, unix.LOCK_UN)
	if r.reserved <= r.size && !r.off {
		return
	}
	if unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB) != nil {
		return
	}
	if st, err := r.f.Stat(); err == nil {
		_ = r.f.Truncate(st.Size())
	}
}
