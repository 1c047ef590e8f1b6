//go:build unix

package importer

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// A log cut shorter once it is mapped (logrotate's copytruncate of an
// mcpsnoop log): the import ends with an error naming the file and
// wrapping mmap.ErrShrank, not a SIGBUS crash, whichever goroutine meets
// the fault: the caller's (the tail mapped first, to find the last
// newline), the reader's or a worker's (a window), serially or not.
func TestImportLogCutWhileMapped(t *testing.T) {
	defer func(w int64) { linesMapWindow = w }(linesMapWindow)
	linesMapWindow = 4 * int64(os.Getpagesize())
	for _, format := range []string{"mcpsnoop", "gh-aw"} {
		var data []byte
		if format == "mcpsnoop" {
			data = snoopReorderLog(3000, "")
		} else {
			data = ghawLogOf(3000, "")
		}
		for _, nth := range []int{1, 2, 3} { // the mapping after which the file is cut
			for _, workers := range []int{1, 4} {
				path := filepath.Join(t.TempDir(), "log.jsonl")
				if err := os.WriteFile(path, data, 0o600); err != nil {
					t.Fatal(err)
				}
				maps := 0
				afterMap = func() {
					if maps++; maps == nth {
						if err := os.Truncate(path, 0); err != nil {
							t.Error(err)
						}
					}
				}
				f, err := os.Open(path)
				if err != nil {
					t.Fatal(err)
				}
				var out bytes.Buffer
				_, err = Import(format, f, &out, Options{workers: workers, MaxLine: 2000})
				f.Close()
				afterMap = nil
				if maps < nth {
					t.Fatalf("%s: %d mappings, expected at least %d (the log cut after the %dth)", format, maps, nth, nth)
				}
				if !errors.Is(err, mmap.ErrShrank) || !strings.Contains(err.Error(), path) {
					t.Fatalf("%s cut after mapping %d, %d workers: expected an error naming %s and wrapping mmap.ErrShrank, found %v", format, nth, workers, path, err)
				}
			}
		}
	}
}
