package vcr_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/tapedeck/tapedeck/vcr"
)

// A client's test against a tape: the first run records through the real
// transport, the next replay the tape in process, with no server. (In a
// test, vcr.NewT(t, path, real) does the same in one line and fails the
// test on a divergence.)
func Example() {
	dir, _ := os.MkdirTemp("", "vcr-example-")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "echo.tape.jsonl")

	// The real server: here an in-memory go-sdk server.
	real := func() mcp.Transport {
		s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
		mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, in struct {
			Message string `json:"message"`
		}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "Echo: " + in.Message}}}, nil, nil
		})
		ct, st := mcp.NewInMemoryTransports()
		go s.Run(context.Background(), st)
		return ct
	}
	for run := 1; run <= 2; run++ {
		r, err := vcr.New(path, real, vcr.Options{})
		if err != nil {
			fmt.Println(err)
			return
		}
		client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
		cs, err := client.Connect(context.Background(), r, nil)
		if err != nil {
			fmt.Println(err)
			return
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"message": "hi"}})
		if err != nil {
			fmt.Println(err)
			return
		}
		cs.Close()
		fmt.Printf("run %d (recording %v): %s\n", run, r.Recording(), res.Content[0].(*mcp.TextContent).Text)
		if err := r.Stop(); err != nil {
			fmt.Println(err)
		}
	}
	// Output:
	// run 1 (recording true): Echo: hi
	// run 2 (recording false): Echo: hi
}
