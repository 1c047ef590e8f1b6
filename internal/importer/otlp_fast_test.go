package importer

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// strEnd ends a string where jsonscan.StringEnd does, escapes anywhere in
// it (past the first eight bytes, after another escape, at its end).
func TestStrEndAgrees(t *testing.T) {
	cases := []string{
		`""`, `"a"`, `"abcdefgh"`, `"abcdefghijklmnopq"`, `"\""`, `"abcdefgh\"ijklmnop\\qrstuvwx"`,
		`"\u00e9\ud83d\ude00 and more text after it"`, `"\u00g9"`, `"\x"`, `"abc\`, `"abc`, `"\u12"`, `"\u1234`,
		"\"tab\there\"", "\"abcdefghijk\x1fl\"", `"` + strings.Repeat(`x\"`, 40) + `"`, `"é€😀 bytes\xff\xfe"` + "\"",
		`"abcdefgh\/\b\f\n\r\t\u0041xyz" trailing`, `"x\"`,
	}
	for _, c := range cases {
		for _, pre := range []string{"", " :", "0123456"} {
			b := []byte(pre + c)
			if got, want := strEnd(b, len(pre)), jsonscan.StringEnd(b, len(pre)); got != want {
				t.Errorf("strEnd(%q) = %d, jsonscan.StringEnd %d", b, got, want)
			}
		}
	}
}

func FuzzStrEnd(f *testing.F) {
	f.Add([]byte(`"abcdefgh\"ijklmnop\\qrstuvwx\u00e9"`))
	f.Add([]byte("\"a\x01\""))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) == 0 || b[0] != '"' {
			b = append([]byte{'"'}, b...)
		}
		if got, want := strEnd(b, 0), jsonscan.StringEnd(b, 0); got != want {
			t.Fatalf("strEnd(%q) = %d, jsonscan.StringEnd %d", b, got, want)
		}
	})
}

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
