package importer

import (
	"errors"
	"io"

	"github.com/tapedeck/tapedeck/tape"
)

// MCPRecorder is not written yet.
func MCPRecorder(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	return Result{}, errors.New("not yet")
}
