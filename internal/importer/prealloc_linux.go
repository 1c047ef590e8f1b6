package importer

import (
	"os"

	"golang.org/x/sys/unix"
)

// preallocate has the file system reserve the blocks of the size bytes a
// tape is about to be written into f with (FALLOC_FL_KEEP_SIZE: f's size
// stays what is written, a reader never sees the reserve), when f is a
// regular file still empty. Writing 250 MB into blocks reserved at once
// costs ~30% less CPU on ext4 than allocating them write by write
// (BenchmarkTapeWriteSizes: 1 MiB writes 66–92 ms, after fallocate 44–49
// ms). The returned release frees what the writes did not use (a
// truncate to f's own size, which does not change it); it does nothing
// when nothing was reserved. A file system without fallocate is written
// as before.
func preallocate(f *os.File, size int64) (release func()) {
	none := func() {}
	if size < 1<<20 {
		return none
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() != 0 {
		return none
	}
	// An error (no fallocate here, no room for the reserve) leaves the file
	// to be written as before; the release frees what a failed call left.
	unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, size)
	return func() {
		if st, err := f.Stat(); err == nil {
			f.Truncate(st.Size()) // the reserve past the end freed, the size as written
		}
	}
}
