//go:build unix

package export

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/tapedeck/tapedeck/internal/outfile"
	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/mmap"
)

// gatherOps writes a mix of pieces to s: small copies, strings, bytes,
// aliased pieces short and long, pieces larger than the scratch, and more
// pieces than a writev takes; it returns the bytes written, in order.
func gatherOps(t *testing.T, s sink) []byte {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var want bytes.Buffer
	piece := func(n int) []byte {
		p := make([]byte, n)
		for i := range p {
			p[i] = byte('a' + rng.IntN(26))
		}
		return p
	}
	for i := 0; i < 6000; i++ {
		switch rng.IntN(6) {
		case 0:
			p := piece(rng.IntN(40))
			s.Write(p)
			want.Write(p)
			clear(p) // Write copied it (the caller reuses its buffer)
		case 1:
			p := string(piece(1 + rng.IntN(10)))
			s.WriteString(p)
			want.WriteString(p)
		case 2:
			c := byte('A' + rng.IntN(26))
			s.WriteByte(c)
			want.WriteByte(c)
		case 3, 4:
			p := piece(rng.IntN(5000)) // left alone until Flush
			s.WriteAlias(p)
			want.Write(p)
		case 5:
			n := 1 + rng.IntN(8)
			if rng.IntN(40) == 0 {
				n = gatherScratch + rng.IntN(gatherScratch) // larger than the scratch
			}
			p := piece(n)
			s.Write(p)
			want.Write(p)
			clear(p)
		}
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	return want.Bytes()
}

// The gathering writer writes the bytes a bufio.Writer would, in order,
// to a regular file and to a pipe (whose writev returns after part of its
// pieces when the pipe is full: the rest follows).
func TestGatherWriterWritesInOrder(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		f, err := os.Create(filepath.Join(t.TempDir(), "out"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		s := newSink(f, 1<<16)
		if _, ok := s.(*gatherWriter); !ok {
			t.Fatalf("an *os.File output: expected a gatherWriter, found %T", s)
		}
		want := gatherOps(t, s)
		got, err := os.ReadFile(f.Name())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("file holds %d bytes, expected %d (first difference at %d)", len(got), len(want), firstDiff(got, want))
		}
	})
	t.Run("pipe", func(t *testing.T) {
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		got := make(chan []byte)
		go func() {
			b, _ := io.ReadAll(r)
			got <- b
		}()
		want := gatherOps(t, newSink(w, 1<<16))
		w.Close()
		if b := <-got; !bytes.Equal(b, want) {
			t.Fatalf("pipe gave %d bytes, expected %d (first difference at %d)", len(b), len(want), firstDiff(b, want))
		}
	})
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// An aliased piece of a mapping whose file was cut shorter fails the
// writev with EFAULT, not a SIGBUS: the writer's error is mmap.ErrShrank.
func TestGatherWriterPieceOfAShrunkMapping(t *testing.T) {
	dir := t.TempDir()
	tp := filepath.Join(dir, "t")
	page := os.Getpagesize()
	if err := os.WriteFile(tp, bytes.Repeat([]byte("x"), 4*page), 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := os.Open(tp)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	data, unmap, err := mmap.Map(in, 0, int64(4*page), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unmap()
	out, err := os.Create(filepath.Join(dir, "out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	s := newSink(out, 1<<16)
	s.WriteAlias(data[:page]) // still there
	if err := s.Flush(); err != nil {
		t.Fatalf("a piece of the whole mapping: %v", err)
	}
	if err := os.Truncate(tp, int64(page)); err != nil {
		t.Fatal(err)
	}
	s.WriteString("{")
	s.WriteAlias(data[2*page : 3*page]) // gone
	if err := s.Flush(); !errors.Is(err, mmap.ErrShrank) {
		t.Fatalf("a piece of a page the file no longer has: %v, expected mmap.ErrShrank", err)
	}
	if _, err := s.Write([]byte("more")); !errors.Is(err, mmap.ErrShrank) {
		t.Fatalf("a write after the error: %v, expected the error again", err)
	}
}

// A write to a pipe whose reader went away is the error os.File's Write
// gives (what main recognises to die of SIGPIPE): a *fs.PathError naming
// the file, with EPIPE.
func TestGatherWriterReaderGone(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	s := newSink(w, 1<<16)
	s.WriteAlias(bytes.Repeat([]byte("y"), 1000))
	err = s.Flush()
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe.Path != w.Name() || pe.Op != "write" || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("expected write %s: broken pipe as a *fs.PathError, found %#v", w.Name(), err)
	}
}

// JSON gives the same bytes through the gathering writer (an *os.File or
// an outfile.File output) as through a bufio.Writer.
func TestJSONToAFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.jsonl")
	if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 20000, Seed: 3, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	src := Source{Name: "t.jsonl", Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	var want bytes.Buffer
	if err := JSON(&want, src); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, "out.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := JSON(f, src); err != nil {
		t.Fatal(err)
	}
	of, err := outfile.Create(filepath.Join(dir, "o.json"), outfile.Options{Perm: 0o600})
	if err != nil {
		t.Fatal(err)
	}
	defer of.Abort()
	if err := JSON(of, src); err != nil {
		t.Fatal(err)
	}
	if err := of.Commit(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"out.json", "o.json"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("%s: %d bytes, expected the %d of a bufio.Writer (first difference at %d)", name, len(got), want.Len(), firstDiff(got, want.Bytes()))
		}
	}
}

// An export to a pipe (the gathering writer) whose tape is cut shorter
// while it is mapped ends with the shrink error naming the tape, whether
// the fault is met by the readers (SIGBUS) or by a writev of the
// mapping's pieces (EFAULT).
func TestJSONToAPipeCutWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if _, err := tape.WriteSynth(path, tape.SynthOptions{Messages: 60000, Seed: 5, Profile: tape.SynthRealistic}); err != nil {
		t.Fatal(err)
	}
	x, err := tape.OpenIndex(path)
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	drained := make(chan error)
	go func() {
		var b [4096]byte
		_, err := io.ReadFull(r, b[:]) // the export has begun writing
		if err == nil {
			err = os.Truncate(path, 0)
		}
		io.Copy(io.Discard, r)
		drained <- err
	}()
	src := Source{Name: path, Index: x, Open: func() (io.ReadCloser, error) { return os.Open(path) }}
	err = JSON(w, src)
	w.Close()
	if derr := <-drained; derr != nil {
		t.Fatal(derr)
	}
	if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) {
		t.Fatalf("expected an error naming %s and wrapping mmap.ErrShrank, found %v", path, err)
	}
}
