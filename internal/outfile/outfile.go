// Package outfile writes a command's output file whole or not at all: the
// bytes go to a temporary file beside the target, renamed over it once the
// command has written everything, and removed if it fails, so that a file
// an export, a report or a rewritten configuration leaves behind is never
// a half-written one that looks complete. A target that is not a regular
// file (a terminal, a named pipe, /dev/stdout) is written in place.
package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// File is an output file being written: Write to it, then Commit (the
// target holds what was written) or Abort (the target is as it was).
type File struct {
	*os.File
	target string
	temp   bool // written to a temporary file, renamed at Commit
	sync   bool
	ended  bool
}

// Options of Create.
type Options struct {
	// Perm is the new file's mode; an existing target keeps its own.
	Perm fs.FileMode
	// Sync flushes the file and its directory to the disk at Commit (a
	// configuration file that must survive a crash).
	Sync bool
	// Inputs are the files the command reads: a target that is one of
	// them (the same file, by any path) is refused, where it would be
	// replaced by what was made from it.
	Inputs []string
}

// Create starts writing path. A symbolic link is followed (its target is
// replaced); a target that exists and is not a regular file is opened for
// writing as it is.
func Create(path string, o Options) (*File, error) {
	target := path
	if fi, err := os.Lstat(path); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if target, err = filepath.EvalSymlinks(path); err != nil {
			return nil, fmt.Errorf("%s is a symbolic link whose target cannot be reached: %w", path, err)
		}
	}
	perm := o.Perm
	if fi, err := os.Stat(target); err == nil {
		for _, in := range o.Inputs {
			if ii, err := os.Stat(in); err == nil && os.SameFile(fi, ii) {
				what := "the file"
				if in != path {
					what = in + ", the file"
				}
				return nil, fmt.Errorf("%s is %s which this command reads: expected another file to write (writing it would replace the input with what is made from it)", path, what)
			}
		}
		if !fi.Mode().IsRegular() {
			if fi.IsDir() {
				return nil, fmt.Errorf("%s: expected a file, found a directory", target)
			}
			f, err := os.OpenFile(target, os.O_WRONLY, 0)
			if err != nil {
				return nil, err
			}
			return &File{File: f, target: target}, nil
		}
		perm = fi.Mode().Perm()
	}
	tmp, err := os.CreateTemp(filepath.Dir(target), "."+filepath.Base(target)+".tapedeck-*")
	if err != nil {
		return nil, err
	}
	if err := tmp.Chmod(perm); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return nil, err
	}
	return &File{File: tmp, target: target, temp: true, sync: o.Sync}, nil
}

// Commit ends the writing: the target now holds what was written. After
// an error the target is as it was.
func (f *File) Commit() error {
	if f.ended {
		return errors.New("outfile: " + f.target + " already committed or aborted")
	}
	f.ended = true
	if !f.temp {
		return f.File.Close()
	}
	err := error(nil)
	if f.sync {
		err = f.File.Sync()
	}
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.File.Name(), f.target)
	}
	if err != nil {
		os.Remove(f.File.Name())
		return err
	}
	if f.sync {
		if d, err := os.Open(filepath.Dir(f.target)); err == nil {
			_ = d.Sync()
			d.Close()
		}
	}
	return nil
}

// Abort ends the writing without changing the target (what was written
// to a target that is not a regular file stays written). Abort after
// Commit does nothing, so it can be deferred.
func (f *File) Abort() {
	if f.ended {
		return
	}
	f.ended = true
	f.File.Close()
	if f.temp {
		os.Remove(f.File.Name())
	}
}
