package main

// PLACEHOLDER owned by the layered-crawl helper: replace this whole file.

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"

	"github.com/spider-crawler/spider/internal/crawl"
)

type layeredOptions struct{}

func layeredFlags(fs *flag.FlagSet) *layeredOptions { return &layeredOptions{} }

func runLayered(ctx context.Context, cfg crawl.Config, lo *layeredOptions, rf redisFlags, quiet bool, logger *slog.Logger, stdout io.Writer) error {
	return errors.New("layered crawl not built yet")
}
