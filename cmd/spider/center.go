package main

// PLACEHOLDER owned by the SPEC §0 protocol helper: replace this whole file.

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"

	"github.com/spider-crawler/spider/internal/crawl"
)

type mixedOptions struct{}

func mixedFlags(fs *flag.FlagSet) *mixedOptions { return &mixedOptions{} }

func runMixed(ctx context.Context, cfg crawl.Config, mo *mixedOptions, quiet bool, logger *slog.Logger, stdout io.Writer) error {
	return errors.New("mixed topology not built yet")
}

func runCenter(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return errors.New("center not built yet")
}
