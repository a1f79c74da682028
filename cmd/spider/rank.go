package main

// PLACEHOLDER owned by a helper: replace this whole file.

import (
	"context"
	"errors"
	"io"
)

func runRank(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("not built yet")
}
