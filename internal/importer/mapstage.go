package importer

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/tapedeck/tapedeck/tape/mmap"
)

// mapStage, when not nil, is called at the named points of an import
// reading a mapped input (the Inspector's "scan", where the segments'
// workers start, and "write"; OTLP's "lines" and "write"): a test's hook,
// which cuts the file there, after the bytes before that point were read.
var mapStage func(stage string)

// atStage calls mapStage, if any.
func atStage(stage string) {
	if mapStage != nil {
		mapStage(stage)
	}
}

// shrankIn names r's file (r as Import has it: the file, or a ctxReader
// of it) in err when err wraps mmap.ErrShrank; another error is returned
// as it is.
func shrankIn(r io.Reader, err error) error {
	if !errors.Is(err, mmap.ErrShrank) {
		return err
	}
	if c, isCtx := r.(ctxReader); isCtx {
		r = c.r
	}
	if f, ok := r.(*os.File); ok {
		return fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return err
}
