package main

import (
	"errors"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

func openTape(path, mode string) (tapeFile, error) {
	switch mode {
	case "pwrite", "mmap":
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
		return &mmapFile{f: f, m: m}, nil
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
type mmapFile struct {
	mu  sync.Mutex
	off int
	f   *os.File
	m   []byte
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
	return copy(p.m[off:], b), nil
}

func (p *mmapFile) Close() error {
	unix.Munmap(p.m)
	p.f.Truncate(int64(p.off))
	return p.f.Close()
}
