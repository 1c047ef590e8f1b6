package main

import (
	"context"
	"errors"
)

func runRecordHTTP(ctx context.Context, s streams, o *recordOptions) error {
	return errors.New("record: --upstream is not implemented yet")
}
