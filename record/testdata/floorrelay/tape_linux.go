package main

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

func openTape(path, mode string) (tapeFile, error) {
	switch mode {
	case "pwrite", "mmap", "mmap-ahead":
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
		if err != nil {
			return nil, err
		}
		if mode == "pwrite" {
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, reserve); err != nil {
				return nil, err
			}
			return &pwriteFile{f: f}, nil
		}
		if err := unix.Fallocate(int(f.Fd()), 0, 0, reserve); err != nil {
			return nil, err
		}
		m, err := unix.Mmap(int(f.Fd()), 0, reserve, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
		if err != nil {
			return nil, err
		}
		mf := &mmapFile{f: f, m: m}
		if mode == "mmap-ahead" {
			mf.ahead = make(chan int, 1)
			go mf.populate()
		}
		return mf, nil
	case "chunk", "line", "small", "pipeline", "prealloc", "pipeline-prealloc":
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		if mode == "prealloc" || mode == "pipeline-prealloc" {
			if err := unix.Fallocate(int(f.Fd()), unix.FALLOC_FL_KEEP_SIZE, 0, reserve); err != nil {
				return nil, err
			}
		}
		return &appendFile{f: f}, nil
	}
	return nil, errors.New("unknown mode " + mode)
}

// pwriteFile reserves each chunk's place under a lock and writes it with
// pwrite(2) outside it: the two directions write at once.
type pwriteFile struct {
	mu  sync.Mutex
	off int64
	f   *os.File
}

func (p *pwriteFile) Write(b []byte) (int, error) {
	p.mu.Lock()
	off := p.off
	p.off += int64(len(b))
	p.mu.Unlock()
	return p.f.WriteAt(b, off)
}

func (p *pwriteFile) Close() error {
	p.f.Truncate(p.off)
	return p.f.Close()
}

// mmapFile copies each chunk into the mapping at its reserved place.
// With ahead, a goroutine faults the pages in (MADV_POPULATE_WRITE) a
// window ahead of the writes, off the forwarding path.
type mmapFile struct {
	mu    sync.Mutex
	off   int
	f     *os.File
	m     []byte
	ahead chan int // the write offset, for populate
}

// window is how far ahead of the writes populate keeps the pages faulted.
const window = 8 << 20

func (p *mmapFile) populate() {
	done := 0
	for off := range p.ahead {
		for done < min(off+window, len(p.m)) {
			n := min(1<<20, len(p.m)-done)
			_ = unix.Madvise(p.m[done:done+n], unix.MADV_POPULATE_WRITE)
			done += n
		}
	}
}

func (p *mmapFile) Write(b []byte) (int, error) {
	p.mu.Lock()
	off := p.off
	if off+len(b) > len(p.m) {
		p.mu.Unlock()
		return 0, errors.New("mmap tape full")
	}
	p.off += len(b)
	p.mu.Unlock()
	if p.ahead != nil {
		select {
		case p.ahead <- off + len(b):
		default:
		}
	}
	return copy(p.m[off:], b), nil
}

func (p *mmapFile) Close() error {
	unix.Munmap(p.m)
	p.f.Truncate(int64(p.off))
	return p.f.Close()
}
