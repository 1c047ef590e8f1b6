//go:build !unix

package importer

import (
	"errors"
	"os"
)

func mapFile(*os.File, int64) ([]byte, func(), error) { return nil, nil, errors.ErrUnsupported }
