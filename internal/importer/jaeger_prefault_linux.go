package importer

import (
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// prefault has the kernel give b's pages (zeroed, writable) ahead of a
// reader filling b from the start, on another goroutine: a large answer
// read into fresh memory otherwise takes a page fault every 4 KiB inside
// the reads, the zeroing of hundreds of megabytes on the reading core.
// MADV_POPULATE_WRITE leaves what pages hold as it is, so it may run over
// pages already read into. stop ends it (after the chunk it is on).
func prefault(b []byte) (stop func()) {
	const chunk = 4 << 20
	if len(b) < 4*chunk {
		return func() {}
	}
	base := uintptr(unsafe.Pointer(&b[0]))
	page := uintptr(unix.Getpagesize())
	from := int((base+page-1)&^(page-1) - base)
	to := int((base+uintptr(len(b)))&^(page-1) - base)
	var quit atomic.Bool
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := from; i < to && !quit.Load(); i += chunk {
			if unix.Madvise(b[i:min(i+chunk, to)], unix.MADV_POPULATE_WRITE) != nil {
				return // an older kernel: the reads fault the pages in
			}
		}
	})
	return func() {
		quit.Store(true)
		wg.Wait()
	}
}
