package importer

import (
	"errors"
	"io"

	"github.com/tapedeck/tapedeck/tape"
)

// AgentVCR is not written yet.
func AgentVCR(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	return Result{}, errors.New("not yet")
}
