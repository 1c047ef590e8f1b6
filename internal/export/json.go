// Package export writes a tape in the formats other tools read: JSON for
// scripts (json.go), a self-contained HTML page (html.go), OpenTelemetry
// traces (otlp.go) and HAR (har.go). Each reads the tape in one pass and
// writes as it goes, so memory stays flat in the tape's length.
package export

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

// Source is a tape to export: its index (pairing, stats, warnings) and a
// way to read it from the start.
type Source struct {
	Name   string
	Index  *tape.Index
	Open   func() (io.ReadCloser, error)
	Server string // "" for every server
}

// jsonCall is a call as the JSON export writes it.
type jsonCall struct {
	Request      int             `json:"request"`
	Response     int             `json:"response"`
	Line         int             `json:"line"`
	Server       string          `json:"server"`
	From         string          `json:"from"` // client or server: who sent the request
	Method       string          `json:"method"`
	Target       string          `json:"target,omitempty"`
	ID           json.RawMessage `json:"id"`
	Start        *time.Time      `json:"start,omitempty"`
	LatencyMs    *float64        `json:"latencyMs,omitempty"`
	Status       string          `json:"status"`
	ErrorCode    *int64          `json:"errorCode,omitempty"`
	ErrorMessage string          `json:"errorMessage,omitempty"`
	Params       json.RawMessage `json:"requestMessage"`
	Result       json.RawMessage `json:"responseMessage,omitempty"`
}

// JSON writes the tape's correlated calls, its stats and its warnings as
// one JSON document, the calls streamed in the order they completed:
//
//	{"tape": NAME, "calls": [CALL...], "stats": STATS, "warnings": [...]}
func JSON(w io.Writer, src Source) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	name, _ := json.Marshal(src.Name)
	fmt.Fprintf(bw, "{\"tape\":%s,\"calls\":[", name)
	r, err := src.Open()
	if err != nil {
		return err
	}
	defer r.Close()
	first := true
	enc := json.NewEncoder(bw)
	err = tape.ReadCalls(r, src.Index, src.Server, func(c tape.Call) error {
		if !first {
			bw.WriteByte(',')
		}
		first = false
		return enc.Encode(toJSON(c))
	})
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

func toJSON(c tape.Call) jsonCall {
	j := jsonCall{
		Request: c.Request, Response: c.Response, Line: c.Line, Server: c.Server,
		From: "client", Method: c.Method, Target: c.Target, ID: json.RawMessage(c.ID),
		Status: c.Status, ErrorMessage: c.ErrorMessage,
		Params: c.RequestRaw, Result: c.ResponseRaw,
	}
	if c.Dir == tape.DirRecv {
		j.From = "server"
	}
	if len(j.ID) == 0 {
		j.ID = json.RawMessage("null")
	}
	if !c.Start.IsZero() {
		s := c.Start
		j.Start = &s
	}
	if c.Response >= 0 && !c.Start.IsZero() && !c.End.IsZero() {
		ms := float64(c.Latency) / float64(time.Millisecond)
		j.LatencyMs = &ms
	}
	if c.Status == "error" {
		code := c.ErrorCode
		j.ErrorCode = &code
	}
	return j
}
