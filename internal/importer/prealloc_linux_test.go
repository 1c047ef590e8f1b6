package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestPreallocateFreesTheRest: the reserve is taken (the file's blocks
// cover it while the tape is written, its size what is written), and what
// the writes did not use is freed at the end, the size unchanged.
func TestPreallocateFreesTheRest(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	release := preallocate(f, 64<<20)
	data := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	st := fstat(t, f)
	if st.size != int64(len(data)) || st.blocks < 64<<20 {
		t.Fatalf("while written: expected size %d and at least %d bytes of blocks reserved, found size %d, %d bytes of blocks", len(data), 64<<20, st.size, st.blocks)
	}
	release()
	st = fstat(t, f)
	if st.size != int64(len(data)) || st.blocks > 2<<20 {
		t.Fatalf("after release: expected size %d and the reserve freed (at most 2 MiB of blocks), found size %d, %d bytes of blocks", len(data), st.size, st.blocks)
	}
}

// TestPreallocateOnlyEmptyFiles: a file that already holds bytes (a tape
// appended to, standard output redirected with >>) gets no reserve.
func TestPreallocateOnlyEmptyFiles(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "tape.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("{}\n"); err != nil {
		t.Fatal(err)
	}
	preallocate(f, 64<<20)()
	if st := fstat(t, f); st.size != 3 || st.blocks >= 64<<20 {
		t.Fatalf("expected size 3 and no reserve, found size %d, %d bytes of blocks", st.size, st.blocks)
	}
}

// TestImportToFileSameBytes: an import written to a file (preallocated
// from the input's size) holds the bytes an import to a buffer holds, and
// no blocks past them.
func TestImportToFileSameBytes(t *testing.T) {
	dir := t.TempDir()
	// an mcpsnoop log of 2 MiB and more, so that the reserve is taken
	var log strings.Builder
	for i := 0; log.Len() < 2<<20; i++ {
		log.WriteString(`{"session_id":"s","server_label":"srv","seq":1,"ts":"2025-01-01T00:00:00.123456Z","direction":"c2s","transport":"stdio","raw":{"jsonrpc":"2.0","method":"notifications/progress","params":{"n":"` + strings.Repeat("x", 200) + `"}}}` + "\n")
	}
	in := filepath.Join(dir, "log.jsonl")
	if err := os.WriteFile(in, []byte(log.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if _, err := Import("mcpsnoop", strings.NewReader(log.String()), &want, Options{}); err != nil {
		t.Fatal(err)
	}
	r, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w, err := os.Create(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := Import("mcpsnoop", r, w, Options{}); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(w.Name())
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("expected the file to hold the %d bytes imported to a buffer, found %d bytes that differ", want.Len(), len(got))
	}
	if st := fstat(t, w); st.blocks > st.size+64<<10 {
		t.Fatalf("expected no reserve left past the tape's %d bytes, found %d bytes of blocks", st.size, st.blocks)
	}
}

type fileSize struct{ size, blocks int64 }

func fstat(t *testing.T, f *os.File) fileSize {
	t.Helper()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	return fileSize{st.Size(), blocksOf(st)}
}

// blocksOf is the bytes of blocks the file system gives st's file.
func blocksOf(st os.FileInfo) int64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return s.Blocks * 512
	}
	return 0
}
