package importer

import (
	"errors"
	"io"

	"github.com/tapedeck/tapedeck/tape"
)

// HAR is not written yet.
func HAR(r io.Reader, w *tape.Writer, o Options) (Result, error) {
	return Result{}, errors.New("not yet")
}
