package record_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/tapedeck/tapedeck/record"
	"github.com/tapedeck/tapedeck/tape"
)

// A shim driven in-process: the client's stream goes in, the server's
// answer comes out unchanged, and the tape holds both with lifecycle records.
func ExampleStdio_Run() {
	var tp bytes.Buffer
	shim := &record.Stdio{
		Command: "sh",
		Args:    []string{"-c", `read req; echo '{"jsonrpc":"2.0","id":1,"result":{}}'`},
		Tape:    &tp,
		Server:  "demo",
	}
	client := strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}` + "\n")
	status, err := shim.Run(context.Background(), client, os.Stdout, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(status)
	r := tape.NewReader(&tp)
	for {
		e, err := r.Next()
		if err != nil {
			break
		}
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s %s %s %s", e.Dir, e.Kind, e.Method, e.ID)))
	}
	// Output:
	// {"jsonrpc":"2.0","id":1,"result":{}}
	// exit status 0
	// lifecycle lifecycle $transport/start
	// send request ping 1
	// recv response  1
	// lifecycle lifecycle $transport/close
}
