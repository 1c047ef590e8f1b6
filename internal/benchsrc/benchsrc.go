// Package benchsrc writes the benchmark inputs of tapedeck's importers:
// the messages of a tape (the synthetic benchmark tapes of
// tape.BenchProfiles) in other tools' formats, as those tools write them.
// The importer's benchmarks and bench/ratios read them.
package benchsrc

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Formats are the formats Write writes.
var Formats = []string{"mcpsnoop", "gh-aw", "inspector"}

// Write writes the wire messages of the tape at src to dst in format: an
// mcpsnoop session log (one envelope a line, nanosecond times), a gh-aw
// gateway log (rpc-messages.jsonl) or an MCP Inspector history export.
func Write(format, src, dst string) error {
	var each func(w *bufio.Writer) error
	switch format {
	case "mcpsnoop":
		each = func(w *bufio.Writer) error { return snoopLog(w, src) }
	case "gh-aw":
		each = func(w *bufio.Writer) error { return ghawLog(w, src) }
	case "inspector":
		each = func(w *bufio.Writer) error { return inspectorExport(w, src) }
	default:
		return fmt.Errorf("benchsrc: unknown format %q: expected one of %v", format, Formats)
	}
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	err = each(w)
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// eachWire calls f with each wire record of the tape at src and its
// 1-based place.
func eachWire(src string, f func(seq int, e tape.Entry)) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	rd := tape.NewReader(in)
	for seq := 1; ; seq++ {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if e.IsWire() {
			f(seq, e)
		}
	}
}

func snoopLog(w *bufio.Writer, src string) error {
	var b []byte
	return eachWire(src, func(seq int, e tape.Entry) {
		dir := "c2s"
		if e.Dir == tape.DirRecv {
			dir = "s2c"
		}
		b = append(b[:0], `{"session_id":"s1","server_label":"`...)
		b = append(b, e.Server...)
		b = append(b, `","seq":`...)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `,"ts":"`...)
		b = e.Time.Add(time.Duration(seq%1000)*time.Microsecond).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","direction":"`...)
		b = append(b, dir...)
		b = append(b, `","transport":"stdio","raw":`...)
		b = append(b, tape.StripMeta(e.Raw)...)
		b = append(b, "}\n"...)
		w.Write(b)
	})
}

func ghawLog(w *bufio.Writer, src string) error {
	var b []byte
	return eachWire(src, func(seq int, e tape.Entry) {
		dir, typ := "OUT", "REQUEST"
		if e.Dir == tape.DirRecv {
			dir = "IN"
		}
		if e.Kind == tape.KindResponse {
			typ = "RESPONSE"
		}
		b = append(b[:0], `{"timestamp":"`...)
		b = e.Time.Add(time.Duration(seq%1000)*time.Microsecond).AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","direction":"`...)
		b = append(b, dir...)
		b = append(b, `","type":"`...)
		b = append(b, typ...)
		b = append(b, `","server_id":"`...)
		b = append(b, e.Server...)
		b = append(b, `","payload":`...)
		b = append(b, tape.StripMeta(e.Raw)...)
		b = append(b, "}\n"...)
		w.Write(b)
	})
}

func inspectorExport(w *bufio.Writer, src string) error {
	w.WriteString("[")
	var b []byte
	first := true
	err := eachWire(src, func(seq int, e tape.Entry) {
		dir, origin := "request", "client"
		switch e.Kind {
		case tape.KindResponse:
			dir = "response"
		case tape.KindNotification:
			dir = "notification"
		}
		if e.Dir == tape.DirRecv {
			origin = "server"
		}
		b = b[:0]
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, "\n  {\"id\":\"e"...)
		b = strconv.AppendInt(b, int64(seq), 10)
		b = append(b, `","timestamp":"`...)
		b = e.Time.UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		b = append(b, `","direction":"`...)
		b = append(b, dir...)
		b = append(b, `","origin":"`...)
		b = append(b, origin...)
		b = append(b, `","message":`...)
		b = append(b, tape.StripMeta(e.Raw)...)
		b = append(b, '}')
		w.Write(b)
	})
	w.WriteString("\n]\n")
	return err
}
