package importer

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// BenchmarkTapeWriteSizes measures the CPU of writing a new 250 MB file on
// this disk the way an import writes its tape (bytes copied into a buffer,
// the buffer handed to write(2) when full) with different buffer sizes, a
// fallocate of the size first, a buffer reused or fresh for each write, and
// a file truncated (what the import benchmarks do to their old output)
// instead of new. It reports cpu-ms (user+system of the process, rusage)
// an operation; the file is removed outside the timer.
//
//	go test ./internal/importer -run '^$' -bench TapeWriteSizes -benchtime 3x
func BenchmarkTapeWriteSizes(b *testing.B) {
	const total = 250 << 20
	src := make([]byte, 4<<20)
	for i := range src {
		src[i] = byte('a' + i%26)
		if i%2500 == 2499 {
			src[i] = '\n'
		}
	}
	cases := []struct {
		name      string
		buf       int
		fallocate bool
		fresh     bool
		truncate  bool
		keep      int // fallocate FALLOC_FL_KEEP_SIZE of keep/100 of the size, truncated at the end
	}{
		{"1MiB", 1 << 20, false, false, false, 0},
		{"256KiB", 256 << 10, false, false, false, 0},
		{"64KiB", 64 << 10, false, false, false, 0},
		{"1MiB-fallocate", 1 << 20, true, false, false, 0},
		{"256KiB-fallocate", 256 << 10, true, false, false, 0},
		{"1MiB-fresh", 1 << 20, false, true, false, 0},
		{"256KiB-fresh", 256 << 10, false, true, false, 0},
		{"1MiB-truncate", 1 << 20, false, false, true, 0},
		{"1MiB-keepsize100", 1 << 20, false, false, false, 100},
		{"1MiB-keepsize130", 1 << 20, false, false, false, 130},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "out")
			var cpu time.Duration
			for b.Loop() {
				b.StopTimer()
				if c.truncate {
					// an old file of the same size, as the benchmarks' second import finds
					os.Remove(path)
					writeWith(b, path, src, total, 1<<20, false, false, false, 0)
				} else {
					os.Remove(path)
				}
				c0 := rusageCPU()
				b.StartTimer()
				writeWith(b, path, src, total, c.buf, c.fallocate, c.fresh, c.truncate, c.keep)
				b.StopTimer()
				cpu += rusageCPU() - c0
				b.StartTimer()
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
		})
	}
}

// writeWith writes total bytes of src (round and round) to path through
// a buffer of size n.
func writeWith(b *testing.B, path string, src []byte, total, n int, fallocate, fresh, truncate bool, keep int) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if truncate {
		flags = os.O_WRONLY | os.O_CREATE | os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o644)
	if err != nil {
		b.Fatal(err)
	}
	if fallocate {
		if err := syscall.Fallocate(int(f.Fd()), 0, 0, int64(total)); err != nil {
			b.Fatal(err)
		}
	}
	if keep > 0 {
		if err := syscall.Fallocate(int(f.Fd()), 1, 0, int64(total)*int64(keep)/100); err != nil {
			b.Fatal(err)
		}
	}
	buf := make([]byte, 0, n)
	s := 0
	for done := 0; done < total; {
		if fresh && len(buf) == 0 {
			buf = make([]byte, 0, n)
		}
		// copy in record-sized pieces, as the encoder appends records
		k := min(2500, cap(buf)-len(buf), total-done-len(buf))
		if s+k > len(src) {
			s = 0
		}
		buf = append(buf, src[s:s+k]...)
		s += k
		if len(buf) == cap(buf) || done+len(buf) == total {
			if _, err := f.Write(buf); err != nil {
				b.Fatal(err)
			}
			done += len(buf)
			buf = buf[:0]
		}
	}
	if keep > 0 {
		if err := f.Truncate(int64(total)); err != nil {
			b.Fatal(err)
		}
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}
