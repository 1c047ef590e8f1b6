package tape_test

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tapedeck/tapedeck/tape"
)

func ExampleNewReader() {
	const recording = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo"},"_meta":{"dir":"send","server":"everything","ts":"2026-05-16T12:00:00.000Z"}}
{"jsonrpc":"2.0","id":1,"result":{"content":[]},"_meta":{"dir":"recv","server":"everything","ts":"2026-05-16T12:00:00.100Z"}}
Server listening on stdio
`
	r := tape.NewReader(strings.NewReader(recording))
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("line %d: %s dir=%q method=%q id=%s\n", e.Line, e.Kind, e.Dir, e.Method, e.ID)
	}
	for _, w := range r.Warnings() {
		fmt.Println("warning:", w)
	}
	// Output:
	// line 1: request dir="send" method="tools/call" id=1
	// line 2: response dir="recv" method="" id=1
	// line 3: invalid dir="" method="" id=
	// warning: line 3: malformed tape line: expected a JSON-RPC object or batch at column 1, found 'S'; kept as an invalid entry
}

func ExampleWriter_Write() {
	w := tape.NewWriter(os.Stdout)
	at := time.Date(2026, 5, 16, 12, 0, 0, 0, time.UTC)
	_ = w.Write([]byte(`{"jsonrpc":"2.0","id":1,"method":"ping"}`), tape.Meta{Dir: tape.DirSend, Server: "everything", Time: at})
	// Output:
	// {"jsonrpc":"2.0","id":1,"method":"ping","_meta":{"dir":"send","server":"everything","ts":"2026-05-16T12:00:00.000Z"}}
}

func ExampleIndex_Pair() {
	x, err := tape.OpenIndex("../testdata/mcporter-echo.tape.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer x.Close()
	for i := range x.Len() {
		e := x.Entry(i)
		if p := x.Pair(i); e.Kind == tape.KindRequest {
			fmt.Printf("%s answered by message %d after %v\n", e.Method, p.Partner, p.Latency)
		}
	}
	// Output:
	// initialize answered by message 2 after 210ms
	// tools/call answered by message 6 after 4ms
}
