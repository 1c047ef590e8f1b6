package importer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An input given as a file is read mapped in place: the tape (or the
// error, with its line) is the one the same bytes read as a stream give,
// from the file's offset on; its lines, read on every processor, give
// the first failing line's error.
func TestImportOTLPMapped(t *testing.T) {
	dir := t.TempDir()
	var inputs [][]byte
	for _, src := range []string{"../../testdata/sdk-everything-http.tape.jsonl", "../../testdata/ts-everything-task.tape.jsonl"} {
		for _, bodies := range []bool{true, false} {
			dst := filepath.Join(dir, "x.otlp")
			otlpExportWith(t, src, dst, bodies)
			b, err := os.ReadFile(dst)
			if err != nil {
				t.Fatal(err)
			}
			inputs = append(inputs, b)
		}
	}
	inputs = append(inputs, []byte(otherEmitter), []byte(otherEmitter+"\n\n"+`{"resourceSpans":`+"\n"), []byte("\n  \n"),
		[]byte(strings.Repeat(otherEmitter, 3)+"not json\n"+otherEmitter+`{"resourceSpans":`+"\n"+otherEmitter))
	for i, in := range inputs {
		for _, skip := range []int{0, 7} {
			path := filepath.Join(dir, "in.otlp")
			if err := os.WriteFile(path, append(bytes.Repeat([]byte("x"), skip), in...), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Seek(int64(skip), 0); err != nil {
				t.Fatal(err)
			}
			if _, _, release, ok := mappedInput(ctxReader{context.Background(), f}); !ok {
				t.Fatalf("input %d: a file was not mapped", i)
			} else {
				release()
			}
			var mapped, streamed bytes.Buffer
			res1, err1 := Import("otlp", f, &mapped, Options{})
			f.Close()
			res2, err2 := Import("otlp", bytes.NewReader(in), &streamed, Options{})
			if (err1 == nil) != (err2 == nil) || err1 != nil && err1.Error() != err2.Error() {
				t.Fatalf("input %d: mapped: %v, streamed: %v", i, err1, err2)
			}
			if !bytes.Equal(mapped.Bytes(), streamed.Bytes()) || res1.Messages != res2.Messages || res1.Skipped != res2.Skipped {
				t.Fatalf("input %d (offset %d): the mapped tape differs from the streamed one:\n%s\n---\n%s", i, skip, mapped.Bytes(), streamed.Bytes())
			}
			if err1 == nil && res1.Messages == 0 {
				t.Fatalf("input %d: nothing imported", i)
			}
		}
	}
}
