//go:build !unix

package mmap

import (
	"errors"
	"os"
)

func mapRange(*os.File, int64, int64, Advice) ([]byte, func() error, error) {
	return nil, nil, errors.ErrUnsupported
}
