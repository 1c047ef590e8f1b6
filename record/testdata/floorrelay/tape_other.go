//go:build !linux

package main

import (
	"errors"
	"os"
)

func openTape(path, mode string) (tapeFile, error) {
	switch mode {
	case "chunk", "line", "small", "pipeline":
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, err
		}
		return &appendFile{f: f}, nil
	}
	return nil, errors.New("mode " + mode + " needs Linux")
}
