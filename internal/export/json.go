// Package export writes a tape in the formats other tools read: JSON for
// scripts (json.go), a self-contained HTML page (html.go), OpenTelemetry
// traces (otlp.go) and HAR (har.go). Each reads the tape in one pass and
// writes as it goes, so memory stays flat in the tape's length.
package export

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/tapedeck/tapedeck/tape"
	"github.com/tapedeck/tapedeck/tape/jsonscan"
)

// Source is a tape to export: its index (pairing, stats, warnings) and a
// way to read it from the start.
type Source struct {
	Name   string
	Index  *tape.Index
	Open   func() (io.ReadCloser, error)
	Server string // "" for every server
}

// JSON writes the tape's correlated calls, its stats and its warnings as
// one JSON document, the calls streamed in the order they completed:
//
//	{"tape": NAME, "calls": [CALL...], "stats": STATS, "warnings": [...]}
func JSON(w io.Writer, src Source) error {
	bw := newSink(w, 1<<16)
	name, _ := json.Marshal(src.Name)
	fmt.Fprintf(bw, "{\"tape\":%s,\"calls\":[", name)
	r, err := src.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	first := true
	enc := json.NewEncoder(bw)
	var buf []byte
	err = readCalls(r, src.Index, src.Server, tape.CallOptions{Alias: true}, func(c tape.Call) error {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		var err error
		buf, err = writeCall(bw, buf[:0], c)
		return err
	}, bw.Flush) // the messages written from the mapping go out before it goes
	if err != nil {
		return err
	}
	bw.WriteString("],\"stats\":")
	if err := enc.Encode(tape.ComputeStats(src.Index, src.Server)); err != nil {
		return err
	}
	bw.WriteString(",\"warnings\":[")
	for i, wn := range src.Index.Warnings() {
		if i > 0 {
			bw.WriteByte(',')
		}
		if err := enc.Encode(struct {
			Line    int    `json:"line"`
			Message string `json:"message"`
		}{wn.Line, wn.Error()}); err != nil {
			return err
		}
	}
	bw.WriteString("]}\n")
	return bw.Flush()
}

// writeCall writes a call's JSON to w by hand (the export writes hundreds
// of thousands of them, and the messages are JSON already): its fields
// built in b, returned for reuse, and its messages written from the
// tape's mapping when they are there (tape.CallOptions.Alias), else
// appended to b.
func writeCall(w sink, b []byte, c tape.Call) ([]byte, error) {
	str := func(b []byte, k, v string) []byte {
		b = append(b, ',', '"')
		b = append(b, k...)
		b = append(b, '"', ':')
		return appendString(b, v)
	}
	b = append(b, `{"request":`...)
	b = strconv.AppendInt(b, int64(c.Request), 10)
	b = append(b, `,"response":`...)
	b = strconv.AppendInt(b, int64(c.Response), 10)
	b = append(b, `,"line":`...)
	b = strconv.AppendInt(b, int64(c.Line), 10)
	b = str(b, "server", c.Server)
	from := "client"
	if c.Dir == tape.DirRecv {
		from = "server"
	}
	b = str(b, "from", from)
	b = str(b, "method", c.Method)
	if c.Target != "" {
		b = str(b, "target", c.Target)
	}
	b = append(b, `,"id":`...)
	if c.ID == "" {
		b = append(b, "null"...)
	} else {
		b = append(b, c.ID...)
	}
	if !c.Start.IsZero() {
		b = append(b, `,"start":"`...)
		b = c.Start.AppendFormat(b, time.RFC3339Nano)
		b = append(b, '"')
	}
	if c.Response >= 0 && !c.Start.IsZero() && !c.End.IsZero() {
		b = append(b, `,"latencyMs":`...)
		b = strconv.AppendFloat(b, float64(c.Latency)/float64(time.Millisecond), 'f', -1, 64)
	}
	b = str(b, "status", c.Status)
	if c.Status == "error" {
		b = append(b, `,"errorCode":`...)
		b = strconv.AppendInt(b, c.ErrorCode, 10)
	}
	if c.ErrorMessage != "" {
		b = str(b, "errorMessage", c.ErrorMessage)
	}
	b = append(b, `,"requestMessage":`...)
	b = writeMessage(w, b, c.RequestRaw, c.RequestTail)
	if c.ResponseRaw != nil {
		b = append(b, `,"responseMessage":`...)
		b = writeMessage(w, b, c.ResponseRaw, c.ResponseTail)
	}
	b = append(b, '}', '\n')
	_, err := w.Write(b) // the first error of any write before it too: bufio keeps it
	return b, err
}

// writeMessage writes b and then a call's message, valid JSON, from head
// and tail as they are when it was read with tape.CallOptions.Alias (tail
// not nil), returning b emptied; else it appends it to b (appendRaw).
func writeMessage(w sink, b, head, tail []byte) []byte {
	if tail == nil {
		return appendRaw(b, head)
	}
	w.Write(b)
	w.WriteAlias(head) // the messages are most of the bytes an export writes
	w.WriteAlias(tail)
	return b[:0]
}

// appendString appends v quoted as encoding/json's Marshal quotes it (< >
// & escaped).
func appendString(b []byte, v string) []byte {
	return jsonscan.AppendQuoted(b, v, true)
}

// appendRaw appends a message that is JSON already, its bytes copied as
// they are (checked by jsonscan.Valid, not decoded); one that is not (a damaged
// line) goes in as a string.
func appendRaw(b, raw []byte) []byte {
	if jsonscan.Valid(raw) {
		return append(b, raw...)
	}
	return jsonscan.AppendQuoted(b, raw, true)
}
