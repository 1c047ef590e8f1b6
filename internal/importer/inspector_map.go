package importer

import (
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// inspectorMap maps the export when r is a regular file read from its
// start, of at most max bytes (not empty): its bytes without reading them
// into memory (nor clearing a buffer for them first), read-only, and the
// call that unmaps them. ok is false when r is none such (or mapping
// fails): read it instead. Its bytes are read under mmap.Guard or
// mmap.Catch on every goroutine (the file cut shorter meanwhile).
func inspectorMap(r io.Reader, max int64) (doc []byte, unmap func(), ok bool, err error) {
	inner := r
	if c, isCtx := r.(ctxReader); isCtx {
		if err := c.ctx.Err(); err != nil {
			return nil, nil, false, err
		}
		inner = c.r
	}
	f, isFile := inner.(*os.File)
	if !isFile {
		return nil, nil, false, nil
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() || st.Size() <= 0 || st.Size() > max || st.Size() != int64(int(st.Size())) {
		return nil, nil, false, nil
	}
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
		return nil, nil, false, nil
	}
	data, release, err := mmap.Map(f, 0, st.Size(), mmap.Sequential)
	if err != nil {
		return nil, nil, false, nil
	}
	if afterMap != nil {
		afterMap()
	}
	return data, func() { _ = release() }, true, nil
}
