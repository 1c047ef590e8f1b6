// Package jsonrpc builds and frames JSON-RPC 2.0 messages without
// re-encoding them: an error answer is written around the id's bytes as
// they came, an id is replaced by splicing the new one into the message
// (every other byte kept), and lines are read with one limit. The serving
// edges (package replay) and the clients of live servers (package
// upstream) share it, so neither uses the other's private helpers.
package jsonrpc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unsafe"

	"github.com/tidwall/gjson"
)

// CodeInvalidRequest is JSON-RPC's "invalid request" error code.
const CodeInvalidRequest = -32600

// ErrorResponse is a JSON-RPC error answer to id (its JSON text, kept as
// given: 5, "abc", null), with code, msg and, when not empty, data (JSON
// text).
func ErrorResponse(id []byte, code int, msg string, data []byte) []byte {
	b := []byte(`{"jsonrpc":"2.0","id":`)
	b = append(b, id...)
	b = append(b, `,"error":{"code":`...)
	b = strconv.AppendInt(b, int64(code), 10)
	b = append(b, `,"message":`...)
	m, _ := json.Marshal(msg)
	b = append(b, m...)
	if len(data) > 0 {
		b = append(b, `,"data":`...)
		b = append(b, data...)
	}
	return append(b, "}}"...)
}

// SpliceID returns msg with its top-level id replaced by id (JSON text),
// every other byte as it was; msg itself when it has no id.
func SpliceID(msg, id []byte) []byte { return Splice(msg, "id", id) }

// Splice replaces the JSON value at path (gjson syntax) in msg with v,
// leaving every other byte as it was; msg is returned as it is when path
// is absent.
func Splice(msg []byte, path string, v []byte) []byte {
	r := gjson.Get(unsafeString(msg), path)
	if !r.Exists() || r.Index <= 0 {
		return msg
	}
	out := make([]byte, 0, len(msg)-len(r.Raw)+len(v))
	out = append(out, msg[:r.Index]...)
	out = append(out, v...)
	return append(out, msg[r.Index+len(r.Raw):]...)
}

// unsafeString views b as a string for gjson, without a copy. Only for
// reading: nothing returned may keep a string made from it.
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }

// MaxLine is the longest line a stdio peer's messages are read in (a
// client's, or a live server's): a longer one is skipped to its end and
// refused, instead of growing a buffer without bound. It is the HTTP
// edges' default body limit too.
const MaxLine = 64 << 20

// LineTooLong is the answer to a line over limit bytes: "invalid request",
// id null (its id was never read); who names the answering program in the
// message ("tapedeck replay").
func LineTooLong(who string, limit int) []byte {
	return ErrorResponse([]byte("null"), CodeInvalidRequest, fmt.Sprintf("%s: a line longer than %d bytes is over the limit: it was skipped", who, limit), nil)
}

// ReadLines calls line with each line of r that is not blank, its newline
// included, until r ends or line returns an error; each line is a slice of
// its own, which the callee may keep. A line longer than limit bytes (0:
// MaxLine) is skipped to its end, and tooLong called instead. It returns
// nil at the end of r, else the read's error or a callback's.
func ReadLines(r io.Reader, limit int, line func([]byte) error, tooLong func() error) error {
	if limit <= 0 {
		limit = MaxLine
	}
	br := bufio.NewReaderSize(r, 64<<10) // r itself when it is a bufio.Reader that large
	var buf []byte
	skipping := false
	for {
		chunk, err := br.ReadSlice('\n')
		if !skipping {
			buf = append(buf, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			if !skipping && len(buf) > limit {
				skipping, buf = true, nil
				if terr := tooLong(); terr != nil {
					return terr
				}
			}
			continue
		}
		switch {
		case skipping:
		case len(buf) > limit:
			if terr := tooLong(); terr != nil {
				return terr
			}
		case len(bytes.TrimSpace(buf)) > 0:
			if lerr := line(buf); lerr != nil {
				return lerr
			}
		}
		skipping, buf = false, nil
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
